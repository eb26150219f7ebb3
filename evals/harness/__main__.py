"""`python -m schedmate.evals.harness failures|metrics --data DIR [--out DIR] [--llm/--no-llm] [--limit N]`
(the same as `schedmate eval ...`)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m schedmate.evals.harness")
    p.add_argument("suite", choices=("failures", "metrics"))
    p.add_argument("--data", required=True)
    p.add_argument("--out", default=None)
    p.add_argument("--llm", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--limit", type=int, default=None)
    a = p.parse_args(argv)
    from schedmate.evals.harness import run_failure_eval, run_metrics_eval

    def progress(done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            print(f"  {done}/{total}", file=sys.stderr, flush=True)

    with ExitStack() as stack:
        llm = None
        if a.llm:
            from schedmate.llm import LLMConfig, open_chat_model

            llm = stack.enter_context(open_chat_model(LLMConfig()))
        run = run_failure_eval if a.suite == "failures" else run_metrics_eval
        summary = run(a.data, a.out or "eval-out", llm=llm, limit=a.limit, progress=progress)
    print(summary["summary_line"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
