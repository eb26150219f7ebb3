"""Scheduling Advisor evaluation (Figure 12 analogue): one summary line, JSON + markdown + PNG.

    python bench/bench_advisor.py --data /tmp/advisor-data --out bench/results/advisor
    python bench/bench_advisor.py --history 500 --new 200 --agent-jobs 20   # + the LLM agent on 20 jobs
    python bench/bench_advisor.py --users-mode shared                       # one codebase, many users

Corpora are generated under --data on first use (eval seed 20240917, dev seed 1) and reused.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from schedmate.evals.harness.advisor import AdvisorEvalConfig, run_advisor_eval, summary_line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("/tmp/schedmate-advisor-data"), help="corpus folder (reused)")
    p.add_argument("--out", type=Path, default=Path("bench/results/advisor"))
    p.add_argument("--history", type=int, default=500)
    p.add_argument("--new", type=int, default=200)
    p.add_argument("--seed", type=int, default=AdvisorEvalConfig.seed)
    p.add_argument("--dev-history", type=int, default=300)
    p.add_argument("--dev-new", type=int, default=100)
    p.add_argument("--top-k", type=int, default=3)
    p.add_argument("--threshold", type=float, default=None, help="fixed T (default: chosen on the dev split)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--agent-jobs", type=int, default=0, help="run the local LLM agent on this many new jobs")
    p.add_argument("--agent-threads", type=int, nargs="+", default=[1])
    p.add_argument("--agent-timeout", type=float, default=300.0)
    p.add_argument("--agent-tool-calls", type=int, default=3)
    p.add_argument("--redis-url", default=None, help="default: a temporary redis-server")
    p.add_argument("--users-mode", choices=("family", "shared"), default="family",
                   help="generated corpora: users own experiments (family) or share one codebase (shared)")
    p.add_argument("--pool-k", type=int, default=64, help="records retrieved per job for rate x plan")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    llm = agent = None
    if args.agent_jobs:
        from schedmate.agents.advisor.agent import AgentConfig
        from schedmate.llm import LLMConfig

        llm = LLMConfig(max_tokens=256, timeout_s=min(600.0, args.agent_timeout), ctx=8192)
        agent = AgentConfig(timeout_s=args.agent_timeout, max_tool_calls=args.agent_tool_calls,
                            max_model_calls=args.agent_tool_calls + 3)
    t0 = time.time()
    say = (lambda m: None) if args.quiet else (lambda m: print(f"[{time.time() - t0:7.1f}s] {m}", file=sys.stderr, flush=True))
    cfg = AdvisorEvalConfig(
        n_history=args.history, n_new=args.new, seed=args.seed, dev_history=args.dev_history, dev_new=args.dev_new,
        top_k=args.top_k, threshold=args.threshold, threads=tuple(args.threads), agent_jobs=args.agent_jobs,
        agent_threads=tuple(args.agent_threads), llm=llm, agent=agent, redis_url=args.redis_url, progress=say,
        users_mode=args.users_mode, pool_k=args.pool_k,
    )
    report = run_advisor_eval(args.data, args.out, cfg)
    print(summary_line(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
