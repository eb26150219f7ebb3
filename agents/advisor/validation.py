"""Checking an LLM's proposed fingerprint against what it actually read, field by field.

A small model's answer is schema-valid but often wrong, so no proposed value is believed unless
it is *grounded*: it appears literally in the text the agent was shown (tool observations plus
the prompt's launch command), on a line that talks about that field:

* numbers (iterations, batch size, learning rate, workers): a numeric token in some line equals
  the value (`3e-4`, `3.0e-4`, `0.0003`, `40_000`, `40k` all count) and the line carries a field
  word (`batch`/`bs`, `lr`/`learning`, `worker`, an epoch word for epochs, a step word for steps);
* names (model, dataset): the value as written appears as a token, or a token the extractor's own
  vocabulary (`knowledge`) reads as the same canonical name ('Meta-Llama-3-8B' for 'llama-3-8b');
* task type: the task is named in the text, or one of its cues (`knowledge.TASK_CUES`) appears;
* model size: a `<number>B/M` token equal to it, or agreement with the static extractor.

`normalise_field` applies the core's generic normalisers and the extractor's own canonical forms
to one raw value (None when invalid).
"""

from __future__ import annotations

import re
from typing import Any

from schedmate.agents.advisor.knowledge import TASK_CUES, canonical_dataset, canonical_model
from schedmate.agents.advisor.static_extractor import parse_number
from schedmate.workload import normalize_dataset, normalize_iteration_type, normalize_task_type, parse_model_size_b

__all__ = ["CONTEXT", "grounded", "normalise_field", "values_equal"]

_NUM_TOKEN = re.compile(r"(?<![A-Za-z0-9_.])(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[kK]?(?![A-Za-z0-9_])")
CONTEXT: dict[str, re.Pattern[str]] = {
    "batch_size": re.compile(r"batch|\bbs\b|(?:^|\s)-b\b", re.I),
    "learning_rate": re.compile(r"\blr|learning|lr0\b|base_lr|\blr\b", re.I),
    "num_workers": re.compile(r"worker|(?:^|\s)-j\b", re.I),
    "epochs": re.compile(r"epoch", re.I),
    "steps": re.compile(r"step|iter|batches|updates", re.I),
}


_NAME_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/\-]*[A-Za-z0-9]")
_VALID_CONTEXT = re.compile(r"val|eval|dev\b|test", re.I)
_GENERIC = {
    "train", "training", "data", "dataset", "datasets", "model", "models", "default", "none", "json", "csv", "text",
    "imagefolder", "custom", "base", "config", "main", "net", "network", "local", "path", "dir", "root", "val",
    "test", "eval", "unknown", "string", "file", "repo", "src",
}


def normalise_field(field: str, raw: Any) -> Any:
    """The schema-normalised value of one field, or None when missing/invalid."""
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "null", "none", "unknown", "n/a")):
        return None
    try:
        if field == "model_name":
            return canonical_model(str(raw)) if str(raw).strip() else None
        if field in ("dataset", "valid_dataset"):
            return (canonical_dataset(str(raw)) or normalize_dataset(str(raw))) if str(raw).strip() else None
        if field == "task_type":
            return normalize_task_type(str(raw)) if str(raw).strip() else None
        if field == "iteration_type":
            return normalize_iteration_type(str(raw))
        if field == "model_size_b":
            v = parse_model_size_b(raw)
            return v if v is not None and v > 0 else None
        if field in ("iterations", "batch_size", "num_workers"):
            v = _to_float(raw)
            if v is None or v != int(v):
                return None
            lo = 0 if field == "num_workers" else 1
            return int(v) if v >= lo else None
        if field == "learning_rate":
            v = _to_float(raw)
            return v if v is not None and 0 < v < 100 else None
    except (ValueError, TypeError):
        return None
    return raw


def _to_float(raw: Any) -> float | None:
    """A number from an LLM answer or a literal, read as the static extractor reads it (`1_000`, `2k`)."""
    return parse_number(raw)


def values_equal(field: str, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if field == "learning_rate":
        return abs(float(a) - float(b)) <= 1e-9 * max(abs(float(b)), 1e-12)
    if field == "model_size_b":
        return abs(float(a) - float(b)) <= 0.1 * abs(float(b))
    return a == b


def _numbers_in(line: str) -> list[float]:
    out = []
    for tok in _NUM_TOKEN.findall(line):
        v = _to_float(tok)
        if v is not None:
            out.append(v)
    return out


def _line_with_number(value: float, text: str, context: re.Pattern[str] | None) -> str | None:
    for line in text.splitlines():
        if context is not None and not context.search(line):
            continue
        for v in _numbers_in(line):
            if v == value or (value != 0 and abs(v - value) <= 1e-9 * abs(value)):
                return line.strip()[:200]
    return None


def _token_present(needle: str, text_low: str) -> bool:
    needle = needle.strip().lower()
    if len(needle) < 2:
        return False
    return re.search(r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])", text_low) is not None


def grounded(field: str, raw: Any, value: Any, text: str, *, iteration_type: str | None = None,
             static_value: Any = None) -> str | None:
    """The evidence line/token when `value` (as proposed: `raw`) is grounded in `text`, else None."""
    if value is None:
        return None
    low = text.lower()
    if field in ("iterations", "batch_size", "num_workers", "learning_rate"):
        if field == "iterations":
            ctx = CONTEXT["epochs"] if iteration_type == "epochs" else CONTEXT["steps"]
        else:
            ctx = CONTEXT[field]
        return _line_with_number(float(value), text, ctx)
    if field == "iteration_type":
        return None  # checked jointly with iterations
    if field == "model_size_b":
        # a size written into a name ("Llama-3-8B", "gpt3-1.3b", "13B"): no space before the unit, so
        # file sizes in listings ("65 B", "1.2 kB") never count
        for m in re.finditer(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])", low):
            v = float(m.group(1)) * (1.0 if m.group(2) == "b" else 1e-3)
            if abs(v - float(value)) <= 0.1 * float(value):
                return m.group(0)
        if static_value is not None and values_equal(field, value, static_value):
            return "agrees with the static extractor"
        return None
    if field == "task_type":
        if _token_present(str(value).replace("-", " "), low.replace("-", " ").replace("_", " ")):
            return str(value)
        for rx, weight in TASK_CUES.get(str(value), ()):
            cue = re.search(rx, text)
            if cue and weight >= 2:
                return cue.group(0)
        return None
    if field in ("model_name", "dataset", "valid_dataset"):
        if str(value).lower() in _GENERIC or (isinstance(raw, str) and raw.strip().lower() in _GENERIC):
            return None
        canon = canonical_model if field == "model_name" else (lambda t: canonical_dataset(t) or normalize_dataset(t))
        cands = [str(raw)] if isinstance(raw, str) else []
        cands.append(str(value))
        for tok in set(_NAME_TOKEN.findall(text)):
            for part in (tok, tok.rsplit("/", 1)[-1]):
                if len(part) >= 2 and part.lower() not in _GENERIC and canon(part) == value:
                    cands.append(part)
        lines = [ln.lower() for ln in text.splitlines()]
        if field == "valid_dataset":  # a validation set must be named where validation is meant
            lines = [ln for ln in lines if _VALID_CONTEXT.search(ln)]
        for c in cands:
            for ln in lines:
                if _token_present(c, ln):
                    return c
        return None
    return None
