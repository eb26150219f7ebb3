"""Shared guard for test modules that need the embedded local LLM (llama.cpp + packaged GGUF)."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest

from schedmate.llm_local import DEFAULT_GGUF_PACKAGE


def skip_module_without_local_llm() -> None:
    """Skip the calling test module, with the reason, when the local model cannot start."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python not installed", allow_module_level=True)
    try:
        importlib.metadata.distribution(DEFAULT_GGUF_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"weights package {DEFAULT_GGUF_PACKAGE} not installed", allow_module_level=True)
