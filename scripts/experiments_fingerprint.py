"""A fingerprint of small case-study runs with non-agent sources (calibrated, declared-model, oracle,
the fail-slow speed log), to show a refactor changed no result (issue 25: results bit-identical).

    .venv/bin/python scripts/experiments_fingerprint.py OUT_DIR > after.json      # ~3 min on 2 cores
    .venv/bin/python scripts/experiments_fingerprint.py --compare before.json after.json

Run it on the commit before and after a change (e.g. in a `git worktree`); `--compare` ignores wall
times only. It covers the standalone (CauseDiagnosis, AdviceJournal, calibrated knobs), fail-slow,
Arnold, Arena, Suika and Lucid experiments; the real agents (`SimulationInsights`) are not run here.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from schedmate.sim.experiments.arena import ArenaAdapterConfig, DeclaredModelMatches, run_arena_adapter_experiment
from schedmate.sim.experiments.arnold import ArnoldAdapterConfig, run_arnold_adapter_experiment
from schedmate.sim.experiments.common import OracleInsights
from schedmate.sim.experiments.failslow import run_experiment
from schedmate.sim.experiments.lucid import run_lucid_experiment
from schedmate.sim.experiments.standalone import calibrated_source, run_standalone_experiment
from schedmate.sim.experiments.suika import SuikaAdapterConfig, run_suika_adapter_experiment


def _strip(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items() if k not in ("wall_seconds", "seconds", "elapsed_s")}
    if isinstance(d, list):
        return [_strip(v) for v in d]
    return d


def _clean(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _clean(v) for k, v in d.items() if "wall" not in k}
    if isinstance(d, list):
        return [_clean(v) for v in d]
    if isinstance(d, str):
        return re.sub(r"wall_seconds=[0-9.e-]+", "", d)
    return d


def fingerprint(out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {}
    run_standalone_experiment(out / "standalone", make_source=calibrated_source(), source_label="cal",
                              trace="synthetic", n_jobs=120, seeds=1, gpus=16, resubmit_delays=(600.0, 3600.0),
                              detection_rates=(0.5, 1.0))
    res["standalone"] = _strip(json.loads((out / "standalone" / "standalone.json").read_text()))
    res["failslow"] = _strip(run_experiment(out / "failslow", seeds=1, jobs=60, nodes=4))
    res["arnold"] = _strip(run_arnold_adapter_experiment(out / "arnold", make_source=calibrated_source(),
                                                         config=replace(ArnoldAdapterConfig.quick(), seeds=(0,))).summary)
    res["arena"] = _strip(run_arena_adapter_experiment(out / "arena", make_source=DeclaredModelMatches.make,
                                                       config=replace(ArenaAdapterConfig.quick(), seeds=(0,))).summary)
    res["suika"] = _strip(run_suika_adapter_experiment(out / "suika", make_source=DeclaredModelMatches.make,
                                                       config=replace(SuikaAdapterConfig.quick(), seeds=(0,))).summary)
    lucid = run_lucid_experiment(out / "lucid", make_source=lambda s, seed, d: OracleInsights(seed=seed, detection_rate=d),
                                 source_label="oracle", traces=("synthetic",), seeds=1, n_jobs=80, sweep=())
    res["lucid"] = _strip([row.extra | {"s": str(row.summary)} for row in lucid.rows])
    for name in ("standalone", "arnold", "arena", "suika", "lucid"):
        for p in sorted((out / name).rglob("*.json")):
            res[f"file:{p.relative_to(out)}"] = _strip(json.loads(p.read_text()))
    return res


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"]:
        a, b = (_clean(json.loads(Path(p).read_text())) for p in argv[1:3])
        print("IDENTICAL (wall times aside)" if a == b else "DIFFERENT")
        return 0 if a == b else 1
    print(json.dumps(fingerprint(Path(argv[0])), sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
