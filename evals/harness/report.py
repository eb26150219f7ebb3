"""`report.json` (every figure, both suites merged when both ran into the same folder), per-log
rows (`<suite>_logs.jsonl`), and one `Report` for people written as `report.md` and `report.html` (the shared
renderers, never Markdown by hand), plus a one-line summary per suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schedmate.htmlreport import Block, Report, Section, Table, Verdict, write_html, write_markdown
from schedmate.llm_breaker import describe_llm

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"


def _f(x: Any, pct: bool = False) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{100 * x:.1f}" if pct else (f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}")
    return str(x)


def _ms(lat: dict[str, Any] | None, key: str) -> str:
    if not lat or lat.get(key) is None:
        return "–"
    return f"{1000 * lat[key]:.1f}"


def _silent_llm(summary: dict[str, Any]) -> str:
    """` | LLM answered nothing (...)` when an LLM was configured and gave no answer, else ''."""
    calls = summary.get("llm_calls")
    if not summary.get("llm") or not calls or calls.get("answered"):
        return ""
    return " | LLM " + describe_llm(True, calls).removeprefix("LLM: configured but ")


def summary_line(suite: str, summary: dict[str, Any]) -> str:
    s = summary["systems"]
    if suite == "failures":
        parts = []
        for name in ("locator+rules", "locator+learned", "locator+llm", "binary+rules", "last-500", "pure-llm-tail"):
            if name in s and s[name].get("n"):
                m = s[name]
                w5 = (m.get("line") or {}).get("within5")
                parts.append(f"{name}: infra-F1 {_f(m['infra']['f1'], True)} acc {_f(m['infra']['accuracy'], True)} "
                             f"cat-F1 {_f(m['category_macro_f1'], True)}" + (f" ±5 {_f(w5, True)}" if w5 is not None else "")
                             + f" {_ms(m['latency'], 'mean_s')} ms/log")  # fmt: skip
        line = f"eval failures: {summary['failed_logs']} failed logs | " + " | ".join(parts) + _silent_llm(summary)
        pools = []
        for pool, ps in (summary.get("pools") or {}).items():
            sub = []
            for name in ("locator+rules", "locator+learned", "binary+rules", "last-500"):
                m = ps["systems"].get(name) or {}
                if m.get("n"):
                    w5 = (m.get("line") or {}).get("within5")
                    sub.append(f"{name} F1 {_f(m['infra']['f1'], True)} acc {_f(m['infra']['accuracy'], True)} ±5 {_f(w5, True)}")
            if sub:
                pools.append(f"{pool} ({ps['failed_logs']}): " + ", ".join(sub))
        if pools:
            line += " || pools: " + " | ".join(pools)
        dev = summary.get("devset")
        if dev is not None:
            m = (dev.get("systems") or {}).get("locator+learned") or (dev.get("systems") or {}).get("locator+rules") or {}
            b = (dev.get("systems") or {}).get("last-500") or {}
            if m.get("n_failed"):
                line += (f" || real dev set ({dev['n_items']} items): locator+learned cat-acc {_f(m['category_accuracy'], True)} "
                         f"infra-F1 {_f(m['infra']['f1'], True)} ±2 {_f(m['line_within2'], True)}; last-500 cat-acc "
                         f"{_f(b.get('category_accuracy'), True)} infra-F1 {_f((b.get('infra') or {}).get('f1'), True)}")  # fmt: skip
            else:
                line += f" || real dev set: {dev.get('note') or 'no failed items'}"
            rem = dev.get("remediation") or {}
            if (r := rem.get("locator+learned") or rem.get("locator+rules")) and r.get("n"):
                base = rem.get("reason-default") or {}
                line += (f" || remediation ({r['n']} labelled): key {_f(r['key_accuracy'], True)} values "
                         f"{_f(r['values_accuracy'], True)} of {r['n_with_values']}; reason-default key "
                         f"{_f(base.get('key_accuracy'), True)}, majority-key {_f((rem.get('majority-key') or {}).get('key_accuracy'), True)}")
        return line
    parts = []
    for name in ("tracker", "regex-only", "last-lines"):
        m = s[name]["all"]
        parts.append(f"{name}: success {_f(m['success_rate'], True)}% RMSRE {_f(m['rmsre'])} {_ms(m['latency'], 'mean_s')} ms/log")
    return f"eval metrics: {summary['logs']} logs | " + " | ".join(parts) + _silent_llm(summary)


def _failures_sections(s: dict[str, Any]) -> list[Section]:
    intro = (
        f"Corpus `{s['data_dir']}`: {s['logs']} logs, {s['failed_logs']} failed (category mix {s['category_mix']}), "
        f"failed-log sizes {s['n_lines']['min']}–{s['n_lines']['max']} lines (median {s['n_lines']['median']}); "
        f"{describe_llm(s['llm'], s.get('llm_calls'))}; chunk {s['chunk']} lines, classifier window {s['window_lines']} lines, "
        f"no-locator tail {s['tail_lines']} lines; wall {s['wall_s']} s."
    )
    scored = [(name, m) for name, m in s["systems"].items() if m.get("n")]
    verdicts = [[name, m["n"], m["verdicts"], _f(m["infra"]["precision"], True), _f(m["infra"]["recall"], True),
                 _f(m["infra"]["f1"], True), _f(m["infra"]["accuracy"], True), _f(m["category_macro_f1"], True),
                 _f(m["reason_accuracy"], True), _f(m["component_accuracy"], True)] for name, m in scored]
    lines = []
    for name, m in scored:
        ln = m.get("line") or {}
        c = m.get("classifier_calls") or {}
        lat = m["latency"]
        lines.append([name, _f(ln.get("found"), True), _f(ln.get("exact"), True), _f(ln.get("exact_block"), True),
                      _f(ln.get("within5"), True), _f(ln.get("within5_block"), True), _f(ln.get("early"), True),
                      _f(ln.get("late"), True), _f(c.get("mean")), _f(c.get("max")), _f(c.get("mean_bound")),
                      _f(c.get("within_bound"), True), _f(c.get("mean_lines_classified")), _ms(lat, "mean_s"),
                      _ms(lat, "p50_s"), _ms(lat, "p95_s"), _ms(lat, "max_s")])
    blocks: list[Block] = [
        Table(["system", "n", "verdicts", "infra P", "infra R", "infra F1", "infra acc", "category macro-F1", "reason acc",
               "component acc"], verdicts,
              caption="Infrastructure vs not (paper Table 4) and categories. A missing verdict counts as 'not "
                      "infrastructure' and wrong."),
        Table(["system", "found", "exact", "exact-block", "±5", "±5 block", "early", "late", "calls mean", "calls max",
               "bound mean", "≤ bound", "lines classified", "latency mean ms", "p50", "p95", "max"], lines,
              caption="First-error line (% of failed logs). exact: = label first_line; exact-block: anywhere in "
                      "[block_start, first_line] (the root-cause block, e.g. its `Traceback` header, counts as exact); "
                      "±5: |line − first_line| ≤ 5; ±5 block: in [block_start − 5, first_line + 5]. Calls: classifier "
                      "calls (one judged chunk: keyword gate, rules, then one embedding batch for what they leave) per "
                      "located failure; bound = max(2, 2·log2(lines/chunk))."),
    ]
    if s.get("false_alarms"):
        blocks.append(Table(["locator", "clean logs", "false-alarm %", "latency mean ms", "p95"],
                            [[name, m["n"], _f(m["false_alarm_rate"], True), _ms(m["latency"], "mean_s"),
                              _ms(m["latency"], "p95_s")] for name, m in s["false_alarms"].items()],
                            caption="Locators on completed/running logs (a located failure is a false alarm):"))
    names = [name for name, _ in scored]
    per_reason = [[reason, e["category"], e["n"], *(_f(e.get(n), True) for n in names)]
                  for reason, e in s["per_reason"].items()]
    blocks.append(Table(["reason", "category", "n", *names], per_reason, caption="Reason accuracy per reason (%):"))
    out = [Section("Failures", blocks, intro=intro)]
    if s.get("pools") or s.get("devset"):
        out.append(_side_by_side_section(s))
    return out


def _side_by_side_section(s: dict[str, Any]) -> Section:
    """Generated dev pool, generated held-out pool and the real dev set, one row per system."""
    pools = s.get("pools") or {}
    dev = s.get("devset") or {}
    names: list[str] = []
    for src in [p["systems"] for p in pools.values()] + [dev.get("systems") or {}]:
        names += [n for n in src if n not in names]
    n_dev = {k: v.get("failed_logs") for k, v in pools.items()}
    intro = (
        f"Generated failed logs: dev pool {n_dev.get('dev')}, held-out pool {n_dev.get('heldout')} (rules may be written "
        f"from the dev pool only). Real dev set `{dev.get('folder', '–')}`: {dev.get('n_failed', 0)} failed, "
        f"{dev.get('n_normal', 0)} normal items" + (f" ({dev['note']})" if dev.get("note") else "") + ". Real-set lines are "
        "1-based `root_line`; normal flagged = share of normal runs reported as failed. majority / keyword-regex / "
        "last-error-line are the model-free baselines (real set only)."
    )
    rows = []
    for name in names:
        cells: list[str] = [name]
        for pool in ("dev", "heldout"):
            m = ((pools.get(pool) or {}).get("systems") or {}).get(name) or {}
            if m.get("n"):
                cells += [_f(m["infra"]["f1"], True), _f(m["infra"]["accuracy"], True), _f(m["category_accuracy"], True),
                          _f((m.get("line") or {}).get("within5"), True)]
            else:
                cells += ["–"] * 4
        r = (dev.get("systems") or {}).get(name) or {}
        infra = r.get("infra") or {}
        cells += [_f(r.get("category_accuracy"), True), _f(r.get("category_macro_f1"), True), _f(infra.get("precision"), True),
                  _f(infra.get("recall"), True), _f(infra.get("f1"), True), _f(r.get("line_exact"), True),
                  _f(r.get("line_within2"), True), _f(r.get("normal_flagged"), True)]
        rows.append(cells)
    blocks: list[Block] = [Table(
        ["system", "dev infra F1", "dev infra acc", "dev cat acc", "dev ±5", "held-out infra F1", "held-out infra acc",
         "held-out cat acc", "held-out ±5", "real cat acc", "real macro-F1", "real infra P", "real infra R", "real infra F1",
         "real exact", "real ±2", "real normal flagged"], rows)]
    rem = dev.get("remediation") or {}
    if rem:
        blocks.append(Table(["system", "n", "key acc", "values n", "values acc"],
                            [[name, r["n"], _f(r["key_accuracy"], True), r["n_with_values"], _f(r["values_accuracy"], True)]
                             for name, r in rem.items()],
                            caption=f"Remediation on the real dev set (`{dev.get('remediation_labels')}` blind labels, "
                                    "`remediation-*.jsonl`): key = the proposed fix matches the label's; values = key and "
                                    "every labelled value match (normalised)."))
    hard = s.get("hard_cases") or {}
    if hard:
        sys_names = [n for n in ("locator+rules", "locator+learned", "locator+llm", "binary+rules", "last-500", "linear-scan")
                     if any(n in e for e in hard.values())]
        hard_rows = []
        for case, e in hard.items():
            cells = [case, str(e["n"])]
            for n in sys_names:
                m = e.get(n)
                cells.append("–" if not m else f"{_f(m['infra_f1'], True)} / {_f(m['category_accuracy'], True)} / {_f(m['within5'], True)}")
            hard_rows.append(cells)
        blocks.append(Table(["case", "n", *sys_names], hard_rows,
                            caption="Generated failed logs by hard case (both pools): infra F1 / category accuracy / ±5 lines (%)."))
    return Section("Generated dev pool, generated held-out pool, real dev set", blocks, intro=intro)


def _metrics_section(s: dict[str, Any]) -> Section:
    ns = s["noise_split"]
    intro = (
        f"Corpus `{s['data_dir']}`: {s['logs']} logs; {describe_llm(s['llm'], s.get('llm_calls'))}; newest {s['n_lines']} progress "
        f"events; success = step time within ±{int(100 * s['success_tolerance'])}% of the truth at the log's end, or "
        f"'no signal' on a log without progress; RMSRE over logs with progress where an estimate was given. Clean/noisy "
        f"halves split at median noise level {ns['median_noise_level']} ({ns['clean']} / {ns['noisy']} logs); wall {s['wall_s']} s."
    )
    rows = []
    for name, splits in s["systems"].items():
        for split, m in splits.items():
            if not m.get("n"):
                continue
            lat = m["latency"]
            rows.append([name, split, m["n"], m["with_progress"], _f(m["success_rate"], True),
                         _f(m["success_rate_with_progress"], True), _f(m["rmsre"]), _f(m["rmsre_success"]),
                         _f(m["median_rel_err"]), m["missed"], m["false_signal"], _ms(lat, "mean_s"), _ms(lat, "p50_s"),
                         _ms(lat, "p95_s"), _ms(lat, "max_s"), m["llm_calls"]])
    by_fw = [[fw, m["n"], _f(m["success_rate"], True), _f(m["rmsre"]), m["missed"], m["false_signal"],
              _ms(m["latency"], "mean_s")] for fw, m in s["tracker_by_framework"].items()]
    return Section("Metrics", [
        Table(["system", "split", "n", "with progress", "success %", "success % (with progress)", "RMSRE",
               "RMSRE (successes)", "median rel err", "missed", "false signal", "latency mean ms", "p50", "p95", "max",
               "LLM calls"], rows),
        Table(["framework", "n", "success %", "RMSRE", "missed", "false signal", "latency mean ms"], by_fw,
              caption="Tracker by framework:"),
    ], intro=intro)


def eval_report(report: dict[str, Any]) -> Report:
    """report.json's suites as one `Report`: the summary lines first, then each suite's tables."""
    lines = [report[suite]["summary_line"] for suite in ("failures", "metrics") if suite in report]
    sections: list[Section] = []
    if "failures" in report:
        sections += _failures_sections(report["failures"])
    if "metrics" in report:
        sections.append(_metrics_section(report["metrics"]))
    return Report("SchedMate evaluation", Verdict("; ".join(s.split(" | ")[0] for s in lines) or "no suite ran",
                                                  points=lines), sections,
                  footer="Regenerate with `schedmate eval failures|metrics --out DIR`; every figure is in `report.json`.")


def write_report(out_dir: str | Path, suite: str, summary: dict[str, Any], rows: list[dict[str, Any]] | None = None,
                 extra_rows: dict[str, list[dict[str, Any]]] | None = None) -> str:
    """Merge `summary` into out_dir/report.json under `suite`, write the per-log rows (and any
    `extra_rows` as `<suite>_<name>.jsonl`, e.g. the real dev set's) and report.md; return the
    one-line summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / REPORT_JSON
    report: dict[str, Any] = {}
    if path.exists():
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = {}
    line = summary_line(suite, summary)
    report[suite] = {**summary, "summary_line": line}
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if rows is not None:
        with open(out / f"{suite}_logs.jsonl", "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    if extra_rows:
        for name, rs in extra_rows.items():
            with open(out / f"{suite}_{name}.jsonl", "w", encoding="utf-8") as fh:
                for r in rs:
                    fh.write(json.dumps(r) + "\n")
    people = eval_report(report)
    write_markdown(people, out / REPORT_MD)
    write_html(people, out / REPORT_HTML)
    return line
