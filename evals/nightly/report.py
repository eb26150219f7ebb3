"""The nightly report (O/report.html) on the shared HTML layer: verdict (regression or not, on how
much evidence) first, then the guards, each suite's tables and plots, and the trends."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedmate.evals.nightly import plots
from schedmate.htmlreport import Figure, Metric, Report, Section, Table, Text, Verdict, write_html
from schedmate.htmlreport.model import Tone

if TYPE_CHECKING:
    from schedmate.evals.nightly.run import NightlyRun
    from schedmate.evals.nightly.suites import SuiteResult

CARDS = (("failures.category_macro_f1", "Failure Handler: category macro-F1"),
         ("failures.line_within5", "Failure Handler: root line within ±5"),
         ("tracker.success_rate", "Tracker: step time within ±20%"),
         ("advisor.duration_within_100", "Advisor: duration within 100%"),
         ("loghub.bgl_f1", "Loghub BGL alerts: F1"),
         ("loghub.thunderbird_false_alarm_rate", "Loghub Thunderbird: false alarms"))


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:,.1f}"
    return str(v)


def _verdict(run: NightlyRun) -> Verdict:
    v, rec = run.verdict, run.record
    prev = run.history[-2] if len(run.history) >= 2 else None
    cards = []
    for key, label in CARDS:
        val = rec["metrics"].get(key)
        if val is None:
            continue
        bad = any(c.metric == key for c in v.regressions)
        note = ""
        if prev and prev["metrics"].get(key) is not None:
            d = val - prev["metrics"][key]
            note = f"{'+' if d >= 0 else '−'}{abs(d):.3f} vs previous run"
        else:
            b = rec["baselines"].get(key)
            note = f"baseline {_fmt(b)}" if b is not None else ""
        cards.append(Metric(label, _fmt(val), note, "bad" if bad else "neutral"))
    n_checks = len(v.checks)
    evidence = ", ".join(f"{r.name} {r.items}" for r in run.results if r.items)
    if v.passed:
        headline = f"No regression: {n_checks} of {n_checks} guards pass"
        headline += f" against {v.history_runs} earlier run(s)" if v.history_runs else " (first run of this profile: in-run baselines only)"
    else:
        headline = f"{len(v.regressions)} regression(s): " + ", ".join(sorted({c.metric for c in v.regressions}))
    degraded = "**Deliberately degraded run** (`--degrade`): each system under test is its weak stand-in.\n\n" if rec["degrade"] else ""
    detail = (degraded + f"How sure: items scored per suite: {evidence or 'none'}. Guards compare with the median of the "
              "last passing runs of the same profile and with the baseline each suite measured on the same items "
              "(thresholds in the config, not tuned to the generator)."
              + (" Quick corpora are small and move by whole items: read a drop there as a prompt to look, not a "
                 "measurement." if rec["quick"] else ""))
    points = [f"`{c.metric}` ({c.kind}): {c.why}" for c in v.regressions][:8]
    points += [f"export failed: {e}" for e in run.export_errors]
    return Verdict(headline, "good" if v.passed else "bad", detail, cards, points)


def _guards(run: NightlyRun) -> Section:
    rows: list[list[Any]] = []
    tones: dict[tuple[int, int], Tone] = {}
    for i, c in enumerate(sorted(run.verdict.checks, key=lambda c: (c.ok, c.metric))):
        rows.append([f"`{c.metric}`", c.kind, _fmt(c.value), _fmt(c.reference), "pass" if c.ok else "REGRESSION"])
        tones[(i, 4)] = "good" if c.ok else "bad"
    missing = sorted(k for k, val in run.record["metrics"].items() if val is None)
    blocks: list[Any] = [Table(["metric", "guard", "value", "reference", "result"], rows, tones=tones)] if rows else \
        [Text("No guard applied (no metric measured).")]
    if missing:
        blocks.append(Text("Not measurable on this data (never a regression): " + ", ".join(f"`{m}`" for m in missing)))
    return Section("Guards", blocks, intro="Each guarded figure against history (median of earlier passing runs), "
                                           "the in-run baseline, and any absolute floor from the config.")


def _suite_section(r: SuiteResult) -> Section:
    if r.error:
        return Section(f"{r.title}: suite failed", [Text(f"**Error:** {r.error}")])
    if not r.metrics:
        return Section(r.title, [Text(r.note or "skipped")])
    blocks: list[Any] = []
    if r.table:
        cols = list(dict.fromkeys(k for row in r.table for k in row))
        hl = frozenset(i for i, row in enumerate(r.table) if str(row.get("system", "")).split(" ")[0] == r.system)
        blocks.append(Table(cols, [[f"`{row.get(c)}`" if c == "system" else row.get(c) for c in cols] for row in r.table],
                            caption=f"Systems on the same items (under test: `{r.system}`; baseline: `{r.baseline_name}`)",
                            highlight=hl))
    figs: list[Figure] = []
    if r.confusion and r.confusion[1]:
        figs.append(Figure(plots.confusion_plot(*r.confusion, title=f"{r.title}: confusion matrix ({r.system})")))
    if any(r.rel_errors.values()):
        figs.append(Figure(plots.cdf_plot(r.rel_errors, f"{r.title}: relative-error CDF")))
    if any(r.latencies.values()):
        figs.append(Figure(plots.latency_plot(r.latencies, f"{r.title}: latency per item")))
    return Section(f"{r.title} ({r.seconds:.0f} s)", blocks + figs, intro=r.note, grid=True)


def _trends(run: NightlyRun) -> Section:
    if len(run.history) < 2:
        return Section("Trends", [Text("Trends appear from the second run of this profile (same data, same mode); "
                                       f"history: `{len(run.history)}` run so far.")])
    figs = []
    for r in run.results:
        keys = [f"{r.name}.{k}" for k in r.metrics if "latency" not in k and "ms_per" not in k]
        if keys:
            figs.append(Figure(plots.trend_plot(run.history[-30:], keys, r.title)))
    return Section(f"Trends over the last {min(30, len(run.history))} runs", figs, grid=True)


def nightly_report(run: NightlyRun, command: str = "") -> Report:
    rec = run.record
    sections = [_guards(run), *[_suite_section(r) for r in run.results], _trends(run)]
    return Report(
        "SchedMate nightly evaluation", _verdict(run), sections,
        subtitle=f"Run `{rec['run_id']}` at {rec['started']}, commit `{rec.get('commit') or '?'}`, profile "
                 f"`{rec['profile']}`, {rec['seconds']:.0f} s" + (" (quick)" if rec["quick"] else ""),
        footer=(f"Regenerate: `{command}`. " if command else "") + "This run: `nightly.json`; history: one JSON line per "
               "run in `history.jsonl`; thresholds: `evals/nightly/thresholds.yaml` unless `--config` is given.")


def write_nightly_report(run: NightlyRun, path: Path, command: str = "") -> Path:
    return write_html(nightly_report(run, command), path)
