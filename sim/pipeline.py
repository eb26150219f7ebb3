"""The main job: the whole SchedMate pipeline on embedded defaults, in minutes, with one report.

    schedmate demo --out results/demo

1. Redis, embedder and (optionally) the local LLM start on loopback on first use;
2. a small history of jobs with generated code is ingested into Redis (`SemanticSources`);
3. case 1 on the synthetic default trace: Lucid vs Lucid+SchedMate (real advisor and tracker);
4. case 3 on the same kind of trace with failures on: standalone SchedMate (± Failure Handler)
   vs FIFO, QSSF, Tiresias (real advisor and failure handler);
5. one failed job's log is diagnosed end to end (locate → classify → similar → dry-run plan),
   with the local LLM when it is installed (rules alone otherwise: the report says which);
6. `report.html` (for people: verdict first, tables, plots, quoted log lines, the plan as steps;
   `main_report.py`), `report.md` and `report.json` under `out`.

Every step is timed; a step that fails is reported as failed and the rest still runs.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MainJobConfig", "MainJobReport", "run_main_job"]


@dataclass(frozen=True)
class MainJobConfig:
    jobs: int = 400  # synthetic trace size per case study
    history: int = 300
    seed: int = 0
    llm: bool = True  # diagnose the failed job with the local LLM when available
    cache_dir: Path | None = None  # agent-result cache (default <out>/cache)


@dataclass
class MainJobReport:
    out: Path
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {status, seconds, summary}
    lucid: Any = None
    standalone: Any = None
    diagnosis: dict[str, Any] | None = None
    agents: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s["status"] == "ok" for s in self.steps.values())


Say = Callable[[str], None]


@contextmanager
def _step(report: MainJobReport, name: str, say: Say) -> Iterator[dict[str, Any]]:
    entry: dict[str, Any] = {"status": "running"}
    report.steps[name] = entry
    say(f"{name} …")
    t0 = time.perf_counter()
    try:
        yield entry
        entry["status"] = "ok"
    except Exception as exc:  # noqa: BLE001 -- one failed step must not lose the others' results
        entry["status"] = "failed"
        entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["trace"] = traceback.format_exc(limit=6)
        say(f"{name} failed: {entry['error']}")
    finally:
        entry["seconds"] = round(time.perf_counter() - t0, 1)


def run_main_job(out: Path | str, config: MainJobConfig | None = None, *, progress: Say | None = None) -> MainJobReport:
    from schedmate.sim.experiments.lucid import run_lucid_experiment
    from schedmate.sim.experiments.sources import SemanticSources
    from schedmate.sim.experiments.standalone import run_standalone_experiment

    cfg = config or MainJobConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _m: None)
    report = MainJobReport(out)
    with SemanticSources(cache_dir=cfg.cache_dir or out / "cache", history=cfg.history) as make:
        with _step(report, "case 1: Lucid vs Lucid+SchedMate", say) as st:
            report.lucid = run_lucid_experiment(
                out / "lucid", make_source=make, source_label=make.label, traces=["synthetic"], seeds=[cfg.seed],
                n_jobs=cfg.jobs, sweep=(), arms=["lucid", "lucid+sm", "tiresias", "qssf"], progress=say)
            st["summary"] = report.lucid.summary
        with _step(report, "case 3: standalone SchedMate with failures", say) as st:
            report.standalone = run_standalone_experiment(
                out / "standalone", make_source=make, source_label=make.label, trace="synthetic", n_jobs=cfg.jobs,
                seeds=[cfg.seed], resubmit_delays=(), detection_rates=(), progress=say)
            st["summary"] = report.standalone.summary
        report.agents = make.stats()
    with _step(report, "diagnose one failed job", say) as st:
        report.diagnosis = diagnose_example(out / "failed-job", seed=cfg.seed, llm=cfg.llm, say=say)
        st["summary"] = (f"{report.diagnosis['category']} / {report.diagnosis['reason_code']} "
                         f"at line {report.diagnosis['line']} (LLM: {report.diagnosis['llm_status']})")
    write_report(report)
    return report


def diagnose_example(folder: Path, *, seed: int, llm: bool, say: Say) -> dict[str, Any]:
    """Generate one failed multi-node log (an InfiniBand fault under NCCL) and diagnose it."""
    from contextlib import ExitStack

    from schedmate.agents.stack import AgentStack, AgentStackConfig
    from schedmate.logspec import LogSpec, LogStatus
    from schedmate.synthetic.logs.generator import generate_log
    from schedmate.taxonomy import FailureReason

    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "train.log"
    spec = LogSpec(n_lines=20_000, status=LogStatus.FAILED, failure_reason=FailureReason.NETWORK_ERROR, world_size=16)
    _, labels = generate_log(spec, seed, out=log, log_id="demo-failed-job")
    config = AgentStackConfig().with_llm() if llm else AgentStackConfig()  # the deployed agents (agents.stack)
    with ExitStack() as stack:
        chat, llm_note = None, "disabled"
        if config.llm is not None:
            try:
                from schedmate.llm import open_chat_model

                chat = stack.enter_context(open_chat_model(config.llm))
            except Exception as exc:  # noqa: BLE001 -- no local model: rules only, said in the report
                llm_note = f"unavailable ({type(exc).__name__}: {exc})"[:200]
                say(f"local LLM unavailable, rules only: {llm_note}")
        handler = AgentStack(config, chat_model=chat).handler()
        diag = handler.diagnose(log, {"job_id": "demo-failed-job", "nodes": ["gpu-node-07", "gpu-node-08"]})
    from schedmate.agents.failure.wire import diagnosis_of

    failure = labels.model_dump(mode="json").get("failure") or {}
    first = failure.get("first_line")  # the generator's label: a 0-based index
    wire = diagnosis_of(diag)  # the model the CLI, the service and the daemon give (1-based lines)
    if chat is None:
        wire = wire.model_copy(update={"llm_status": llm_note})
    # the Failure Handler's `Diagnosis` as every surface sends it, and the generator's label beside it,
    # both numbered from 1; the label is only read here, after the handler has answered
    truth = {"reason": failure.get("reason"), "first_error_line": first + 1 if first is not None else None}
    return {**wire.model_dump(mode="json"), "truth": truth}


# ===================================================================================== report


def _rows(result: Any) -> list[dict[str, Any]]:
    return list(getattr(result, "aggregate", None) or [])


def write_report(report: MainJobReport) -> None:
    """`report.json` (the figures, the diagnosis as the wire `Diagnosis`), then `report.html` and
    `report.md`: one `Report` model (sim/main_report.py) rendered twice, never Markdown by hand."""
    from schedmate.sim.main_report import write_main_html

    out = report.out
    (out / "report.json").write_text(json.dumps({
        "steps": report.steps, "lucid": _rows(report.lucid), "standalone": _rows(report.standalone),
        "diagnosis": report.diagnosis, "agents": report.agents}, indent=2, default=str) + "\n", encoding="utf-8")
    write_main_html(out)  # report.html and report.md for people: verdict first (sim/main_report.py)
