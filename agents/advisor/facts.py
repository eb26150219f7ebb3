"""Facts: one configuration value, where it was stated and how much that statement counts.

Shared by the static extractor's readers (command line, configs, code) and its chooser.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RANK", "UNRESOLVED", "Fact", "as_int", "as_lr", "as_str", "effective", "parse_number"]


UNRESOLVED = re.compile(r"\$|\{\{|\$\{")

# precedence of a value's origin; "code" = a literal where training runs, "code_dict" = a config dict
# built in code, "derived" = computed by the code from other known values (what the program really uses)
RANK = {
    "readme": 0, "library_default": 1, "call_kwarg": 2, "argparse_default": 3, "dataclass_default": 3,
    "constant": 4, "code": 4, "config": 5, "code_dict": 5, "env": 6, "cli": 7, "derived": 8,
}


@dataclass(frozen=True)
class Fact:
    key: str  # dotted configuration key
    value: Any
    source: str  # repository file, '<command>', '<library default: ...>'
    snippet: str
    kind: str  # see RANK

    @property
    def rank(self) -> int:
        return RANK[self.kind]

    @property
    def leaf(self) -> str:
        return self.key.rsplit(".", 1)[-1].lower().replace("-", "_").lstrip("+~")


def effective(facts: list[Fact]) -> dict[str, Fact]:
    eff: dict[str, Fact] = {}
    for f in facts:  # later facts of equal precedence win (config chains are merged in order)
        cur = eff.get(f.key)
        if cur is None or f.rank >= cur.rank:
            eff[f.key] = f
    return eff


def parse_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        s = value.strip().lower().replace("_", "").replace(",", "")
        mult = 1.0
        if s.endswith("k") and s[:-1].replace(".", "", 1).isdigit():
            s, mult = s[:-1], 1000.0
        try:
            v = float(s) * mult
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def as_int(value: Any, minimum: int) -> int | None:
    v = parse_number(value)
    if v is None or v != int(v) or v < minimum:
        return None
    return int(v)


def as_lr(value: Any) -> float | None:
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]  # fairseq `lr: [0.0005]` (one rate per optimizer phase)
    v = parse_number(value)
    return v if v is not None and 0 < v < 100 else None


def as_str(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not s or UNRESOLVED.search(s) or s.lower() in ("none", "null", "auto", "???", ""):
        return None
    return s
