"""Facts: one configuration value, where it was stated and how much that statement counts.

Shared by the static extractor's readers (command line, configs, code) and its chooser.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ABSTAIN_BELOW", "CALIBRATION", "RANK", "TIERS", "UNRESOLVED", "Fact", "as_int", "as_lr", "as_str", "confidence",
           "effective", "evidence_tier", "parse_number"]


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


# ------------------------------------------------------------------------------------------ confidence

# how a field's value was found, coarse enough that every tier has dev-set counts behind it
TIERS = ("command", "script", "config", "derived", "code", "default", "library", "name", "public-size", "arith",
         "inferred")


def evidence_tier(field: str, kind: str, source: str) -> str:
    """The tier of a chosen value: a literal on the launch command (`command`), in a launch script or exported
    environment (`script`), in a configuration file or a constant (`config`), computed from other values
    (`derived`), a literal where training runs (`code`), a parser/dataclass default (`default`), a framework
    default (`library`), a model named somewhere else (`name`), model size from a public table (`public-size`) or
    from dimensions (`arith`), a task inferred from cues (`inferred`)."""
    if field == "model_size_b" and kind == "derived":
        if source == "<public model size>":
            return "public-size"
        return "name" if source == "<model name>" else "arith"
    if kind.startswith("name:") or kind in ("mention", "readme"):
        return "name"
    if kind == "inferred":
        return "inferred"
    if kind in ("cli", "env"):
        return "command" if source == "<command>" else "script"
    return {"config": "config", "code_dict": "config", "constant": "config", "derived": "derived", "code": "code",
            "call_kwarg": "code", "argparse_default": "default", "dataclass_default": "default",
            "library_default": "library"}.get(kind, "inferred")


# (right, scored) per field and tier on the advisor dev set (evals/devset/repos: jobs.jsonl + jobs-c.jsonl),
# written by `python -m schedmate.evals.harness.devset_advisor --calibrate`; a blind batch is never counted
CALIBRATION: dict[str, dict[str, tuple[int, int]]] = {'batch_size': {'code': (2, 4), 'command': (23, 23), 'config': (27, 28), 'default': (3, 3), 'script': (21, 21)},
 'dataset': {'code': (7, 7),
             'command': (11, 12),
             'config': (35, 37),
             'default': (4, 4),
             'name': (5, 5),
             'script': (17, 17)},
 'iteration_type': {'code': (2, 2),
                    'command': (31, 31),
                    'config': (21, 21),
                    'derived': (2, 2),
                    'script': (25, 26)},
 'iterations': {'code': (2, 2), 'command': (31, 31), 'config': (20, 21), 'derived': (2, 2), 'script': (25, 26)},
 'learning_rate': {'code': (2, 2),
                   'command': (19, 21),
                   'config': (26, 31),
                   'default': (3, 3),
                   'derived': (6, 6),
                   'script': (19, 19)},
 'model_name': {'code': (2, 3),
                'command': (16, 16),
                'config': (23, 23),
                'default': (1, 1),
                'name': (18, 22),
                'script': (17, 19)},
 'model_size_b': {'arith': (8, 8), 'name': (22, 22), 'public-size': (46, 47)},
 'num_workers': {'code': (2, 2),
                 'command': (7, 7),
                 'config': (25, 25),
                 'default': (11, 11),
                 'library': (8, 8),
                 'script': (17, 17)},
 'task_type': {'default': (3, 3), 'inferred': (77, 77), 'script': (3, 4)}}
# abstain (None) below this confidence: chosen on the dev set with leave-one-repository-out confidences as the
# highest threshold that keeps >= 95% of the answered fields (see `schedmate eval advisor`, devset_advisor.json)
ABSTAIN_BELOW = 0.0
_SMOOTH = 4.0  # pseudo-counts pulling a thin cell toward its tier, and a tier toward the whole dev set


def confidence(field: str, tier: str, table: dict[str, dict[str, tuple[int, int]]] | None = None) -> float:
    """P(value right | field, tier), smoothed hierarchically (field x tier -> tier over fields -> all)."""
    table = CALIBRATION if table is None else table
    r_all = sum(r for cells in table.values() for r, _ in cells.values())
    n_all = sum(n for cells in table.values() for _, n in cells.values())
    p_all = (r_all + 1.0) / (n_all + 2.0)
    r_t = sum(cells.get(tier, (0, 0))[0] for cells in table.values())
    n_t = sum(cells.get(tier, (0, 0))[1] for cells in table.values())
    p_tier = (r_t + _SMOOTH * p_all) / (n_t + _SMOOTH)
    r_f, n_f = table.get(field, {}).get(tier, (0, 0))
    return round((r_f + _SMOOTH * p_tier) / (n_f + _SMOOTH), 3)
