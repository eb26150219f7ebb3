"""The main job's report for people (`results/demo/report.html`), on the shared HTML layer.

Built from what the run saved (`report.json`, the experiments' per-job CSVs and plots), so it can
be rebuilt without rerunning: `write_main_html(Path("results/demo"))`. The verdict compares mean
JCT per job pair (same trace, same jobs, SchedMate's arm vs the reference) with a 95% bootstrap
interval over jobs: with one seed that interval covers job sampling only, and the report says so.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.htmlreport import (
    Figure,
    LogQuote,
    Metric,
    Report,
    Section,
    Steps,
    Table,
    Text,
    Verdict,
    image_data_uri,
    write_html,
    write_markdown,
)
from schedmate.htmlreport.model import Tone
from schedmate.htmlreport.plans import plan_steps

__all__ = ["Change", "jct_change", "main_report", "write_main_html"]

BASELINES = ("fifo", "qssf", "tiresias")  # case 3's non-oracle references


@dataclass(frozen=True)
class Change:
    """Relative change of mean JCT, new vs base (negative = faster), with a bootstrap interval."""

    base: str
    new: str
    change: float
    lo: float
    hi: float
    jobs: int

    @property
    def tone(self) -> Tone:
        return "good" if self.hi < 0 else "bad" if self.lo > 0 else "neutral"

    def text(self) -> str:
        return f"{_pct(self.change)} mean JCT (95% CI {_pct(self.lo)} to {_pct(self.hi)}, {self.jobs} jobs)"


def _pct(x: float) -> str:
    return f"{'+' if x > 0 else '−' if x < 0 else '±'}{abs(100 * x):.1f}%"


def jct_change(base: dict[str, float], new: dict[str, float], *, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float, int]:
    """Paired relative change of mean JCT over the jobs both runs finished, with a 95% percentile
    bootstrap over jobs (the same resampled jobs for both arms)."""
    ids = sorted(set(base) & set(new))
    if not ids:
        raise ValueError("no job in common")
    b = np.array([base[i] for i in ids])
    n = np.array([new[i] for i in ids])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(ids), size=(n_boot, len(ids)))
    boots = n[idx].mean(axis=1) / b[idx].mean(axis=1) - 1
    return float(n.mean() / b.mean() - 1), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5)), len(ids)


def _jobs_jct(path: Path) -> dict[str, float]:
    with path.open(newline="") as fh:
        return {r["job_id"]: float(r["jct"]) for r in csv.DictReader(fh) if r.get("jct") not in (None, "", "nan")}


def _arm_file(folder: Path, arm: str) -> Path:
    return folder / f"{arm.replace('+', '_')}.jobs.csv"


def _change(folder: Path | None, base: str, new: str) -> Change | None:
    if folder is None:
        return None
    fb, fn = _arm_file(folder, base), _arm_file(folder, new)
    if not (fb.is_file() and fn.is_file()):
        return None
    return Change(base, new, *jct_change(_jobs_jct(fb), _jobs_jct(fn)))


def _seed_folder(out: Path, case: str) -> Path | None:
    found = sorted((out / case).glob("*_seed*/")) if (out / case).is_dir() else []
    return found[0] if found else None


def _n1(line: Any) -> str:
    """A line number as a person looks it up (`report.json` numbers lines from 1, as the wire does)."""
    return "?" if line is None else f"{int(line):,}"


def _h(x: Any) -> str:
    return "–" if x is None else f"{float(x) / 3600:.2f} h"


def _arm_table(rows: Sequence[dict[str, Any]], ref: str, mine: Sequence[str], caption: str) -> Table:
    by = {r["arm"]: r for r in rows}
    ref_jct = (by.get(ref) or {}).get("mean_jct_mean")
    cols = ["arm", "mean JCT", f"vs {ref}", "mean wait", "p99 JCT", "makespan", "completed", "failed"]
    out: list[list[Any]] = []
    hl: set[int] = set()
    tones: dict[tuple[int, int], Tone] = {}
    for i, r in enumerate(rows):
        jct = r.get("mean_jct_mean")
        rel = None if not ref_jct or jct is None else jct / ref_jct - 1
        wait = r.get("mean_wait_mean", r.get("mean_queueing_mean"))
        out.append([f"`{r['arm']}`", _h(jct), "–" if rel is None or r["arm"] == ref else _pct(rel), _h(wait),
                    _h(r.get("p99_jct_mean")), _h(r.get("makespan_mean")), int(r.get("completed_mean") or 0),
                    int(r.get("failed_mean") or 0)])
        if r["arm"] in mine:
            hl.add(i)
        if rel is not None and r["arm"] != ref and abs(rel) >= 0.005:
            tones[(i, 2)] = "good" if rel < 0 else "bad"
    return Table(cols, out, caption=caption, highlight=frozenset(hl), tones=tones)


def _log_window(path: Path, line: int, before: int = 4, after: int = 3) -> list[tuple[int, str]]:
    """Lines around 1-based line `line`, numbered as an editor or `less -N` shows them."""
    if not path.is_file():
        return []
    lo, hi = max(0, line - 1 - before), line - 1 + after
    out = []
    with path.open("rb") as fh:  # binary: a bare \r (progress redraws) must not split a line
        for i, raw in enumerate(fh):
            if i > hi:
                break
            if i >= lo:
                out.append((i + 1, raw.rstrip(b"\n").decode("utf-8", errors="replace")))
    return out


def _plots(folder: Path) -> list[Figure]:
    return [Figure(image_data_uri(p), path=f"{folder.name}/{p.name}") for p in sorted(folder.glob("*.png"))] \
        if folder.is_dir() else []


def _verdict(c1: Change | None, c3: Change | None, diag: dict[str, Any] | None, steps: dict[str, Any]) -> Verdict:
    parts, metrics = [], []
    if c1 is not None:
        word = {"good": "helps Lucid", "bad": "slows Lucid", "neutral": "makes no measurable difference to Lucid"}[c1.tone]
        parts.append(f"SchedMate {word} here ({_pct(c1.change)} mean JCT)")
        metrics.append(Metric("Lucid+SchedMate vs Lucid", _pct(c1.change), f"95% CI {_pct(c1.lo)} to {_pct(c1.hi)}", c1.tone))
    if c3 is not None:
        word = {"good": "beats", "bad": "trails", "neutral": "matches"}[c3.tone]
        parts.append(f"standalone `{c3.new}` {word} the best baseline `{c3.base}` ({_pct(c3.change)})")
        metrics.append(Metric(f"`{c3.new}` vs `{c3.base}`", _pct(c3.change), f"95% CI {_pct(c3.lo)} to {_pct(c3.hi)}", c3.tone))
    if diag:
        right = diag.get("reason_code") == (diag.get("truth") or {}).get("reason")
        near = diag.get("line") is not None and (diag.get("truth") or {}).get("first_error_line") is not None and \
            abs(diag["line"] - diag["truth"]["first_error_line"]) <= 5
        metrics.append(Metric("failed job diagnosed", f"{diag.get('reason_code')}", f"line {_n1(diag.get('line'))}; "
                              + ("matches the label" if right and near else "label: "
                                 f"{(diag.get('truth') or {}).get('reason')} at line {_n1((diag.get('truth') or {}).get('first_error_line'))}"),
                              "good" if right and near else "bad"))
    failed = [n for n, s in steps.items() if s.get("status") != "ok"]
    if not parts:
        tone: Tone = "bad"
        headline = "No comparison could be made: the simulation steps did not finish"
    else:
        headline = "; ".join(parts)
        headline = headline[0].upper() + headline[1:]
        tones = [c.tone for c in (c1, c3) if c is not None]
        tone = "good" if "good" in tones and "bad" not in tones else "bad" if "bad" in tones else "neutral"
    seeds = "one seed on one synthetic trace"
    detail = (f"How sure: intervals are 95% bootstrap intervals over the jobs of {seeds} (paired: the same jobs under "
              "both schedulers). They cover job-to-job noise only; trace-to-trace variation needs more seeds "
              "(`schedmate experiment lucid` runs 3).")
    if failed:
        detail += f"\n\n**Steps that failed:** {', '.join(failed)} (see the last section)."
    return Verdict(headline, tone, detail, metrics)


AGENT_LABELS = {
    "jobs": "jobs seen by the schedulers", "distinct_artefacts": "distinct repositories and logs",
    "agent_runs": "agent runs (cache misses)", "cache_hits": "answers served from the cache",
    "advise_matched": "advice with a matching past job", "advise_unmatched": "advice without a match (scheduler default)",
    "track_runs": "tracker runs", "diagnose_runs": "failure diagnoses", "llm_calls": "LLM calls",
}


def main_report(out: Path, data: dict[str, Any]) -> Report:
    """The report for a main-job folder, from its saved `report.json` content."""
    lucid, standalone = data.get("lucid") or [], data.get("standalone") or []
    steps, diag, agents = data.get("steps") or {}, data.get("diagnosis"), data.get("agents") or {}
    c1 = _change(_seed_folder(out, "lucid"), "lucid", "lucid+sm")
    c3 = None
    if standalone:
        by = {r["arm"]: r.get("mean_jct_mean") or float("inf") for r in standalone}
        base = min((a for a in BASELINES if a in by), key=lambda a: by[a], default=None)
        mine = min((a for a in by if a.startswith("schedmate")), key=lambda a: by[a], default=None)
        if base and mine:
            c3 = _change(_seed_folder(out, "standalone"), base, mine)
    sections: list[Section] = []
    if lucid:
        sections.append(Section(
            "Case 1: Lucid with and without SchedMate",
            [_arm_table(lucid, "lucid", ("lucid+sm",), "Per arm, one seed (SchedMate's arm highlighted)"),
             *_plots(out / "lucid")],
            intro="Lucid's own profiler and duration model (`lucid`) against Lucid fed SchedMate's advisor durations, "
                  "tracker progress and packing hints (`lucid+sm`), on the synthetic default trace with the real agents "
                  "in the loop. Tiresias and QSSF are shown for scale."))
    if standalone:
        sections.append(Section(
            "Case 3: standalone SchedMate, failures on",
            [_arm_table(standalone, c3.base if c3 else "fifo", [r["arm"] for r in standalone if r["arm"].startswith("schedmate")],
                        "Per arm, one seed; `+fh` adds the Failure Handler; `oracle-*` know true durations (an upper bound)"),
             *_plots(out / "standalone")],
            intro="SchedMate as the scheduler (SJF / SRPT on the advisor's durations) against FIFO, QSSF and Tiresias, "
                  "with injected failures the Failure Handler may act on."))
    if diag:
        t = diag.get("truth") or {}
        ok = diag.get("reason_code") == t.get("reason")
        blocks: list[Any] = [Text(
            f"SchedMate found **{diag.get('reason_code')}** ({diag.get('category')}, component {diag.get('component')}) at "
            f"line {_n1(diag.get('line'))} of {diag.get('total_lines') or 0:,} lines. The generator's label says **{t.get('reason')}** at "
            f"line {_n1(t.get('first_error_line'))}: {'correct' if ok else 'wrong'}. LLM: {diag.get('llm_status')}. "
            "Line numbers count from 1, as an editor shows them (here, in `report.md` and in `report.json`).")]
        window = _log_window(Path(diag.get("log") or ""), int(diag["line"])) if diag.get("line") else []
        if window:
            blocks.append(LogQuote(window, source=f"`{diag.get('log')}`, lines {window[0][0]}–{window[-1][0]}",
                                   mark=int(diag["line"])))
        elif diag.get("root_cause") and diag.get("line"):
            blocks.append(LogQuote([(int(diag["line"]), diag["root_cause"])], mark=int(diag["line"])))
        steps_ = plan_steps(diag.get("plan"))
        if steps_:
            notes = " ".join((diag.get("plan") or {}).get("notes") or [])
            blocks.append(Steps(steps_, title="Recovery plan (dry run: proposed, never executed)", note=notes))
        sections.append(Section("A failed job, diagnosed end to end", blocks,
                                intro="A 16-rank job's log with an InfiniBand fault under NCCL: locate, classify, plan."))
    if agents:
        sections.append(Section("Agent work during the run", [Table(
            ["what", "count"], [[label, int(agents[k])] for k, label in AGENT_LABELS.items() if k in agents])]))
    if steps:
        rows = [[name, s.get("status"), f"{s.get('seconds', 0):.1f} s", s.get("error") or ""] for name, s in steps.items()]
        step_tones: dict[tuple[int, int], Tone] = {(i, 1): ("good" if s.get("status") == "ok" else "bad")
                                                   for i, s in enumerate(steps.values())}
        sections.append(Section("Pipeline steps", [Table(["step", "status", "time", "error"], rows, tones=step_tones)]))
    return Report(
        "SchedMate main job", _verdict(c1, c3, diag, steps), sections,
        subtitle="The whole pipeline on embedded defaults: Redis, MiniLM embeddings, the agents and the simulator.",
        footer=f"Regenerate with `schedmate demo --out {out}`. Raw figures: `report.json`, `report.md`, and the "
               "per-job CSVs under `lucid/` and `standalone/`.")


def write_main_html(out: Path) -> Path:
    """(Re)build `out/report.html` and `out/report.md` (one `Report`, two renderers) from
    `out/report.json` and the files beside it; returns the HTML's path."""
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    report = main_report(out, data)
    write_markdown(report, out / "report.md")
    return write_html(report, out / "report.html")
