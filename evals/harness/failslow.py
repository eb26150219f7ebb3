"""Score fail-slow detection on a labelled episode set (`synthetic.failslow`) and on the real
progress logs of the development set (negatives), for the detector and the fixed-threshold
baseline ("step time > 1.2 x median of the last 100 readings").

Per slow episode the first alert at or after the onset line is the detection; alerts before it
are false positives over the episode's pre-onset hours; every alert on a healthy episode is a
false positive over its hours. Delay: steps (`iterations`) and seconds of simulated time from the
onset to the progress line that raised the alert, and progress events (logged iterations) read
since the onset. The target counts a detection "in time" when it came within 5 logged
iterations or 60 s. Rank accuracy: per-rank episodes detected whose alert names the slow rank;
job-wide accuracy: job-wide episodes with per-rank lines detected as job-wide.

The real dev-set excerpts are short (tens of lines); their "hours" are the progress lines read
times the labelled step time (a lower bound on the time they cover), so a false positive there
weighs a lot per hour. They are reported apart from the generated healthy logs.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from schedmate.agents.tracker.failslow import (
    FailSlowAlert,
    FailSlowConfig,
    FailSlowDetector,
    Observation,
    ThresholdBaseline,
    read_observation,
)
from schedmate.errors import BadInput, NotFound

__all__ = ["SYSTEMS", "run_failslow_eval", "score_episode", "summary_line"]

DEFAULT_DEVSET = Path(__file__).resolve().parents[1] / "devset" / "progress"
IN_TIME_EVENTS = 5
IN_TIME_SECONDS = 60.0


class Detector(Protocol):
    def feed_many(self, lines: list[str], start: int = 1) -> list[FailSlowAlert]: ...

    def feed_read(self, obs: Observation | None, kind: str) -> list[FailSlowAlert]: ...


def _run(make: Callable[[], Detector], parsed: list[tuple[Observation | None, str]]) -> list[FailSlowAlert]:
    det = make()
    out: list[FailSlowAlert] = []
    for obs, kind in parsed:
        out.extend(det.feed_read(obs, kind))
    return out


SYSTEMS: dict[str, Callable[[], Detector]] = {
    "detector": lambda: FailSlowDetector(FailSlowConfig()),
    "threshold-1.2x-median100": ThresholdBaseline,
}


@dataclass
class EpisodeScore:
    id: str
    kind: str
    factor: float | None
    scope: str | None
    fp: int
    fp_hours: float
    detected: bool = False
    delay_steps: int | None = None
    delay_events: int | None = None
    delay_s: float | None = None
    in_time: bool = False
    rank_right: bool | None = None
    jobwide_right: bool | None = None


def score_episode(label: dict[str, Any], alerts: list[FailSlowAlert]) -> EpisodeScore:
    """One episode's false positives, detection, delay and localisation (module docstring)."""
    if label["kind"] != "slow":
        return EpisodeScore(label["id"], "healthy", None, None, len(alerts), label["hours"])
    onset_line = label["onset_line"]
    pre = [a for a in alerts if a.line < onset_line]
    post = [a for a in alerts if a.line >= onset_line]
    sc = EpisodeScore(label["id"], "slow", label["factor"], label["scope"], len(pre), (label["onset_time_s"] or 0.0) / 3600)
    if not post:
        return sc
    a = post[0]
    after = label["after"]
    idx = next((i for i, (ln, _, _) in enumerate(after) if ln >= a.line), None)
    sc.detected = True
    if idx is not None:
        _, step, t = after[idx]
        sc.delay_events = idx + 1
        sc.delay_steps = step - label["onset_step"] + 1
        sc.delay_s = round(t - label["onset_time_s"], 3)
        sc.in_time = sc.delay_events <= IN_TIME_EVENTS or sc.delay_s <= IN_TIME_SECONDS
    if label["scope"] == "rank":
        sc.rank_right = a.scope in ("rank", "host") and a.rank == label["rank"]
    elif label["ranks"] >= 2:
        sc.jobwide_right = a.scope == "job"
    return sc


def _rate(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def _median(xs: list[float]) -> float | None:
    return round(float(statistics.median(xs)), 3) if xs else None


def _aggregate(scores: list[EpisodeScore]) -> dict[str, Any]:
    slow = [s for s in scores if s.kind == "slow"]
    det = [s for s in slow if s.detected]
    ge10 = [s for s in slow if (s.factor or 0) >= 1.10]
    fp = sum(s.fp for s in scores)
    hours = sum(s.fp_hours for s in scores)
    buckets = {}
    for name, lo, hi in (("5-10%", 1.0, 1.10), ("10-20%", 1.10, 1.20), ("20-50%", 1.20, 9.0)):
        b = [s for s in slow if lo <= (s.factor or 0) < hi]
        buckets[name] = {"episodes": len(b), "detection_rate": _rate(sum(s.detected for s in b), len(b)),
                         "in_time_rate": _rate(sum(s.in_time for s in b), len(b))}
    rank_eps = [s for s in det if s.rank_right is not None]
    job_eps = [s for s in det if s.jobwide_right is not None]
    return {
        "episodes": len(scores), "slow_episodes": len(slow), "healthy_episodes": len(scores) - len(slow),
        "detection_rate": _rate(len(det), len(slow)),
        "detection_rate_ge10": _rate(sum(s.detected for s in ge10), len(ge10)),
        "in_time_rate_ge10": _rate(sum(s.in_time for s in ge10), len(ge10)),
        "false_positives": fp, "healthy_hours": round(hours, 2),
        "false_positives_per_1000h": round(1000 * fp / hours, 3) if hours else None,
        "median_delay_iterations": _median([s.delay_steps for s in det if s.delay_steps is not None]),
        "median_delay_events": _median([s.delay_events for s in det if s.delay_events is not None]),
        "median_delay_seconds": _median([s.delay_s for s in det if s.delay_s is not None]),
        "rank_accuracy": _rate(sum(bool(s.rank_right) for s in rank_eps), len(rank_eps)),
        "rank_episodes_detected": len(rank_eps),
        "jobwide_accuracy": _rate(sum(bool(s.jobwide_right) for s in job_eps), len(job_eps)),
        "by_factor": buckets,
    }


def _devset(folder: Path, make: Callable[[], Detector]) -> dict[str, Any]:
    from schedmate.devset import DevSetError, load_progress_items

    try:
        items = load_progress_items(folder)
    except DevSetError as exc:
        return {"items": 0, "load_errors": [str(exc)]}
    fp, hours, fired = 0, 0.0, []
    for path, item in items:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        det = make()
        alerts = det.feed_many(lines)
        n_obs = sum(1 for ln in lines if any(ch.isdigit() for ch in ln))
        hours += n_obs * (item.step_time_s or 1.0) / 3600
        if alerts:
            fp += len(alerts)
            fired.append({"id": item.id, "alerts": len(alerts), "first": alerts[0].describe()})
    return {"items": len(items), "false_positives": fp, "hours_lower_bound": round(hours, 3),
            "false_positives_per_1000h": round(1000 * fp / hours, 1) if hours else None, "fired": fired}


_LABEL_KEYS = ("id", "kind", "hours", "file")
_SLOW_KEYS = ("onset_line", "factor", "scope", "onset_time_s", "after", "onset_step", "ranks")


def load_labels(data: Path) -> list[dict[str, Any]]:
    """The episode labels of `data`, each checked before any scoring: a bad set is one `BadInput`
    naming the file and line, never a KeyError half-way through the run."""
    path = data / "labels.jsonl"
    if not path.is_file():
        raise NotFound(f"{path}: no such file")
    labels = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            label = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(label, dict):
            raise BadInput(f"{path}:{n}: a label is a JSON object")
        needed = _LABEL_KEYS + (_SLOW_KEYS + (("rank",) if label.get("scope") == "rank" else ())
                                if label.get("kind") == "slow" else ())
        missing = [k for k in needed if k not in label]
        if missing:
            raise BadInput(f"{path}:{n}: missing {', '.join(missing)}")
        if not (data / str(label["file"])).is_file():
            raise NotFound(f"{path}:{n}: log {label['file']} not found under {data}")
        labels.append(label)
    return labels


def run_failslow_eval(data: Path, out: Path, *, devset: Path | None = DEFAULT_DEVSET,
                      systems: dict[str, Callable[[], Detector]] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Score every system on `data` (labels.jsonl + logs/) and the dev set; write out/report.json."""
    labels = load_labels(data)
    try:
        manifest = json.loads((data / "manifest.json").read_text()) if (data / "manifest.json").is_file() else {}
    except json.JSONDecodeError as exc:
        raise BadInput(f"{data / 'manifest.json'}: not JSON ({exc})") from None
    systems = systems or SYSTEMS
    per: dict[str, list[EpisodeScore]] = {name: [] for name in systems}
    t0 = time.perf_counter()
    lines_read = 0
    for i, lab in enumerate(labels):
        lines = (data / lab["file"]).read_text(encoding="utf-8").splitlines()
        lines_read += len(lines)
        parsed = [read_observation(line, i) for i, line in enumerate(lines, 1)]  # one parse, every system
        for name, make in systems.items():
            per[name].append(score_episode(lab, _run(make, parsed)))
        if progress is not None:
            progress(i + 1, len(labels))
    elapsed = time.perf_counter() - t0
    report: dict[str, Any] = {
        "data": str(data), "seed": manifest.get("seed"),
        "note": "detector parameters were chosen on the dev seed (synthetic.failslow.DEV_SEED); "
                "report only seeds other than it",
        "targets": {"in_time_rate_ge10": ">= 0.95 (within 5 logged iterations or 60 s)",
                    "false_positives_per_1000h": "<= 1", "rank_accuracy": ">= 0.90"},
        "systems": {name: _aggregate(scores) for name, scores in per.items()},
        "lines_per_s": round(lines_read / elapsed, 1) if elapsed else None,
    }
    if devset is not None and devset.is_dir():
        report["devset_negatives"] = {name: _devset(devset, make) for name, make in systems.items()}
    for name in systems:
        report[name] = {k: report["systems"][name][k] for k in
                        ("detection_rate", "false_positives_per_1000h", "median_delay_iterations",
                         "median_delay_seconds", "rank_accuracy")}
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    (out / "episodes.jsonl").write_text("".join(json.dumps({"system": n, **s.__dict__}) + "\n"
                                                for n, ss in per.items() for s in ss))
    report["summary_line"] = summary_line(report)
    return report


def summary_line(report: dict[str, Any]) -> str:
    parts = []
    for name, s in report["systems"].items():
        parts.append(f"{name}: detected {s['detection_rate']}, >=10% in time {s['in_time_rate_ge10']}, "
                     f"FP/1000h {s['false_positives_per_1000h']}, median delay {s['median_delay_iterations']} it / "
                     f"{s['median_delay_seconds']} s, rank acc {s['rank_accuracy']}")
    return f"fail-slow (seed {report.get('seed')}): " + "; ".join(parts)
