"""Everything about one simulated job that its log lines share: hosts, ranks, pids, prefixes,
paths, versions, start time and the timestamp formats frameworks print."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from schedmate.logspec import Framework, Launcher, LogSpec, RankPrefix, resolved

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

# ANSI SGR codes used by loguru, torchtitan's Color and colour-enabled loggers.
RESET = "\x1b[0m"
BOLD = "\x1b[1m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
BLUE = "\x1b[34m"
MAGENTA = "\x1b[35m"
CYAN = "\x1b[36m"
DEFAULT_FG = "\x1b[39m"


@dataclass
class JobContext:
    spec: LogSpec
    framework: Framework
    world_size: int
    gpus_per_node: int
    visible: list[int]  # ranks whose output this log holds
    hosts: list[str]  # one per node
    ips: list[str]  # one per node
    pids: list[int]  # one per rank
    agent_pid: int
    start: float  # POSIX seconds of the job's first line
    site: str  # site-packages directory
    python: str  # interpreter path
    workdir: str
    script: str
    torch_new: bool  # torch >= 2.2 logging (glog-style launcher lines, `[rank3]:`, NumelIn/NumelOut)
    py311: bool  # Python 3.11 tracebacks (`^^^^` markers)
    nccl_version: str
    torch_version: str
    job_id: int
    model_name: str
    n_params: int
    bus_ids: list[str]  # PCI bus id per local GPU
    ansi: bool
    prefix_style: RankPrefix
    _prefix: dict[int, str] = field(default_factory=dict)

    @classmethod
    def build(cls, spec: LogSpec, rng: np.random.Generator) -> JobContext:
        fw = Framework(resolved(spec.framework))
        world = int(resolved(spec.world_size))
        gpn = 8 if world >= 8 else world
        n_nodes = -(-world // gpn)
        style = int(rng.integers(4))
        stem = ("node-{}", "gpu-a100-{:03d}", "dgx{:02d}", "worker-{}")[style]
        base = int(rng.integers(0, 60))
        hosts = [stem.format(base + i) for i in range(n_nodes)]
        subnet = int(rng.integers(0, 200))
        ips = [f"10.{subnet}.{(base + i) // 250}.{(base + i) % 250 + 2}" for i in range(n_nodes)]
        pid0 = int(rng.integers(1000, 400000))
        pids = [pid0 + 1 + (r % gpn) + 97 * (r // gpn) for r in range(world)]
        site = (
            "/usr/local/lib/python3.10/dist-packages",
            "/opt/conda/lib/python3.10/site-packages",
            f"/home/{('alice', 'bob', 'mlops', 'svc-train')[int(rng.integers(4))]}/miniconda3/envs/train/lib/python3.11/site-packages",
        )[int(rng.integers(3))]
        python = "/usr/bin/python3" if site.startswith("/usr") else site.split("/lib/python")[0] + "/bin/python"
        workdir, script = {
            Framework.MEGATRON: ("/workspace/Megatron-LM", "pretrain_gpt.py"),
            Framework.DEEPSPEED: ("/workspace/DeepSpeedExamples/training/step1_supervised_finetuning", "main.py"),
            Framework.HF_TRAINER: ("/workspace/transformers/examples/pytorch/language-modeling", "run_clm.py"),
            Framework.LIGHTNING: ("/workspace/lit-project", "train.py"),
            Framework.PYTORCH: ("/workspace/nanoGPT", "train.py"),
        }[fw]
        model_name = ("gpt2", "meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1", "EleutherAI/pythia-1.4b",
                      "Qwen/Qwen2.5-7B", "bert-base-uncased")[int(rng.integers(6))]
        n_params = int(rng.choice([124_439_808, 354_823_168, 1_414_647_808, 6_738_415_616, 13_015_864_320]))
        bus = [f"{int(x):02x}" for x in sorted(rng.choice(np.arange(0x10, 0xf0), size=gpn, replace=False))]
        ctx = cls(
            spec=spec, framework=fw, world_size=world, gpus_per_node=gpn,
            visible=list(range(min(int(resolved(spec.visible_ranks)), world))), hosts=hosts, ips=ips, pids=pids,
            agent_pid=pid0, start=1_672_531_200.0 + float(rng.uniform(0, 2.5 * 365 * 86400)),
            site=site, python=python, workdir=workdir, script=script,
            torch_new=bool(rng.random() < 0.6), py311="python3.11" in site,
            nccl_version=("2.18.1", "2.19.3", "2.20.5", "2.21.5")[int(rng.integers(4))],
            torch_version=("2.1.2", "2.3.1", "2.4.0", "2.5.1")[int(rng.integers(4))],
            job_id=int(rng.integers(100_000, 9_999_999)), model_name=model_name, n_params=n_params,
            bus_ids=bus, ansi=bool(spec.ansi), prefix_style=RankPrefix(resolved(spec.rank_prefix)),
        )
        if spec.launcher == Launcher.TORCHRUN and spec.rank_prefix == RankPrefix.TORCHRUN:
            ctx.torch_new = True
        return ctx

    # ---- ranks -------------------------------------------------------------------------------------
    def host_of(self, rank: int) -> str:
        return self.hosts[rank // self.gpus_per_node]

    def ip_of(self, rank: int) -> str:
        return self.ips[rank // self.gpus_per_node]

    def local(self, rank: int) -> int:
        return rank % self.gpus_per_node

    def prefix(self, rank: int) -> str:
        """The launcher's mark on a line printed by `rank` ('' when the launcher adds none)."""
        p = self._prefix.get(rank)
        if p is None:
            s = self.prefix_style
            p = {
                RankPrefix.NONE: "",
                RankPrefix.TORCHRUN: f"[rank{rank}]:",
                RankPrefix.TORCHRUN_LEGACY: f"[default{self.local(rank)}]:",
                RankPrefix.PDSH: f"{self.host_of(rank)}: ",
                RankPrefix.MPI: f"[1,{rank}]<stdout>:",
                RankPrefix.SRUN: f"{rank}: ",
            }[s]
            self._prefix[rank] = p
        return p

    def exc_prefix(self, rank: int) -> str:
        """Prefix of a line of a Python exception (`[rank3]: Traceback ...` under torch >= 2.2)."""
        p = self.prefix(rank)
        if self.prefix_style is RankPrefix.MPI:
            return p.replace("<stdout>", "<stderr>")
        return p + " " if self.prefix_style is RankPrefix.TORCHRUN else p

    def nccl_head(self, rank: int, tid_offset: int = 0) -> str:
        """`host:pid:tid [local_rank]` as NCCL prints it."""
        pid = self.pids[rank]
        return f"{self.host_of(rank)}:{pid}:{pid + tid_offset} [{self.local(rank)}]"

    @property
    def last_visible(self) -> int:
        return self.visible[-1]

    # ---- time --------------------------------------------------------------------------------------
    def ts(self, t: float, style: str = "ds") -> str:
        """Timestamp `t` seconds after the job started, in a framework's format."""
        x = self.start + t
        g = time.gmtime(x)
        ms = int((x - int(x)) * 1000)
        if style == "ds":  # python logging default: 2024-05-01 12:00:00,123
            return "%04d-%02d-%02d %02d:%02d:%02d,%03d" % (g[0], g[1], g[2], g[3], g[4], g[5], ms)
        if style == "sec":  # Megatron: 2024-05-01 12:00:00
            return "%04d-%02d-%02d %02d:%02d:%02d" % g[:6]
        if style == "dot":  # loguru / torchtitan: 2024-05-01 12:00:00.123
            return "%04d-%02d-%02d %02d:%02d:%02d.%03d" % (g[0], g[1], g[2], g[3], g[4], g[5], ms)
        if style == "glog":  # W0501 12:00:00.123000 <pid> -> caller adds level letter and pid
            return "%02d%02d %02d:%02d:%02d.%06d" % (g[1], g[2], g[3], g[4], g[5], ms * 1000)
        if style == "elastic":  # 2024-05-01_12:00:00
            return "%04d-%02d-%02d_%02d:%02d:%02d" % g[:6]
        if style == "iso":  # slurm: 2024-05-01T12:00:00
            return "%04d-%02d-%02dT%02d:%02d:%02d" % g[:6]
        if style == "dmesg":  # dmesg -T: Tue May  1 12:00:00 2024
            return "%s %s %2d %02d:%02d:%02d %04d" % (_DAYS[g[6]], _MONTHS[g[1] - 1], g[2], g[3], g[4], g[5], g[0])
        raise ValueError(style)

    def ts_many(self, t: np.ndarray, style: str) -> list[str]:
        """`ts` for many times at once (the same strings, computed with numpy)."""
        x = self.start + np.asarray(t, dtype=np.float64)
        secs = np.floor(x).astype(np.int64)
        ms = ((x - secs) * 1000).astype(np.int64).tolist()
        day = secs // 86400
        sod = secs - day * 86400
        hh, mm, ss = (sod // 3600).tolist(), (sod // 60 % 60).tolist(), (sod % 60).tolist()
        dates = {d: "%04d-%02d-%02d" % time.gmtime(d * 86400)[:3] for d in np.unique(day).tolist()}
        dl = [dates[d] for d in day.tolist()]
        if style == "ds":
            return ["%s %02d:%02d:%02d,%03d" % r for r in zip(dl, hh, mm, ss, ms)]
        if style == "dot":
            return ["%s %02d:%02d:%02d.%03d" % r for r in zip(dl, hh, mm, ss, ms)]
        if style == "sec":
            return ["%s %02d:%02d:%02d" % r for r in zip(dl, hh, mm, ss)]
        return [self.ts(v, style) for v in np.asarray(t).tolist()]

    def glog(self, level: str, t: float, pid: int, where: str) -> str:
        """A c10/glog header as torch >= 2.2 prints it: `W0501 12:00:00.123000 140234 file.py:897] `."""
        return f"{level}{self.ts(t, 'glog')} {pid} {where}] "

    # ---- colour ------------------------------------------------------------------------------------
    def c(self, text: str, code: str) -> str:
        return f"{code}{text}{RESET}" if self.ansi else text
