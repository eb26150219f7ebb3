"""Evaluation harness (issue 4): the Failure Handler and the Metric Tracker against the labelled
log corpus (`schedmate.synthetic.logs`), beside their baselines and ablations, in one run.

    summary = run_failure_eval("corpus/", "out/", llm=None)   # or llm=<BaseChatModel>
    summary = run_metrics_eval("corpus/", "out/")
    print(summary["summary_line"])

Each writes (when `out_dir` is given) `report.json` (both suites merged), `report.md` (tables)
and `<suite>_logs.jsonl` (per-log predictions). Definitions: `failures.py`, `metrics.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from schedmate.agents.failure import FailureHandlerConfig
from schedmate.evals.harness.common import Progress
from schedmate.evals.harness.devset_failures import DEFAULT_DEVSET
from schedmate.evals.harness.failures import run_failures
from schedmate.evals.harness.metrics import run_metrics
from schedmate.evals.harness.report import summary_line, write_report


def run_failure_eval(data_dir: str | Path, out_dir: str | Path | None = None, *, llm: BaseChatModel | None = None,
                     limit: int | None = None, progress: Progress | None = None, classifier: Any = None,
                     include_clean: bool = True, config: FailureHandlerConfig | None = None,
                     devset: str | Path | None = None) -> dict[str, Any]:  # fmt: skip
    """Failures suite; returns the summary (with `summary_line`), written to out_dir if given.
    `config` sets the handler (e.g. a smaller LLM prompt budget for a slow CPU model); `devset` a
    real dev-set folder to report beside the generated corpus (e.g. `DEFAULT_DEVSET`)."""
    summary, rows = run_failures(data_dir, llm=llm, limit=limit, progress=progress, classifier=classifier,
                                 include_clean=include_clean, config=config, devset=devset)  # fmt: skip
    dev_rows = summary.pop("devset_rows", None)
    line = (write_report(out_dir, "failures", summary, rows, extra_rows={"devset": dev_rows} if dev_rows else None)
            if out_dir is not None else summary_line("failures", summary))  # fmt: skip
    return {**summary, "summary_line": line}


def run_metrics_eval(data_dir: str | Path, out_dir: str | Path | None = None, *, llm: BaseChatModel | None = None,
                     limit: int | None = None, progress: Progress | None = None, classifier: Any = None) -> dict[str, Any]:  # fmt: skip
    """Metrics suite; returns the summary (with `summary_line`), written to out_dir if given."""
    summary, rows = run_metrics(data_dir, llm=llm, limit=limit, progress=progress, classifier=classifier)
    line = write_report(out_dir, "metrics", summary, rows) if out_dir is not None else summary_line("metrics", summary)
    return {**summary, "summary_line": line}


__all__ = ["DEFAULT_DEVSET", "run_failure_eval", "run_metrics_eval", "summary_line", "write_report"]
