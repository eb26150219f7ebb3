"""Sia+SchedMate (spec §5.2): pre-profiling-free bootstrapping on top of the unmodified Sia policy.

Vanilla Sia profiles every new job on one GPU of each type for `profile_seconds` (t_prof, spec
§8.2: 120 s) before it enters the ILP. `SiaSchedMate` subclasses `Sia` and overrides only its
bootstrapping hooks:

- at arrival it tells the `InsightSource` about the job (`record(job, finished=False)`) and asks
  the advisor (`advise(job)`);
- if the advisor names similar jobs, the most similar *earlier* job of this run that already has
  a model (`Sia.model_of`: measured, not still profiling) is the donor: the new job starts from a
  copy of the donor's current model — per-GPU-type fitted `PerfParams`, every recorded
  (nodes, replicas, batch) → (step, sync) point and the latest gradient statistics — under its
  *own* application's batch limits, skips profiling and only waits the advisor's latency
  (`AdvisorInsight.latency_s` when positive, else `advisor_latency_s`, ≈ 9 s, holding no GPUs);
- otherwise (no insight, no match, or no donor with a model yet) it profiles as Sia does; an
  advised job still waits the advisor latency first.

Either way Sia's profile-as-you-go refines the job's model as it runs; Sia keeps every job's live
model (and finished jobs' final ones), which is the registry later jobs copy from. A donor of a
different application is still used (the advisor said it is similar) and counted as `wrong_app`:
an honest signal of match quality, whose cost shows up in the JCTs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.registry import PolicyAdapter, PolicyWorld, homogeneous_world, unit_draw
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.policy import ClusterView, Policy
from schedmate.schedulers.sia.jobs import SiaJobModel, job_application
from schedmate.schedulers.sia.policy import Sia
from schedmate.schedulers.sia.profiles import load_app

if TYPE_CHECKING:
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.engine import SimConfig, SimResult

__all__ = ["ADAPTER", "Bootstrap", "SiaSchedMate", "SiaSMCounters", "copy_model", "declared_applications", "pick_donor"]

DEFAULT_ADVISOR_LATENCY_S = 9.0


@dataclass
class SiaSMCounters:
    """What the adapter did with the advisor's answers (one count per arriving job)."""

    arrivals: int = 0
    advised: int = 0  # the source answered (detected)
    matched: int = 0  # ... with at least one similar job
    bootstrapped: int = 0  # ... and a donor with a model: profiling skipped
    no_donor: int = 0  # matched, but no earlier job of this run had a model: profiled
    wrong_app: int = 0  # bootstrapped from a job of another application
    advisor_seconds: float = 0.0  # latency charged to advised jobs


@dataclass(frozen=True)
class Bootstrap:
    """How one job was bootstrapped (`donor` None: Sia's own profiling)."""

    job_id: str
    app: str
    donor: str | None
    donor_app: str | None
    delay_s: float

    @property
    def wrong_app(self) -> bool:
        return self.donor is not None and self.donor_app != self.app


def pick_donor(
    similar_ids: Sequence[str], job_id: str, model_of: Callable[[str], SiaJobModel | None]
) -> str | None:
    """The most similar job (first in `similar_ids`) other than `job_id` that has a model."""
    for sid in similar_ids:
        if sid != job_id and model_of(sid) is not None:
            return sid
    return None


def copy_model(donor: SiaJobModel, app_name: str, *, root: Path | str | None = None) -> SiaJobModel:
    """An independent copy of `donor`'s throughput model for a job of application `app_name`.

    Profiles, fitted params, gradient statistics and run-on types are the donor's; batch limits
    (and the restart penalty Sia reads from the model) are the new job's own application's.
    """
    model = donor.copy()
    if donor.app.name != app_name:
        model.app = load_app(app_name, root)
    model.source = "history"
    return model


class SiaSchedMate(Sia):
    """Sia with SchedMate's pre-profiling-free bootstrapping (see the module docstring).

    `source`: the insight source; `advisor_latency_s`: seconds an advised job waits when the
    source reports no latency of its own; other keyword arguments go to `Sia` (e.g.
    `profile_seconds`, the t_prof charged to jobs that are not bootstrapped).
    """

    name = "sia+sm"

    def __init__(self, source: InsightSource, *, advisor_latency_s: float = DEFAULT_ADVISOR_LATENCY_S, **sia_kwargs: Any) -> None:
        super().__init__(**sia_kwargs)
        self.source = source
        self.advisor_latency_s = advisor_latency_s
        self.counters = SiaSMCounters()
        self.bootstraps: dict[str, Bootstrap] = {}

    # ------------------------------------------------------------------ Sia's hooks
    def bootstrap(self, job: JobState, view: ClusterView) -> SiaJobModel:
        c = self.counters
        c.arrivals += 1
        app = job_application(job.spec)
        self.source.record(job, finished=False)
        insight = self.source.advise(job)
        delay = self._latency(insight)
        donor = None
        if insight is not None:
            c.advised += 1
            c.advisor_seconds += delay
            if insight.matched:
                c.matched += 1
                donor = pick_donor(insight.similar_ids, job.job_id, self.model_of)
                if donor is None:
                    c.no_donor += 1
        if donor is None:
            self.bootstraps[job.job_id] = Bootstrap(job.job_id, app, None, None, delay)
            return super().bootstrap(job, view)
        source_model = self.model_of(donor)
        assert source_model is not None
        record = Bootstrap(job.job_id, app, donor, source_model.app.name, delay)
        self.bootstraps[job.job_id] = record
        c.bootstrapped += 1
        c.wrong_app += record.wrong_app
        return copy_model(source_model, app, root=self.speed_model.root)

    def profiling_seconds(self, job: JobState, model: SiaJobModel) -> float:
        b = self.bootstraps.get(job.job_id)
        return 0.0 if b is not None and b.donor is not None else super().profiling_seconds(job, model)

    def delay_seconds(self, job: JobState, model: SiaJobModel) -> float:
        b = self.bootstraps.get(job.job_id)
        return b.delay_s if b is not None else 0.0

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        super().on_finish(job, view)
        self.source.record(job, finished=True)

    # ------------------------------------------------------------------ reporting
    def _latency(self, insight: AdvisorInsight | None) -> float:
        if insight is None:
            return 0.0
        return insight.latency_s if insight.latency_s > 0 else self.advisor_latency_s

    def info(self) -> dict[str, Any]:
        """Counters for reports: bootstrap share, profiling GPU-hours, wrong-app copies, source."""
        c = self.counters
        return {
            **asdict(c),
            "bootstrap_share": c.bootstrapped / c.arrivals if c.arrivals else 0.0,
            "wrong_app_share": c.wrong_app / c.bootstrapped if c.bootstrapped else 0.0,
            "profiled_jobs": self.stats.profiled_jobs,
            "profiling_gpu_hours": self.stats.profiling_gpu_seconds / 3600.0,
            "t_prof_s": self.profile_seconds,
            "source": self.source.stats(),
        }


# ------------------------------------------------------------------ the generic adapter arm

T_PROF_S = 120.0  # profiling per GPU type for a new job (the Sia case study's default, spec §8.2)


def _simulate(specs: Sequence[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig) -> SimResult:
    """The engine with the policy's own throughput model (`schedulers.sia.simulate_sia`)."""
    from schedmate.schedulers.sia import simulate_sia

    return simulate_sia(specs, cluster, policy, config)


def declared_applications(jobs: Sequence[JobSpec], seed: int, gpus: int) -> PolicyWorld:
    """Sia's world attribute: each job declares one of Sia's measured applications (a draw per seed
    and job) at the application's batch size, on Sia's 64 GPUs of 3 types (`gpus` is not used). The
    engine's truth is Sia's: the job's run time is its application's reference run time on its
    request (`with_sia_duration`), not the world's. Both arms profile new jobs for `T_PROF_S`."""
    from schedmate.schedulers.cluster import ClusterSpec as Cluster
    from schedmate.schedulers.sia import SIA_CLUSTER, SiaThroughput
    from schedmate.schedulers.sia.jobs import with_sia_duration
    from schedmate.schedulers.sia.profiles import available_apps

    cluster = Cluster.parse(SIA_CLUSTER)
    throughput = SiaThroughput()
    apps = available_apps(throughput.root)
    if not apps:
        from schedmate.errors import DependencyUnavailable

        raise DependencyUnavailable("Sia's application profiles are absent (../shared/data/sia; set SCHEDMATE_SHARED_DATA)")
    base = homogeneous_world(jobs, seed, cluster.total_gpus)
    out = []
    for s in base.jobs:
        app = apps[int(unit_draw("sia-application", seed, s.job_id) * len(apps))]
        attrs = {k: v for k, v in s.attributes.items() if k != "batch_size"}
        out.append(with_sia_duration(replace(s, attributes={**attrs, "application": app}), throughput))
    options = {"throughput": throughput, "profile_seconds": T_PROF_S, "reserve_profiling": True}
    return PolicyWorld(out, cluster, options=options, simulate=_simulate)


ADAPTER = PolicyAdapter(policy="sia", adapter=SiaSchedMate, world=declared_applications)
