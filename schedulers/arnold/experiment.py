"""Arnold reproduction runner (spec §6): placement quality (A), step time (B), reservation (C).

`run_arnold_experiment(out_dir)` writes `arnold.json` (config, rows, `aggregate`: per-arm rows of
Experiment C with `mean_jct_mean` like the Lucid/Sia experiments, `placement`: per-arm means of A
and B, `criteria`: each spec criterion with `measured` and `pass`), `arnold.csv` (every row) and
`arnold.png`, plus `decision_time` (one round's wall time at 64 and 1,024 GPUs, `timing.py`).
`quick=True` times the raw MIP on the paper's alphas only.

Regenerate: `schedmate experiment arnold --out OUT_DIR [--quick]`.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .criteria import placement_criteria, reservation_criteria, step_time_criteria
from .mip import UnitProblem, solve_units
from .placement_experiment import ALPHAS, PlacementRow, placement_rows, step_time_rows
from .reservation_experiment import ReservationRow, reservation_rows
from .timing import decision_times
from .trace import SETTINGS, ReservationWorkload, table1_instance

__all__ = ["raw_mip_seconds", "run_arnold_experiment"]


def raw_mip_seconds(seeds: Sequence[int], alphas: Sequence[float], time_limit: float = 10.0) -> dict[str, list[float]]:
    """Wall and CPU seconds of the MIP alone (no greedy-bound shortcut) on setting (iii), PP unit,
    in both forms (criterion f): keys "<form>_wall", "<form>_cpu"."""
    st = SETTINGS[2]
    out: dict[str, list[float]] = defaultdict(list)
    for seed in seeds:
        free = tuple(table1_instance(st, seed))
        for alpha in alphas:
            problem = UnitProblem(st.dp // (8 // st.tp), st.pp, free, alpha, 1 - alpha)
            for form in ("direct", "aggregated"):
                w0, c0 = time.perf_counter(), time.process_time()
                solve_units(problem, time_limit=time_limit, use_bound=False, form=form)
                out[f"{form}_wall"].append(time.perf_counter() - w0)
                out[f"{form}_cpu"].append(time.process_time() - c0)
    return dict(out)


def _aggregate(rows: Sequence[ReservationRow]) -> list[dict[str, Any]]:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r.arm].append(r.flat())
    out = []
    for arm, flats in by.items():
        entry: dict[str, Any] = {"trace": "reservation", "arm": arm, "seeds": len(flats)}
        for k, v in flats[0].items():
            if isinstance(v, int | float) and not isinstance(v, bool) and k != "seed":
                vals = np.array([f[k] for f in flats], dtype=float)
                entry[f"{k}_mean"] = _finite(float(vals.mean()))
                entry[f"{k}_std"] = _finite(float(vals.std(ddof=1))) if vals.size > 1 else 0.0
        entry["mean_wait_mean"] = entry["mean_queueing_mean"]
        out.append(entry)
    return out


def _placement_summary(rows: Sequence[PlacementRow]) -> list[dict[str, Any]]:
    acc: dict[tuple[str, str, float, str, str], list[PlacementRow]] = defaultdict(list)
    for r in rows:
        acc[(r.experiment, r.setting, r.alpha, r.profile, r.arm)].append(r)
    return [
        {"experiment": e, "setting": s, "alpha": a, "profile": p, "arm": arm, "seeds": len(rs),
         "score_mean": float(np.mean([r.score for r in rs])), "s_dp_mean": float(np.mean([r.s_dp for r in rs])),
         "s_pp_mean": float(np.mean([r.s_pp for r in rs])),
         "slowdown_mean": _finite(float(np.mean([r.slowdown for r in rs])))}
        for (e, s, a, p, arm), rs in acc.items()
    ]


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _plot(path: Path, summary: list[dict[str, Any]], results: dict[str, Any], w: ReservationWorkload) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    ax = axes[0]
    for arm in ("arnold", "arnold-both", "best-fit", "random-fit", "gpu-pack", "topo-aware"):
        pts = sorted((r["alpha"], r["score_mean"]) for r in summary if r["experiment"] == "A" and r["setting"] == "iii" and r["arm"] == arm)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=arm)
    ax.set(xlabel="alpha (DP affinity)", ylabel="weighted max spread (minipods)", title="A: setting (iii), lower is better")
    ax.legend(fontsize=8)
    ax = axes[1]
    arms = ("arnold", "gpu-pack", "topo-aware", "best-fit", "random-fit", "naive")
    for k, prof in enumerate(("moe_24b", "dense_24b")):
        vals = [next((r["slowdown_mean"] for r in summary if r["experiment"] == "B" and r["setting"] == "iii"
                      and r["profile"] == prof and r["arm"] == a), np.nan) for a in arms]
        ax.bar(np.arange(len(arms)) + 0.4 * k, vals, width=0.4, label=prof)
    ax.set_xticks(np.arange(len(arms)) + 0.2, arms, rotation=30, fontsize=8)
    ax.set_ylim(0.95, None)
    ax.set(ylabel="step-time slowdown vs one minipod", title="B: setting (iii)")
    ax.legend(fontsize=8)
    ax = axes[2]
    for arm, res in results.items():
        tl = res.timeline
        keep = (tl[:, 0] >= w.announce_s - 7200) & (tl[:, 0] <= w.start_s + 1800)
        ax.step(tl[keep, 0] / 3600, tl[keep, 1] / res.cluster.total_gpus, where="post", label=arm, lw=1)
    ax.axvline(w.announce_s / 3600, color="k", ls=":")
    ax.axvline(w.start_s / 3600, color="k", ls="--")
    ax.set(xlabel="hour", ylabel="allocation rate", title="C: allocation around the LPJ (seed 0)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_arnold_experiment(
    out_dir: str | Path,
    seeds: Sequence[int] = (0, 1, 2),
    quick: bool = False,
    *,
    placement_seeds: Sequence[int] | None = None,
    workload: ReservationWorkload | None = None,
) -> dict[str, Any]:
    """Run A, B and C side by side over `seeds`; write JSON, CSV and PNG; return the JSON document."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pseeds = list(placement_seeds if placement_seeds is not None else seeds)
    w = workload or ReservationWorkload()
    a_rows = placement_rows(pseeds)
    raw = raw_mip_seconds(pseeds, (0.2, 0.4) if quick else ALPHAS)
    b_rows = step_time_rows(pseeds)
    c_rows, first = reservation_rows(seeds, workload=w)
    dp, tp, pp = w.lpj
    lpj_share = dp * tp * pp / 8 / w.nodes
    decision = [dt.__dict__ for dt in decision_times((64, 1024))]
    criteria = {**placement_criteria(a_rows, raw), **step_time_criteria(b_rows), **reservation_criteria(c_rows, lpj_share)}
    summary = _placement_summary([*a_rows, *b_rows])
    doc = {
        "experiment": "arnold",
        "config": {"seeds": list(seeds), "placement_seeds": pseeds, "quick": quick, "workload": w.__dict__},
        "aggregate": _aggregate(c_rows),
        "placement": summary,
        "criteria": criteria,
        "decision_time": decision,
        "passed": sum(c["pass"] for c in criteria.values()),
        "total": len(criteria),
        "rows": [r.flat() for r in c_rows],
        "wall_seconds": None,
    }
    rows = [r.flat() for r in a_rows] + [r.flat() for r in b_rows] + [r.flat() for r in c_rows]
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with open(out / "arnold.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        writer.writerows(rows)
    _plot(out / "arnold.png", summary, first, w)
    doc["wall_seconds"] = time.perf_counter() - t0
    (out / "arnold.json").write_text(json.dumps(doc, indent=2, default=str))
    return doc
