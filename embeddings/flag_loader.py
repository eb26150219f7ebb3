"""FlagEmbedding's `FlagModel` without the rest of the package: the same class, a third of the memory.

Why: `import FlagEmbedding` runs the package's `__init__`, which imports every model family it
ships (decoder-only embedders, rerankers, BGE-M3, fine-tuning helpers) and with them `peft`,
`datasets` and friends; and `transformers` imports `sklearn.metrics` (+ scipy, pandas) at import
time only for assisted generation's `roc_curve`. Measured on this project's venv (`/proc/self/status`
VmRSS, one process): `import FlagEmbedding` after torch/transformers +223 MB, `sklearn.metrics`
+158 MB, while the encoder SchedMate uses needs neither. `schedmate history ingest` on a 1 GB file
(bench/bench_history_ingest.py) went over its 500 MB budget on imports alone.

What this does, and why embeddings stay bit-identical: it imports the very module that defines
`FlagModel` (`FlagEmbedding.inference.embedder.encoder_only.base`, its class `BaseEmbedder`) with
the package folders above it registered but their `__init__` not yet run. Nothing in the model,
its tokenizer or its forward pass changes. Anyone in the process who later asks the package for
another name (`from FlagEmbedding import BGEM3FlagModel`) gets it: the first missing attribute runs
the real `__init__` (PEP 562 `__getattr__`). Likewise `roc_curve` in transformers' candidate
generator is a stand-in that imports sklearn on its first call, so assisted generation behaves as
before; and torch's compiler frontend (`torch._dynamo`, +28 MB), which transformers touches at
import time only to mark functions for `torch.compile`, is loaded when first used, the marks
replayed then (`_TorchStubs`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import sys
import threading
from collections.abc import Sequence
from importlib.abc import Loader
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["flag_model_class"]

_FLAG_MODEL_MODULE = "FlagEmbedding.inference.embedder.encoder_only.base"
_SHELLS = ("FlagEmbedding", "FlagEmbedding.inference", "FlagEmbedding.inference.embedder",
           "FlagEmbedding.inference.embedder.encoder_only")
_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def flag_model_class(*, distributed: bool = True) -> type[Any]:
    """FlagEmbedding's `FlagModel` (encoder-only `BaseEmbedder`), importing only what it needs.

    `distributed=False` (for a process that never runs tensor parallelism, such as `history
    ingest`): when this call is the one that imports transformers, transformers sees
    `torch.distributed.is_available()` false while it imports, as on a torch built without it, and
    so imports neither torch.distributed.tensor nor sympy (+42 MB RSS); its tensor-parallel
    loading is then off in this process. The model, its weights and its forward pass are the same."""
    with _LOCK:
        try:
            loaded = sys.modules.get(_FLAG_MODEL_MODULE)
            if loaded is None:
                _import_transformers_lean(distributed)
                for name in _SHELLS:
                    if name not in sys.modules:
                        _shell(name)
                loaded = importlib.import_module(_FLAG_MODEL_MODULE)
            cls: type[Any] = loaded.BaseEmbedder
            return cls
        except (ImportError, AttributeError) as exc:
            # Another FlagEmbedding or transformers layout than the pinned one: the same class
            # through the package's own import (its extras' memory included), never no embedder.
            log.warning("lean FlagModel load failed (%s); importing the whole FlagEmbedding package", exc)
            from FlagEmbedding import FlagModel

            full: type[Any] = FlagModel
            return full


def _shell(name: str) -> ModuleType:
    """Register package `name` (its `__path__`, so submodules import) without running its
    `__init__`; the first attribute a shell lacks completes them all (`_complete_shells`)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"{name} is not installed")
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str) -> Any:  # noqa: N807 -- PEP 562 module hook
        if attr.startswith("__") and attr != "__all__":  # `import *` asks for __all__
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        _complete_shells()
        if "__getattr__" in module.__dict__:  # this shell's own __init__ is still running
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        return getattr(module, attr)

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    return module


def _complete_shells() -> None:
    """Run the real `__init__` of every shell, deepest first: the order in which a plain
    `import FlagEmbedding` completes them (its modules import names from their parents)."""
    for name in reversed(_SHELLS):
        module = sys.modules.get(name)
        if module is None or module.__dict__.pop("__getattr__", None) is None:
            continue  # never a shell, or already completed (or completing)
        spec = module.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(module)


# (transformers' availability flag, the modules that read it once at import, the package and the
# names they import from it): loaded on first call instead
_DEFERRED: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    ("_sklearn_available", ("transformers.generation.candidate_generator",), "sklearn.metrics", "roc_curve"),
    ("_scipy_available", ("transformers.loss.loss_for_object_detection", "transformers.loss.loss_deformable_detr",
                          "transformers.loss.loss_grounding_dino", "transformers.loss.loss_rt_detr"),
     "scipy.optimize", "linear_sum_assignment"),
)


def _import_transformers_lean(distributed: bool = True) -> None:
    """Import the transformers modules that pull sklearn (+158 MB) and scipy.optimize (+44 MB) at
    import time with those imports deferred to their first call (see the module docstring), and
    transformers' model classes without torch's compiler and distributed tensors (`_TorchStubs`)."""
    import torch.distributed

    available = torch.distributed.is_available
    if not distributed and "transformers" not in sys.modules:
        torch.distributed.is_available = lambda: False  # read once, at import, by transformers' modules
    try:
        with _TorchStubs():
            _import_transformers_deferred()
    finally:
        torch.distributed.is_available = available


def _import_transformers_deferred() -> None:
    import transformers.utils.import_utils as import_utils

    for flag, modules, package, name in _DEFERRED:
        if all(m in sys.modules for m in modules) or package in sys.modules:
            continue
        available = getattr(import_utils, flag)
        setattr(import_utils, flag, False)  # read once, by each module's body
        try:
            loaded = [importlib.import_module(m) for m in modules]
        finally:
            setattr(import_utils, flag, available)
        if available:
            for module in loaded:
                setattr(module, name, _on_first_call(package, name))
    for models in ("transformers.modeling_utils", "transformers.generation.utils"):  # while the stubs stand in
        importlib.import_module(models)


def _on_first_call(package: str, name: str) -> Any:
    """A stand-in for `package.name` that imports it when first called."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(package), name)(*args, **kwargs)

    call.__name__ = name
    return call


class _TorchStubs:
    """A stand-in for `torch._dynamo` (the `torch.compile` frontend) while transformers imports.

    Why: transformers' model, generation and masking modules use it at import time only to mark
    functions for `torch.compile` (`disable`, `allow_in_graph`) and to import a mask helper of
    flex attention, and importing it loads torch's inductor and onnx: +28 MB RSS for an encoder's
    eager forward pass that never calls it. What stands in, so later users get what they would have:
    `disable` wraps a function whose first call applies the real decorator; `allow_in_graph` returns
    the function and registers it with the real torch._dynamo when that is first imported
    (`_ReplayOnImport`); the mask helper imports it on first call; any other name imports the real
    module at once. The stubs leave `sys.modules` when the block ends.
    (`torch.distributed.tensor`, +41 MB with sympy, is not deferred: transformers' tensor-parallel
    table builds its placements at import time.)
    """

    def __enter__(self) -> _TorchStubs:
        self.added: dict[str, ModuleType] = {}
        if "torch._dynamo" not in sys.modules:
            dynamo = self._add(_DYNAMO)
            dynamo.__dict__.update(disable=_disable_on_first_call, allow_in_graph=_ReplayOnImport.allow_in_graph,
                                   __getattr__=_real_dynamo_attr)
            hop = self._add(f"{_DYNAMO}._trace_wrapped_higher_order_op")
            hop.__dict__["TransformGetItemToIndex"] = _on_first_call(hop.__name__, "TransformGetItemToIndex")
        return self

    def _add(self, name: str) -> ModuleType:
        stub = ModuleType(name, "a stand-in while transformers imports (embeddings/flag_loader.py)")
        stub.__dict__[_STUB] = True
        self.added[name] = stub
        sys.modules[name] = stub  # a name in sys.modules is imported as is, its parents' __init__ not run
        return stub

    def __exit__(self, *exc: object) -> None:
        _drop_stubs()


_DYNAMO = "torch._dynamo"
_STUB = "__schedmate_stub__"


def _drop_stubs() -> dict[str, ModuleType]:
    """Take the torch._dynamo stubs out of `sys.modules` (the real modules stay); returns them."""
    dropped = {}
    for name in (_DYNAMO, f"{_DYNAMO}._trace_wrapped_higher_order_op"):
        module = sys.modules.get(name)
        if module is not None and _STUB in vars(module):
            dropped[name] = sys.modules.pop(name)
    return dropped


def _real_dynamo_attr(name: str) -> Any:
    """A name the stub does not stand in for: the real torch._dynamo's (imported now)."""
    if name.startswith("__"):
        raise AttributeError(f"{_DYNAMO!r} stand-in has no attribute {name!r}")
    dropped = _drop_stubs()
    try:
        return getattr(importlib.import_module(_DYNAMO), name)
    except BaseException:
        for stub_name, stub in dropped.items():
            sys.modules.setdefault(stub_name, stub)
        raise


def _disable_on_first_call(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """`torch._dynamo.disable`'s signature; the real decorator is applied when `fn` is first called,
    so the function behaves as the real wrapper does, under `torch.compile` too."""
    if fn is None:
        return lambda f: _disable_on_first_call(f, recursive, reason=reason)
    applied: list[Any] = []

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not applied:
            applied.append(importlib.import_module(_DYNAMO).disable(fn, recursive, reason=reason))
        return applied[0](*args, **kwargs)

    return call


class _ReplayOnImport:
    """Functions marked `allow_in_graph` before torch._dynamo was loaded, registered with it when
    it is: this meta-path finder watches for that import and leaves once it has seen it."""

    pending: list[Any] = []

    @classmethod
    def allow_in_graph(cls, fn: Any) -> Any:
        if not any(isinstance(f, cls) for f in sys.meta_path):
            sys.meta_path.insert(0, cls())
        cls.pending.append(fn)
        return fn

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != _DYNAMO:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ReplayLoader(spec.loader)
        return spec


class _ReplayLoader(Loader):
    """torch._dynamo's own loader, then `allow_in_graph` for the functions marked meanwhile."""

    def __init__(self, inner: Loader) -> None:
        self.inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        for fn in _ReplayOnImport.pending:
            module.allow_in_graph(fn)
        _ReplayOnImport.pending.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
