"""One agent stack (issue 22 item 1): every entry point builds its agents from the same config, and
the simulator's advisor answers what `schedmate advise` answers for the same artefact and history.

The equivalence test runs both for real: the simulator (`SimulationInsights`, static extractor,
MiniLM, the session's redis-server) ingests a history under the job store's default prefix, and
`schedmate advise` (the CLI function path, `--redis-url` at the same server) reads that history
for the artefact's rendered repository and launch command.
"""

from __future__ import annotations

import inspect
import itertools
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate import cli_jobs
from schedmate.agents.advisor.wire import Advice
from schedmate.agents.stack import (
    DEFAULT_THRESHOLD,
    DEFAULT_TOP_K,
    ESTIMATORS,
    AgentStack,
    AgentStackConfig,
    estimate_job,
)
from schedmate.cli import app
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState
from schedmate.sim.artefacts import plan_artefact

SEED = 7
runner = CliRunner()


def spec(job_id: str, gpus: int, duration: float, status: FinalStatus = FinalStatus.COMPLETED) -> JobSpec:
    return JobSpec(job_id=job_id, submit_time=0.0, num_gpus=gpus, duration=duration, status=status)


def twins(target: JobSpec, prefix: str, n: int, status: FinalStatus) -> list[JobSpec]:
    """History jobs (other ids, other durations) in the same artefact cell as `target`."""
    key = plan_artefact(target, SEED).key
    out = []
    for i in itertools.count():
        cand = spec(f"{prefix}-{i}", target.num_gpus, target.duration * (1.0 + 0.05 * (i % 3)), status)
        if plan_artefact(cand, SEED).key == key:
            out.append(cand)
            if len(out) == n:
                return out
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    from schedmate.sim.semantic import load_agent_models

    return load_agent_models()


# ----------------------------------------------------------------------------- same defaults


def test_the_stack_defaults_are_the_deployed_ones() -> None:
    from schedmate.agents.advisor import estimator, retriever

    cfg = AgentStackConfig()
    assert (cfg.threshold, cfg.top_k, cfg.estimator, cfg.failure_method, cfg.llm) == (0.85, 3, "rate-plan", "learned", None)
    # the light constants the CLI reads at import are the agents' own
    assert (retriever.DEFAULT_THRESHOLD, retriever.DEFAULT_TOP_K) == (DEFAULT_THRESHOLD, DEFAULT_TOP_K)
    assert estimator.ESTIMATORS == ESTIMATORS
    assert cfg.with_llm().llm.timeout_s == 240.0 and cfg.with_llm().llm.max_retries == 0
    with pytest.raises(ValueError):
        AgentStackConfig(threshold=1.5)
    with pytest.raises(ValueError):
        AgentStackConfig(estimator="oracle")  # type: ignore[arg-type]


class Built(Exception):
    """Raised where an entry point would start using its Failure Handler: construction is what we test."""


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Records every `AgentStack` config and every Failure Handler / retriever as built."""
    from schedmate.agents.advisor.retriever import SimilarJobRetriever
    from schedmate.agents.failure.handler import FailureHandler

    seen: dict[str, list[Any]] = {"stacks": [], "handlers": [], "retrievers": []}
    stack_init, retriever_init = AgentStack.__init__, SimilarJobRetriever.__init__

    def record_stack(self: AgentStack, config: Any = None, **kw: Any) -> None:
        stack_init(self, config, **kw)
        seen["stacks"].append(self.config)

    def record_handler(self: Any, classifier: Any, **kw: Any) -> None:
        seen["handlers"].append(kw.get("config"))
        raise Built

    def record_retriever(self: Any, *args: Any, **kw: Any) -> None:
        retriever_init(self, *args, **kw)
        seen["retrievers"].append((self.threshold, self.top_k))

    monkeypatch.setattr(AgentStack, "__init__", record_stack)
    monkeypatch.setattr(FailureHandler, "__init__", record_handler)
    monkeypatch.setattr(SimilarJobRetriever, "__init__", record_retriever)
    return seen


def test_every_entry_point_builds_its_agents_from_the_same_default_config(
        built: dict[str, list[Any]], tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from schedmate.agents.failure.handler import FailureHandlerConfig
    from schedmate.deploy.daemon.daemon import DaemonConfig, LogDaemon
    from schedmate.deploy.daemon.state import DaemonState
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.core import ServiceCore
    from schedmate.sim.pipeline import diagnose_example
    from schedmate.sim.semantic import SimConfig, SimulationInsights

    class Dummy:  # stands in for MiniLM and the line classifier: construction only
        dim = 384

        @property
        def embedder(self) -> Dummy:
            return self

        def embed(self, texts: list[str]) -> Any:
            import numpy as np

            return np.ones((len(texts), self.dim), dtype=np.float32) / self.dim ** 0.5

    dummy = Dummy()
    monkeypatch.setattr(cli_jobs, "load_embedder", lambda: dummy)
    monkeypatch.setenv("SCHEDMATE_HOME", str(tmp_path / "home"))
    log = tmp_path / "job.log"
    log.write_text("step 1 loss 2.0\nTraceback (most recent call last):\nRuntimeError: boom\n")
    entry: dict[str, int] = {}

    def mark(name: str) -> None:
        entry[name] = len(built["stacks"])

    # CLI: advise (its config and options), track, diagnose
    assert cli_jobs.advise_config() == AgentStackConfig()
    params = inspect.signature(cli_jobs.advise).parameters
    assert (params["threshold"].default, params["top_k"].default) == (DEFAULT_THRESHOLD, DEFAULT_TOP_K)
    runner.invoke(app, ["track", str(log), "--json"])
    mark("cli track")
    result = runner.invoke(app, ["diagnose", str(log), "--json"])
    assert isinstance(result.exception, Built), result.output
    mark("cli diagnose")
    # service (`schedmate serve`, `schedmate chat`, and each Ray actor's ServiceCore)
    core = ServiceCore(ServiceConfig(redis_url=redis_url), embedder=dummy, classifier=dummy)
    with pytest.raises(Built):
        core.load()
    mark("service")
    try:
        from schedmate.deploy.ray.actors import _CoreActor
    except ImportError:
        pass
    else:
        actor = _CoreActor(ServiceConfig())
        assert "Built" in (actor.load() or "")
        mark("ray actor")
    # daemon
    (tmp_path / "logs").mkdir()
    daemon = LogDaemon(tmp_path / "logs", DaemonState.connect(redis_url), config=DaemonConfig(), classifier=dummy)
    with pytest.raises(Built):
        daemon.handler_factory()
    mark("daemon")
    # demo pipeline
    with pytest.raises(Built):
        diagnose_example(tmp_path / "demo", seed=0, llm=False, say=lambda _m: None)
    mark("demo pipeline")
    # simulator
    with SimulationInsights(SimConfig(redis_url=redis_url, work_dir=tmp_path / "sim"), embedder=dummy,
                            classifier=dummy) as sim:
        sim._retriever()  # noqa: SLF001 -- the advisor's retriever, as `advise` builds it
        sim._tracker()  # noqa: SLF001
        with pytest.raises(Built):
            sim._handler()  # noqa: SLF001
    mark("simulator")

    counts = list(entry.values())
    assert all(b > a for a, b in zip([0, *counts], counts, strict=False)), entry  # each built its own stack
    assert all(c.settings() == AgentStackConfig().settings() for c in built["stacks"]), built["stacks"]
    default_handler = AgentStack(AgentStackConfig(), classifier=dummy).handler_config()
    assert built["handlers"] and all(h == default_handler for h in built["handlers"])
    assert default_handler == FailureHandlerConfig()  # the stack's default is the handler's own
    assert built["retrievers"] and set(built["retrievers"]) == {(DEFAULT_THRESHOLD, DEFAULT_TOP_K)}


# ----------------------------------------------------------------------------- same estimate


@pytest.mark.parametrize(("status", "method"), [(FinalStatus.COMPLETED, "rate x plan"),
                                                (FinalStatus.FAILED, "mean of similar jobs")])
def test_the_simulators_advisor_and_schedmate_advise_give_the_same_estimate(
        models: dict[str, Any], redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        status: FinalStatus, method: str) -> None:
    from schedmate.embeddings.store import DEFAULT_PREFIX
    from schedmate.sim.semantic import SimConfig, SimulationInsights

    monkeypatch.setattr(cli_jobs, "load_embedder", lambda: models["embedder"])
    target = spec("target", 4, 7200.0)
    history = twins(target, "h", 3, status)  # completed: a rate from their logs; failed: no rate, the mean
    others = [spec(f"o{i}", g, d) for i, (g, d) in enumerate(itertools.product((1, 8), (600.0, 86400.0)))]
    # the simulator writes its history where `schedmate history` keeps it: the store's default prefix
    cfg = SimConfig(seed=SEED, redis_url=redis_url, store_prefix=DEFAULT_PREFIX, work_dir=tmp_path / "sim")
    with SimulationInsights(cfg, **models) as sim:
        sim.prepare([target])
        assert sim.ingest_history(history + others) == len(history) + len(others)
        got = sim.advise(JobState(target))
        art = sim.artefact("target")
    assert art is not None and got is not None and got.duration_s is not None
    repo = art.render()
    repo.write(tmp_path / "repo")
    result = runner.invoke(app, ["advise", str(tmp_path / "repo"), "--cmd", repo.command, "--gpus", str(art.gpus),
                                 "--nodes", str(art.nodes), "--redis-url", redis_url, "--json"])
    assert result.exit_code == 0, result.output
    cli = Advice.model_validate_json(result.stdout)  # the advisor's wire model (agents/advisor/wire.py)
    est = cli.estimate
    assert est is not None and est.note.startswith(f"{method}:")
    assert got.duration_s == pytest.approx(est.duration_s, rel=1e-9)
    assert got.duration_top3_s == pytest.approx(est.duration_s, rel=1e-9)  # what the SJF arms read
    assert got.sm_util == pytest.approx(est.sm_util, rel=1e-9)
    assert est.n_matches == len(history)
    assert set(got.similar_ids) == {m.job_id for m in cli.matches} == {h.job_id for h in history}


def test_estimate_job_is_the_function_both_paths_call(models: dict[str, Any], redis_url: str) -> None:
    """`estimate_job` over a retriever equals `estimate_from_pool` over that retriever's pool."""
    from schedmate.agents.advisor.estimator import estimate_from_pool
    from schedmate.agents.advisor.retriever import HistoricalJob
    from schedmate.embeddings.store import JobOutcome, JobStore

    cfg = AgentStackConfig()
    fields = {"model_name": "gpt-2", "dataset": "wikitext-103", "task_type": "causal-lm", "iterations": 6000,
              "iteration_type": "steps", "batch_size": 8}
    with JobStore.connect(redis_url, models["embedder"].dim, prefix="stack-test") as store:
        stack = AgentStack(cfg, embedder=models["embedder"])
        retriever = stack.retriever(store)
        retriever.ingest([
            HistoricalJob("done", {**fields, "iterations": 4000}, JobOutcome(duration=1800, final_status="completed",
                                                                            step_time_s=0.4, startup_s=100), gpus=8),
            HistoricalJob("crashed", {**fields, "iterations": 4000}, JobOutcome(duration=60, final_status="failed",
                                                                               step_time_s=9.0, startup_s=100), gpus=8),
        ])
        est = estimate_job(fields, 8, None, retriever, cfg)
        pool = retriever.query(fields, gpus=8, threshold=-1.0, top_k=cfg.pool_k).matches
    assert est == estimate_from_pool(fields, 8, pool, threshold=cfg.threshold, top_k=cfg.top_k)
    # only the completed run gives the step time: 100 s startup + 6000 x 0.4 s
    assert est.method == "rate x plan" and est.based_on == ("done",) and est.duration_s == pytest.approx(2500.0)
