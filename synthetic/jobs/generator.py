"""Job corpus: generated training projects with their ground truth and recorded outcomes.

`generate_job(workload, seed)` builds one job in memory (repository, truth, outcome, log spec).
`generate_job_corpus(out_dir, n, seed)` builds a history the way a cluster accumulates one:
a few users (Zipf-popular) each run a few experiments (a family, a code base) and resubmit them,
often unchanged (reruns after failures), sometimes with one knob changed (lr, batch size, length,
GPUs). Repositories go to `out_dir/jobs/<id>/`; the labels stay outside them, in
`out_dir/manifest.jsonl` (one `CorpusJob` per line) and `out_dir/corpus.json` (the parameters).
Same arguments, same bytes.

`users_mode="shared"` is the other setting ("one codebase, many users", like the paper's Mars
trace): experiments belong to no user; every job is submitted by a (Zipf-popular) user drawn
independently of the experiment it reruns, so the user id carries no workload information.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from schedmate.workload import WorkloadMetadata

from .codegen import Repo, render_repo
from .history import Outcome, UserProfile, make_user, simulate_outcome
from .workloads import FAMILY_KEYS, WorkloadConfig, WorkloadFamily, get_family, nodes_for, sample_config, sample_steps

__all__ = [
    "GENERATOR_VERSION",
    "GeneratedJob",
    "JobCorpusManifest",
    "CorpusJob",
    "Launch",
    "generate_job",
    "generate_job_corpus",
    "load_manifest",
]

GENERATOR_VERSION = 1
UsersMode = Literal["family", "shared"]
USERS_MODES: tuple[str, ...] = ("family", "shared")
MANIFEST = "manifest.jsonl"
CORPUS_INFO = "corpus.json"


class Launch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gpus: int
    nodes: int
    command: str


class CodeInfo(BaseModel):
    """How the repository states its values (for analysis; not an input to the extractor)."""

    model_config = ConfigDict(extra="forbid")

    style: str
    launcher: str
    entrypoint: str
    traps: list[str]
    evidence: dict[str, tuple[str, str, str]]  # label -> (file or '<command>', snippet, literal)


class CorpusJob(BaseModel):
    """One manifest line."""

    model_config = ConfigDict(extra="forbid")

    id: str
    repo: str  # repository path relative to the corpus root
    family: str
    experiment: str  # jobs of one experiment share code and (up to one changed knob) config
    truth: WorkloadMetadata
    launch: Launch
    outcome: Outcome
    user: str
    vc: str
    submit_time: float
    log_spec: dict[str, Any]
    config: dict[str, Any]
    code: CodeInfo

    def workload_config(self) -> WorkloadConfig:
        return WorkloadConfig.from_dict(self.config)

    def to_jobspec(self, root: Path | str | None = None) -> Any:
        """A `schedulers.job.JobSpec` for simulations (code_dir absolute when `root` is given)."""
        from schedmate.schedulers.job import FinalStatus, JobSpec

        work = None if self.outcome.status == "completed" else max(self.outcome.planned_duration_s, self.outcome.duration_s)
        return JobSpec(
            job_id=self.id, submit_time=self.submit_time, num_gpus=self.launch.gpus, duration=self.outcome.duration_s,
            status=FinalStatus(self.outcome.status), user=self.user, vc=self.vc, name=self.experiment, work=work,
            attributes={"workload_family": self.family, "truth": self.truth.model_dump(), "log_spec": self.log_spec,
                        "command": self.launch.command},
            code_dir=str(Path(root) / self.repo) if root is not None else self.repo,
        )


@dataclass
class GeneratedJob:
    job_id: str
    config: WorkloadConfig
    repo: Repo
    outcome: Outcome
    log_spec: dict[str, Any]
    user: UserProfile
    submit_time: float = 0.0
    experiment: str = ""

    @property
    def family(self) -> str:
        return self.config.family

    @property
    def truth(self) -> WorkloadMetadata:
        return self.config.truth()

    @property
    def launch(self) -> Launch:
        return Launch(gpus=self.config.gpus, nodes=self.config.nodes, command=self.repo.command)

    def write(self, dest: Path) -> None:
        """Write the repository (only the repository: labels never go inside it)."""
        self.repo.write(Path(dest))

    def record(self, repo_rel: str) -> CorpusJob:
        return CorpusJob(
            id=self.job_id, repo=repo_rel, family=self.family, experiment=self.experiment or self.job_id,
            truth=self.truth, launch=self.launch, outcome=self.outcome, user=self.user.name, vc=self.user.vc,
            submit_time=round(self.submit_time, 1), log_spec=self.log_spec, config=self.config.to_dict(),
            code=CodeInfo(style=self.config.style, launcher=self.config.launcher, entrypoint=self.repo.entrypoint,
                          traps=self.repo.traps, evidence=self.repo.evidence),
        )


def _rng(*parts: Any) -> random.Random:
    return random.Random(":".join(str(p) for p in parts))


def generate_job(
    workload: str | WorkloadFamily | WorkloadConfig,
    seed: int,
    *,
    job_id: str | None = None,
    user: UserProfile | None = None,
    submit_time: float = 0.0,
    experiment: str = "",
) -> GeneratedJob:
    """One job of `workload` (a family key, a family, or a concrete config), deterministic in `seed`.

    A family draws a config from `seed`; a config is used as is (its layout_seed fixes the repo),
    and `seed` then only draws the run's outcome.
    """
    cfg = workload if isinstance(workload, WorkloadConfig) else sample_config(get_family(workload), _rng("cfg", seed))
    user = user or make_user(_rng("user", seed))
    outcome, log_spec = simulate_outcome(cfg, _rng("run", seed, cfg.family), user)
    return GeneratedJob(job_id=job_id or f"job-{seed}", config=cfg, repo=render_repo(cfg), outcome=outcome,
                        log_spec=log_spec, user=user, submit_time=submit_time, experiment=experiment)


# --------------------------------------------------------------------------------------------- corpus


@dataclass
class _Experiment:
    key: str
    config: WorkloadConfig


@dataclass
class _User:
    profile: UserProfile
    families: list[str]
    style_bias: float  # probability of reusing their favourite style when a family allows it
    experiments: list[_Experiment] = field(default_factory=list)


def _tweak(cfg: WorkloadConfig, rng: random.Random) -> WorkloadConfig:
    """One knob changed, as people do between submissions."""
    fam = cfg.family_spec
    knob = rng.choice(("lr", "batch", "length", "gpus", "workers"))
    if knob == "lr":
        lrs = [x for x in (fam.lora_lr_choices if cfg.finetune == "lora" else fam.lr_choices) if x != cfg.learning_rate]
        return replace(cfg, learning_rate=rng.choice(lrs)) if lrs else cfg
    if knob == "batch":
        choices = [b for b in fam.batch_choices if b != cfg.batch_size and (not fam.batch_is_global or b % cfg.gpus == 0)]
        return replace(cfg, batch_size=rng.choice(choices)) if choices else cfg
    if knob == "length":
        if cfg.iteration_type == "epochs":
            choices = [e for e in fam.epoch_choices if e != cfg.iterations]
            return replace(cfg, iterations=rng.choice(choices)) if choices else cfg
        return replace(cfg, iterations=sample_steps(fam, rng))
    if knob == "gpus":
        choices = [g for g, _ in fam.gpu_choices if g != cfg.gpus and (not fam.batch_is_global or cfg.batch_size % g == 0)]
        if not choices or fam.program == "megatron":
            return cfg
        g = rng.choice(choices)
        n = nodes_for(g)
        launcher = cfg.launcher
        if n > 1 and launcher in ("python", "torchrun", "accelerate", "accelerate_script"):
            launcher = "slurm"
        if g == 1 and launcher in ("torchrun", "deepspeed", "accelerate") and fam.program not in ("diffusion",):
            launcher = "python"
        return replace(cfg, gpus=g, nodes=n, launcher=launcher)
    choices = [w for w in fam.workers_choices if w != cfg.num_workers]
    return replace(cfg, num_workers=rng.choice(choices)) if choices else cfg


def _families(families: Sequence[str] | None) -> list[str]:
    if families is None:
        return list(FAMILY_KEYS)
    out = [get_family(f).key for f in families]
    if not out:
        raise ValueError("families must not be empty")
    return out


def _make_users(rng: random.Random, n_users: int, families: list[str]) -> list[_User]:
    """Users with 1-3 favourite families; favourites dealt round-robin so every family has users."""
    deck = list(families)
    rng.shuffle(deck)
    users = []
    for i in range(n_users):
        profile = make_user(rng, name=f"user{i:03d}")
        k = min(len(families), rng.choice((1, 2, 2, 3)))
        favourites = [deck[(i + j * n_users) % len(deck)] for j in range(k)]
        users.append(_User(profile, list(dict.fromkeys(favourites)), style_bias=rng.uniform(0.5, 0.9)))
    return users


def _new_experiment(user: _User, rng: random.Random, key: str, families: list[str]) -> _Experiment:
    fam = get_family(rng.choice(user.families) if rng.random() < 0.8 else rng.choice(families))
    style = None
    if user.experiments and rng.random() < user.style_bias:
        previous = user.experiments[-1].config.style
        style = previous if previous in fam.styles else None
    return _Experiment(key, sample_config(fam, rng, style=style))


def iter_corpus_jobs(n: int, seed: int, *, families: Sequence[str] | None = None,
                     span_days: float = 30.0, users_mode: UsersMode = "family") -> Iterator[GeneratedJob]:
    """The jobs of `generate_job_corpus`, in submit order, without writing anything."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if users_mode not in USERS_MODES:
        raise ValueError(f"users_mode must be one of {USERS_MODES}, got {users_mode!r}")
    fams = _families(families)
    rng = _rng("corpus", seed)
    n_users = max(3, min(n, round(1.5 * math.sqrt(max(n, 1)))))
    users = _make_users(rng, n_users, fams)
    popularity = [1.0 / (i + 1) ** 0.8 for i in range(n_users)]  # a few users submit most jobs
    mean_gap = span_days * 86400.0 / max(n, 1)
    t = 0.0
    n_exp = 0
    shared: list[_Experiment] = []  # users_mode="shared": one pool of experiments, no owner
    for i in range(n):
        t += rng.expovariate(1.0 / mean_gap)
        user = rng.choices(users, weights=popularity)[0]
        if users_mode == "shared":
            if not shared or rng.random() < 0.3:
                exp = _Experiment(f"exp-{n_exp:04d}", sample_config(get_family(rng.choice(fams)), rng))
                n_exp += 1
                shared.append(exp)
                cfg = exp.config
            else:
                exp = rng.choice(shared[-3:])
                cfg = exp.config if rng.random() < 0.5 else _tweak(exp.config, rng)
        elif not user.experiments or rng.random() < 0.3:
            exp = _new_experiment(user, rng, f"exp-{n_exp:04d}", fams)
            n_exp += 1
            user.experiments.append(exp)
            cfg = exp.config
        else:
            exp = rng.choice(user.experiments[-3:])
            cfg = exp.config if rng.random() < 0.5 else _tweak(exp.config, rng)
        yield generate_job(cfg, seed * 1_000_003 + i, job_id=f"job-{i:05d}", user=user.profile,
                           submit_time=t, experiment=exp.key)


@dataclass
class JobCorpusManifest:
    """A corpus on disk: its parameters and one record per job (iterable, in submit order)."""

    root: Path
    seed: int
    n: int
    families: list[str]
    records: list[CorpusJob]
    version: int = GENERATOR_VERSION
    users_mode: str = "family"

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[CorpusJob]:
        return iter(self.records)

    def by_id(self, job_id: str) -> CorpusJob:
        for rec in self.records:
            if rec.id == job_id:
                return rec
        raise KeyError(job_id)

    def repo_dir(self, record: CorpusJob | str) -> Path:
        rec = self.by_id(record) if isinstance(record, str) else record
        return self.root / rec.repo

    def to_jobspecs(self) -> list[Any]:
        return [rec.to_jobspec(self.root) for rec in self.records]


def generate_job_corpus(
    out_dir: Path,
    n: int,
    seed: int,
    *,
    families: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    span_days: float = 30.0,
    users_mode: UsersMode = "family",
) -> JobCorpusManifest:
    """Write `n` jobs under `out_dir/jobs/` plus `manifest.jsonl` and `corpus.json`; return the manifest.

    `progress(done, total)` is called after each job (for a Rich progress bar).
    """
    out = Path(out_dir)
    fams = _families(families)
    (out / "jobs").mkdir(parents=True, exist_ok=True)
    records: list[CorpusJob] = []
    with open(out / MANIFEST, "w", encoding="utf-8") as manifest:
        jobs = iter_corpus_jobs(n, seed, families=fams, span_days=span_days, users_mode=users_mode)
        for done, job in enumerate(jobs, start=1):
            rel = f"jobs/{job.job_id}"
            job.write(out / rel)
            rec = job.record(rel)
            records.append(rec)
            manifest.write(rec.model_dump_json() + "\n")
            if progress is not None:
                progress(done, n)
    info: dict[str, Any] = {"version": GENERATOR_VERSION, "seed": seed, "n": n, "families": fams,
                            "span_days": span_days}
    if users_mode != "family":  # the default corpus.json stays byte-identical
        info["users_mode"] = users_mode
    (out / CORPUS_INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return JobCorpusManifest(root=out, seed=seed, n=n, families=fams, records=records, users_mode=users_mode)


def load_manifest(corpus_dir: Path | str) -> JobCorpusManifest:
    """Read a corpus written by `generate_job_corpus`."""
    root = Path(corpus_dir)
    path = root / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no {MANIFEST} in {root}")
    records = [CorpusJob.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    info: dict[str, Any] = {}
    if (root / CORPUS_INFO).is_file():
        info = json.loads((root / CORPUS_INFO).read_text(encoding="utf-8"))
    return JobCorpusManifest(
        root=root, seed=int(info.get("seed", -1)), n=int(info.get("n", len(records))),
        families=list(info.get("families", sorted({r.family for r in records}))),
        version=int(info.get("version", GENERATOR_VERSION)), records=records,
        users_mode=str(info.get("users_mode", "family")),
    )
