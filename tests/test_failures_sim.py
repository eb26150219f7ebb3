"""The failure world of the standalone study: hazards per GPU-hour, faulty nodes, user resubmission."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.schedulers.policies import FIFO
from schedmate.sim.failures import (
    FAILURE_KEY,
    FailureModel,
    FailureSimulator,
    FailureWorld,
    calibrate_hazard,
    failure_of,
    inject_failures,
)

NEVER = 1e18  # an exposure point no test job reaches


def job(job_id: str, submit: float, duration: float, *, gpus: int = 1, **kw: Any) -> JobSpec:
    return JobSpec(job_id, submit, gpus, duration, **kw)


def world(model: FailureModel | None = None, *, hazard: float = 0.0, points: dict[str, list[float]] | None = None,
          seed: int = 0) -> FailureWorld:
    w = FailureWorld(model=model or FailureModel(), seed=seed, hazard_per_gpu_s=hazard)
    for job_id, p in (points or {}).items():
        w.thresholds[job_id] = [*p, NEVER]
    return w


def run(specs: list[JobSpec], w: FailureWorld, *, nodes: int = 1, gpus_per_node: int = 1, policy: Any = None,
        resubmit: float | None = 3600.0, checkpoint: float = 1800.0) -> dict[str, JobState]:
    sim = FailureSimulator(specs, ClusterSpec.homogeneous(nodes, gpus_per_node), policy or FIFO(),
                           SimConfig(checkpoint_interval=checkpoint, resubmit_delay=resubmit), world=w)
    return {j.job_id: j for j in sim.run().jobs}


# ------------------------------------------------------------------------------- injection


def test_injection_marks_the_application_error_rate_and_leaves_the_input_alone() -> None:
    specs = [job(f"j{i}", float(i), 100.0 + i) for i in range(2000)]
    model = FailureModel(fail_rate=0.305, infra_share=0.11)
    out = inject_failures(specs, 3, model)
    marked = [failure_of(s) for s in out if failure_of(s) is not None]
    assert len(marked) == round(0.305 * 0.89 * 2000)
    assert {f.category for f in marked} == {"framework", "script"}
    assert 0.1 < np.mean([f.category == "framework" for f in marked]) < 0.25  # Acme 404 : 1,890
    assert all(s.status is FinalStatus.COMPLETED and s.duration == s.total_work for s in out)
    def marks(seed: int) -> list[object]:
        return [failure_of(s) for s in inject_failures(specs, seed, model)]

    assert marks(3) == [failure_of(s) for s in out] and marks(4) != marks(3)
    assert all(FAILURE_KEY not in s.attributes for s in specs)


def test_hazard_is_calibrated_so_infrastructure_is_the_target_share_of_failure_events() -> None:
    specs = [job(f"j{i}", 0.0, 1000.0, gpus=1 + i % 8) for i in range(1000)]
    model = FailureModel(fail_rate=0.3, infra_share=0.11, hardware_share=0.5, ops_failures=3)
    lam = calibrate_hazard(specs, model)
    gpu_work = sum(s.duration * s.num_gpus for s in specs)
    expected_infra = lam * gpu_work * (1 + 0.5 * 2)  # hazard strikes plus faulty-node follow-ups
    n_app = 0.3 * 0.89 * 1000
    assert expected_infra / (expected_infra + n_app) == pytest.approx(0.11)


# ------------------------------------------------------------------------------- hazard


def test_wide_and_long_jobs_fail_more_often_and_may_fail_several_times() -> None:
    model = FailureModel(hardware_share=0.0)  # transient faults only: no node state between jobs
    hazard = 1.0 / (8 * 3600.0)  # one failure per 8 GPU-hours on average
    specs = [job(f"n{i}", 0.0, 3600.0, gpus=1) for i in range(200)]
    specs += [job(f"w{i}", 0.0, 3600.0, gpus=8) for i in range(200)]
    jobs = run(specs, world(model, hazard=hazard, seed=1), nodes=400, gpus_per_node=8, resubmit=60.0)
    narrow = np.array([jobs[f"n{i}"].failures for i in range(200)])
    wide = np.array([jobs[f"w{i}"].failures for i in range(200)])
    # expected 1/8 vs 1 failure per hour of work (plus rework): the wide jobs fail ~8x more
    assert narrow.mean() < 0.3 < 0.8 < wide.mean()
    assert wide.max() >= 3  # several failures of one job
    assert all(j.phase is Phase.COMPLETED for j in jobs.values())  # infra failures are resubmitted


def test_exposure_points_are_the_same_in_every_arm() -> None:
    w1, w2 = world(hazard=1e-3, seed=5), world(hazard=1e-3, seed=5)
    assert w1.next_threshold("a", 0.0) == w2.next_threshold("a", 0.0)
    first = w1.next_threshold("a", 0.0)
    assert w1.next_threshold("a", first) > first == w2.next_threshold("a", first - 1.0)


def test_resubmit_delay_is_counted_in_jct_and_progress_goes_back_to_the_checkpoint() -> None:
    """One GPU; `a` (3,000 s) fails after 2,000 GPU-s held: back to the 1,800 s checkpoint,
    resubmitted 600 s later, restarts with the 40 s restart cost and redoes 1,200 s."""
    w = world(FailureModel(hardware_share=0.0), hazard=1.0, points={"a": [2000.0]})
    a = run([job("a", 0.0, 3000.0)], w, resubmit=600.0)["a"]
    assert a.failures == 1 and a.phase is Phase.COMPLETED
    assert a.end_time == pytest.approx(2000.0 + 600.0 + 40.0 + 1200.0)
    assert a.wasted_gpu_time == pytest.approx(200.0)
    assert w.causes["a"][0].category == "infrastructure" and w.causes["a"][0].kind == "transient"


def test_an_application_error_ends_the_job_as_failed() -> None:
    spec = job("a", 0.0, 1000.0, attributes={FAILURE_KEY: {"category": "script", "reason": "KeyError", "at": 0.25}})
    w = world()
    a = run([spec], w)["a"]
    assert a.phase is Phase.FAILED and a.end_time == pytest.approx(250.0)
    assert w.causes["a"][0].kind == "app" and w.stats()["infra_share"] == 0.0


# ------------------------------------------------------------------------------- faulty nodes


def test_a_faulty_node_fails_successive_jobs_until_the_operators_cordon_it() -> None:
    """One node. `a`'s hardware fault (at 100 GPU-s) makes it faulty: every job placed there
    fails within minutes, until its third failure; then it is cordoned and repaired (4 h)."""
    model = FailureModel(hardware_share=1.0, faulty_mttf_s=60.0, ops_failures=3, repair_s=4 * 3600.0)
    w = world(model, hazard=1.0, points={"a": [100.0], "b": [], "c": [], "d": []})
    specs = [job("a", 0.0, 1000.0), job("b", 10.0, 1000.0), job("c", 20.0, 1000.0), job("d", 30.0, 1000.0)]
    jobs = run(specs, w, resubmit=1e6)  # users resubmit long after: the node's effect is isolated
    kinds = [(job_id, c.kind) for job_id in "abcd" for c in w.causes.get(job_id, [])]
    assert kinds == [("a", "hardware"), ("b", "faulty"), ("c", "faulty")]
    assert w.counts["ops_cordons"] == 1 and w.counts["repairs"] == 1
    assert jobs["d"].failures == 0
    cordon_at = max(c.at for cs in w.causes.values() for c in cs)
    assert jobs["d"].first_start == pytest.approx(cordon_at + 4 * 3600.0)  # after the repair
    assert all(c.node == 0 and c.reason == w.causes["a"][0].reason for c in w.causes["b"] + w.causes["c"])


def test_a_cordon_by_the_policy_stops_the_follow_up_failures() -> None:
    """As above, but the scheduler cordons the failed node at once (what the handler does)."""

    class CordonOnFailure(FIFO):
        def __init__(self) -> None:
            super().__init__()
            self.pending: list[int] = []

        def on_failure(self, job: JobState, view: Any) -> bool:
            assert job.failed_node is not None  # the world names the host whose task died
            self.pending.append(job.failed_node)
            return False

        def schedule(self, view: Any) -> Any:
            from schedmate.schedulers.decisions import Cordon

            cordons = [Cordon(n) for n in self.pending]
            self.pending.clear()
            return [*cordons, *super().schedule(view)] if not cordons else cordons

    model = FailureModel(hardware_share=1.0, faulty_mttf_s=60.0, ops_failures=3, repair_s=3600.0)
    w = world(model, hazard=1.0, points={"a": [100.0], "b": [], "c": []})
    specs = [job("a", 0.0, 1000.0), job("b", 10.0, 1000.0), job("c", 20.0, 1000.0)]
    jobs = run(specs, w, nodes=2, policy=CordonOnFailure(), resubmit=1e6)
    assert [c.kind for cs in w.causes.values() for c in cs] == ["hardware"]
    assert w.counts["cordons_by_policy"] == 1 and w.counts["ops_cordons"] == 0
    assert jobs["b"].failures == jobs["c"].failures == 0


# ------------------------------------------------------------------------------- which node the log names


def _hosted(reason: str, gpus: int, placement: list[tuple[int, int]], culprit: int, fw: str = "deepspeed") -> str:
    from types import SimpleNamespace

    from schedmate.sim.simlogs import failed_log_text, host_nodes, node_hostname

    art = SimpleNamespace(log_framework=fw, gpus=gpus)
    return failed_log_text(art, reason, seed=0, job_id=f"{fw}-{reason}", attempt=0, variants=1,  # type: ignore[arg-type]
                           hosts=list(host_nodes(placement)), culprit_host=node_hostname(culprit))


def test_a_failed_log_carries_the_jobs_host_names_with_the_root_cause_on_the_culprit() -> None:
    from schedmate.sim.simlogs import node_hostname

    text = _hosted("NodeFailure", 16, [(3, 8), (11, 8)], culprit=11)
    assert node_hostname(11) in text
    line = next(x for x in text.splitlines() if "Node failure on" in x or "NODE FAILURE" in x)
    assert node_hostname(11) in line or "NODE FAILURE" in line
    # the generator's own host names are gone (only the cluster's)
    for stem in ("dgx", "worker-", "gpu-a100-"):
        assert stem not in text.replace("gpu-node-", "")


def test_the_node_is_read_from_the_located_lines_not_from_the_world() -> None:
    from schedmate.sim.simlogs import node_hostname, node_named, split_lines

    hosts = {node_hostname(3): 3, node_hostname(11): 11}
    lines = split_lines("a\nsrun: error: Node failure on gpu-node-011\nb\n")
    assert node_named(lines, 1, 1, hosts) == (11, "root_line")
    lines = split_lines("[rank9]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
                        "srun: error: gpu-node-003: task 2: Exited with exit code 1\n"
                        "srun: error: gpu-node-011: task 9: Exited with exit code 1\n")
    assert node_named(lines, 0, 0, hosts) == (11, "rank_map")
    assert node_named(split_lines("x\ny\n"), 0, 0, hosts) == (None, "none")  # the log does not say: no cordon
    assert node_named(split_lines("x\n"), 0, 0, {node_hostname(5): 5}) == (5, "placement")


def test_the_world_does_not_name_the_culprit_of_a_multi_node_job() -> None:
    """Without a diagnosis a multi-node job's `failed_node` is None; a one-node job's is its node."""
    seen: dict[str, Any] = {}

    class Watch(FIFO):
        def on_failure(self, job: JobState, view: Any) -> bool:
            seen[job.job_id] = (job.failed_node, {n for n, _ in job.placement})
            return False

    w = world(FailureModel(hardware_share=0.0), hazard=1.0, points={"wide": [50.0], "one": [50.0]})
    run([job("wide", 0.0, 1000.0, gpus=2), job("one", 0.0, 1000.0)], w, nodes=3, policy=Watch(), resubmit=None)
    assert seen["wide"][0] is None and len(seen["wide"][1]) == 2
    assert seen["one"][0] in seen["one"][1]


def test_a_blind_retry_retries_every_first_failure_once_after_300_s() -> None:
    from schedmate.sim.experiments.standalone import TiresiasRecovery

    policy = TiresiasRecovery()
    policy.setup_recovery("retry", None, retry_s=300.0, seed=0, detection_rate=1.0)
    specs = inject_failures([job("a", 0.0, 1000.0)], 0, FailureModel(fail_rate=1.0, infra_share=0.0))
    w = world(hazard=0.0)
    jobs = run(specs, w, policy=policy, resubmit=None)
    assert w.counts["policy_retries"] == 1 and policy.recovery_counts["retries"] == 1
    assert jobs["a"].failures == 2 and jobs["a"].phase is Phase.FAILED  # the bug is still there
