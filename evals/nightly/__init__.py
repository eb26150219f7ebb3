"""Nightly evaluation suites (issue 15): the advisor, tracker and failure-handler evaluations of
`evals/harness`, plus the line classifier on Loghub's alert labels, reduced to headline figures,
judged against history and thresholds (`thresholds.yaml`), reported as one HTML page and pushed
to monitoring.

    run = run_nightly(NightlyConfig(data=Path("corpus"), out=Path("nightly"), quick=True))
    sys.exit(0 if run.passed else 1)
"""

from __future__ import annotations

from schedmate.evals.nightly.run import SUITES, NightlyConfig, NightlyRun, run_nightly

__all__ = ["SUITES", "NightlyConfig", "NightlyRun", "run_nightly"]
