"""Mask variable fields and group log lines into templates, so each template is embedded once.

A training log of a million lines typically holds a few hundred templates: `iteration 100/ 1000 |
lm loss: 3.21` and `iteration 101/ 1000 | lm loss: 3.19` are the same event. Embedding costs
milliseconds per text while masking costs microseconds, so the classifier masks and mines only
lines it has not seen (by a digit-free key) and embeds only templates it has not seen.

Two miners share one small protocol:
- `ExactMiner`: the masked line *is* the template. Never merges lines whose words differ, so a
  template's meaning is exactly its text's meaning.
- `Drain3Miner`: drain3's fixed-depth parse tree (in memory, no persistence) on top of the same
  masking; additionally merges lines that differ in a few free-text tokens (host names,
  layer names), so it yields fewer templates, at the risk of merging lines that differ in a
  meaningful word. `bench/bench_classifier.py` reports both counts and speeds.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

# One alternation, tried left to right at each position, so the more specific shapes (timestamps,
# UUIDs, IPs) win over the generic number. The look-arounds keep `samples/sec` or `1e-4` whole;
# words ending in digits (`gpu-node-17`, `worker3`, also `fp16`) become <ID>, and a tqdm bar's
# fill (`████▌`) becomes <BAR> so a bar at 40% and at 90% is one template.
_MASK_PATTERNS: dict[str, str] = {
    "GLOG": r"[IWEF]\d{4}(?= \d)",  # glog/c10 header `W0501 12:30:01.123`: keep the level letter
    "TS": r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?",
    "UUID": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "IP": r"\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?",
    "HEX": r"0[xX][0-9a-fA-F]+|(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{6,}",
    "BAR": r"[█▉▊▋▌▍▎▏#= ]*[█▉▊▋▌▍▎▏#=][█▉▊▋▌▍▎▏#= ]*(?=\|)",  # tqdm bar body, between the pipes
    "PATH": r"(?:~|\.{1,2})?(?:/[\w.@+\-]+)+/?",
    "NUM": r"[-+]?\d+(?:\.\d+)*(?:[eE][-+]?\d+)?(?:[a-zA-Z%]{1,3})?",
    "ID": r"[A-Za-z][A-Za-z_\-]*\d[\w\-]*",
}
MASK_REGEX = re.compile(
    "|".join(rf"(?<![\w.])(?P<{name}>{pattern})(?!\w)" for name, pattern in _MASK_PATTERNS.items())
)
_REPLACEMENT = {name: f"<{name}>" for name in _MASK_PATTERNS}


def mask_variables(text: str) -> str:
    """Replace numbers, hex ids, paths, IPs, UUIDs and timestamps with `<KIND>` placeholders.

    Whitespace runs collapse to one space: Megatron pads numbers to a fixed width, so the run
    length varies with the digit count and would otherwise split one template into several.
    """
    return MASK_REGEX.sub(_replace, " ".join(text.split()))


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if kind == "GLOG":
        return match.group(0)[0] + "<NUM>"
    assert kind is not None  # every alternative of the pattern is a named group
    return _REPLACEMENT[kind]


@dataclass(frozen=True, slots=True)
class Template:
    """A mined template. `new` is True on the call that created it (the caller embeds it then)."""

    id: int
    text: str
    new: bool


class TemplateMiner(Protocol):
    """Assigns a stable template id to an already-masked line."""

    @property
    def name(self) -> str: ...

    def add(self, masked: str) -> Template: ...

    def __len__(self) -> int: ...


class ExactMiner:
    """The masked text is the template; ids are handed out in order of first sight.

    Bounded: past `max_templates` the least recently seen template is forgotten, and gets a
    fresh id if it comes back.
    """

    name = "exact"

    def __init__(self, max_templates: int = 100_000) -> None:
        self._ids: OrderedDict[str, int] = OrderedDict()
        self._next_id = 1
        self._max = max_templates

    def add(self, masked: str) -> Template:
        tid = self._ids.get(masked)
        if tid is not None:
            self._ids.move_to_end(masked)
            return Template(tid, masked, False)
        tid, self._next_id = self._next_id, self._next_id + 1
        self._ids[masked] = tid
        if len(self._ids) > self._max:
            self._ids.popitem(last=False)
        return Template(tid, masked, True)

    def __len__(self) -> int:
        return len(self._ids)


class Drain3Miner:
    """drain3's `TemplateMiner` in memory (no persistence handler, no config file read).

    Masking is done by `mask_variables` before the text reaches drain3, so both miners see the
    same input; drain3's own numeric-token parametrisation stays on. A cluster's template may gain
    wildcards later; its id stays, and `new` is only True when the cluster is created.
    """

    name = "drain3"

    def __init__(self, sim_th: float = 0.4, depth: int = 4, max_clusters: int | None = 100_000) -> None:
        from drain3 import TemplateMiner as _Drain3TemplateMiner
        from drain3.template_miner_config import TemplateMinerConfig

        config = TemplateMinerConfig()  # passing a config stops drain3 from reading ./drain3.ini
        config.drain_sim_th = sim_th
        config.drain_depth = depth
        config.drain_max_clusters = max_clusters
        config.masking_instructions = []
        config.profiling_enabled = False
        self._miner = _Drain3TemplateMiner(persistence_handler=None, config=config)

    def add(self, masked: str) -> Template:
        result = self._miner.add_log_message(masked)
        return Template(
            int(result["cluster_id"]), str(result["template_mined"]), result["change_type"] == "cluster_created"
        )

    def __len__(self) -> int:
        return len(self._miner.drain.clusters)


def make_miner(kind: str = "exact") -> TemplateMiner:
    """`exact` (default) or `drain3`."""
    if kind == "exact":
        return ExactMiner()
    if kind == "drain3":
        return Drain3Miner()
    raise ValueError(f"unknown template miner {kind!r}; expected 'exact' or 'drain3'")
