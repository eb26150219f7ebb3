"""Measured application profiles from Sia's artifact (`sia/traces/<app>/`), read by path.

Per application and GPU profile (`aws`, `azure`, `dgx`, `dgx-ext`, `quad`, `rtx`):
- `placements-<gpu>.csv` (placement, local_bsz, step_time, sync_time): `placement` is one digit per
  node (GPUs used there), so "44" is 2 nodes × 4 replicas;
- `scalability-<gpu>.csv` (num_nodes, num_replicas, local_bsz, step_time, sync_time);
- `validation-<bsz>.csv` (progress, iteration, metric, grad_sqr, grad_var), one row per epoch:
  `progress` counts iterations at the initial (smallest) batch size, scaled by statistical
  efficiency; `grad_sqr`/`grad_var` are the gradient statistics behind that efficiency.

`step_time` is one optimiser step (compute + synchronisation); `sync_time` is the part spent in
gradient synchronisation, so `step_time - sync_time` is the compute (accumulation) time.

Our GPU type names map to profile names with `profile_name` (`T4`→aws, `A100`→dgx-ext,
`2080Ti`→rtx, ...); profile names themselves are accepted too. `SIA_CLUSTER` is the paper's
64-GPU cluster in `ClusterSpec.parse` syntax.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from schedmate.config import shared_data_dir

SIA_CLUSTER = "6x4:T4,2x8:A100,3x8:2080Ti"
"""The paper's heterogeneous cluster: 6×4 T4 (aws), 2×8 A100 (dgx-ext), 3×8 RTX 2080Ti (rtx)."""

GPU_PROFILES: dict[str, str] = {
    "T4": "aws",  # g4dn.12xlarge: 4× T4
    "A100": "dgx-ext",  # 8× A100
    "A100-DGX": "dgx",
    "2080Ti": "rtx",  # 8× RTX 2080Ti
    "RTX2080Ti": "rtx",
    "V100": "azure",  # ND40rs_v2: 8× V100
    "RTX6000": "quad",  # 4× Quadro RTX 6000
}
PROFILE_NAMES = ("aws", "azure", "dgx", "dgx-ext", "quad", "rtx")
APPLICATIONS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
PROFILE_GPUS_PER_NODE: dict[str, int] = {"aws": 4, "azure": 8, "dgx": 8, "dgx-ext": 8, "quad": 4, "rtx": 8}
BASE_PROFILE = "rtx"
"""The type Sia's workloads were generated (and its run times calibrated) on."""


@dataclass(frozen=True, slots=True)
class AppConstants:
    """Per-application constants from the Sia artifact (`applications.py`, `simulator_config.py`)."""

    max_epochs: int  # training length: the job ends after this many epochs
    restart_penalty: float  # seconds the policy charges per restart in the reallocation factor
    rescale_time: float  # measured checkpoint-restore seconds (the simulator's restart delay)
    slowdown: float  # calibration: real runs are this much slower than the profiles say


APP_CONSTANTS: dict[str, AppConstants] = {
    "bert": AppConstants(2, 120.0, 120.0, 1.2),
    "cifar10": AppConstants(100, 30.0, 50.0, 1.8),
    "deepspeech2": AppConstants(80, 25.0, 25.0, 1.2),
    "imagenet": AppConstants(90, 250.0, 250.0, 1.2),
    "ncf": AppConstants(10, 30.0, 15.0, 1.5),
    "yolov3": AppConstants(50, 45.0, 80.0, 1.2),
}
DEFAULT_CONSTANTS = AppConstants(10, 30.0, 30.0, 1.2)


def profile_name(gpu_type: str) -> str:
    """Profile name for one of our GPU type names (case-insensitive); profile names pass through."""
    if gpu_type in PROFILE_NAMES:
        return gpu_type
    for name, prof in GPU_PROFILES.items():
        if name.lower() == gpu_type.lower():
            return prof
    if gpu_type.lower() in PROFILE_NAMES:
        return gpu_type.lower()
    known = ", ".join(sorted(GPU_PROFILES))
    raise KeyError(f"no Sia profile for GPU type {gpu_type!r}; known types: {known} (or a profile name)")


def traces_dir(root: Path | str | None = None) -> Path:
    """`<shared data>/sia/traces`, or `root` when given. Raises FileNotFoundError when absent."""
    if root is not None:
        path = Path(root)
    else:
        shared = shared_data_dir()
        if shared is None:
            raise FileNotFoundError("shared data is absent (set SCHEDMATE_SHARED_DATA)")
        path = shared / "sia" / "traces"
    if not path.is_dir():
        raise FileNotFoundError(f"Sia traces folder not found: {path}")
    return path


@dataclass(frozen=True, eq=False)
class ProfileTable:
    """Measured step times on one GPU profile, one row per (num_nodes, num_replicas, local_bsz)."""

    num_nodes: np.ndarray
    num_replicas: np.ndarray
    local_bsz: np.ndarray
    step_time: np.ndarray
    sync_time: np.ndarray
    from_placements: np.ndarray  # True where the row came from placements-*.csv

    def __len__(self) -> int:
        return int(self.num_nodes.size)

    def subset(self, mask: np.ndarray) -> ProfileTable:
        return ProfileTable(
            self.num_nodes[mask],
            self.num_replicas[mask],
            self.local_bsz[mask],
            self.step_time[mask],
            self.sync_time[mask],
            self.from_placements[mask],
        )

    def as_dict(self) -> dict[tuple[int, int, int], tuple[float, float]]:
        """{(nodes, replicas, local_bsz): (step_time, sync_time)}; the first row of a key wins."""
        out: dict[tuple[int, int, int], tuple[float, float]] = {}
        for i in range(len(self)):
            key = (int(self.num_nodes[i]), int(self.num_replicas[i]), int(self.local_bsz[i]))
            out.setdefault(key, (float(self.step_time[i]), float(self.sync_time[i])))
        return out


@dataclass(frozen=True, eq=False)
class Validation:
    """Per-epoch training statistics at one batch size."""

    batch_size: int
    progress: np.ndarray  # cumulative progress at the end of each epoch
    grad_sqr: np.ndarray
    grad_var: np.ndarray


@dataclass(frozen=True, eq=False)
class AppProfile:
    """Everything measured about one application (compared and hashed by identity: cached)."""

    name: str
    tables: dict[str, ProfileTable]  # profile name -> measurements
    validations: dict[int, Validation]  # batch size -> statistics (sorted by batch size)
    constants: AppConstants
    epoch_progress: np.ndarray = field(repr=False)  # progress at the start of each epoch, length max_epochs + 1

    @property
    def init_batch_size(self) -> int:
        return min(self.validations)

    @property
    def max_batch_size(self) -> int:
        return max(self.validations)

    @property
    def max_epochs(self) -> int:
        return self.constants.max_epochs

    @property
    def target_progress(self) -> float:
        """Progress at which the job is done (the end of its last epoch)."""
        return float(self.epoch_progress[-1])

    def gpu_profiles(self) -> tuple[str, ...]:
        return tuple(sorted(self.tables))

    def local_bsz_range(self, profile: str) -> tuple[int, int]:
        """(min, max) per-GPU batch size measured on `profile` (memory bounds the max)."""
        table = self.tables[profile]
        lo, hi = int(table.local_bsz.min()), int(table.local_bsz.max())
        if self.name == "deepspeech2" and profile == "rtx":
            hi = min(hi, 57)  # the artifact's correction: larger batches do not fit a 2080Ti
        return lo, hi

    def epoch_of(self, progress: float) -> int:
        """Epoch index (0-based, capped at the last epoch) that `progress` falls in."""
        e = int(np.searchsorted(self.epoch_progress, progress, side="right")) - 1
        return min(max(e, 0), self.max_epochs - 1)

    def grad_stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) at `epoch`, interpolated linearly between measured batch sizes."""
        sizes = sorted(self.validations)
        b = min(max(float(batch_size), sizes[0]), sizes[-1])
        hi_i = int(np.searchsorted(sizes, b, side="left"))
        hi = sizes[hi_i]
        lo = sizes[hi_i - 1] if sizes[hi_i] > b else hi
        vlo, vhi = self.validations[lo], self.validations[hi]
        e = min(epoch, len(vlo.grad_sqr) - 1, len(vhi.grad_sqr) - 1)
        if lo == hi:
            return float(vlo.grad_sqr[e]), float(vlo.grad_var[e])
        w = (b - lo) / (hi - lo)
        sqr = (1 - w) * vlo.grad_sqr[e] + w * vhi.grad_sqr[e]
        var = (1 - w) * vlo.grad_var[e] + w * vhi.grad_var[e]
        return float(sqr), float(var)


def _read_csv(path: Path) -> dict[str, list[str]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        cols: dict[str, list[str]] = {name.strip(): [] for name in reader.fieldnames or ()}
        for row in reader:
            for k, v in row.items():
                if k is not None:
                    cols[k.strip()].append(v)
    return cols


def _read_table(app_dir: Path, profile: str) -> ProfileTable | None:
    rows: list[tuple[int, int, int, float, float, bool]] = []
    p_path = app_dir / f"placements-{profile}.csv"
    s_path = app_dir / f"scalability-{profile}.csv"
    if not p_path.is_file() and not s_path.is_file():
        return None
    if p_path.is_file():
        cols = _read_csv(p_path)
        for pl, bsz, st, sy in zip(cols["placement"], cols["local_bsz"], cols["step_time"], cols["sync_time"]):
            digits = [int(c) for c in pl.strip() if c.isdigit() and c != "0"]
            if not digits:
                continue
            rows.append((len(digits), sum(digits), int(float(bsz)), float(st), float(sy), True))
    if s_path.is_file():
        cols = _read_csv(s_path)
        for nn, nr, bsz, st, sy in zip(
            cols["num_nodes"], cols["num_replicas"], cols["local_bsz"], cols["step_time"], cols["sync_time"]
        ):
            rows.append((int(float(nn)), int(float(nr)), int(float(bsz)), float(st), float(sy), False))
    rows = [r for r in rows if r[3] > 0 and math.isfinite(r[3]) and r[4] >= 0 and r[4] < r[3]]
    if not rows:
        return None
    arr = list(zip(*rows))
    return ProfileTable(
        np.asarray(arr[0], dtype=np.int64),
        np.asarray(arr[1], dtype=np.int64),
        np.asarray(arr[2], dtype=np.int64),
        np.asarray(arr[3], dtype=float),
        np.asarray(arr[4], dtype=float),
        np.asarray(arr[5], dtype=bool),
    )


@functools.lru_cache(maxsize=64)
def _load_app_cached(app: str, root: str) -> AppProfile:
    app_dir = Path(root) / app
    if not app_dir.is_dir():
        raise FileNotFoundError(f"no profiles for application {app!r} under {root}")
    tables = {}
    for prof in PROFILE_NAMES:
        table = _read_table(app_dir, prof)
        if table is not None:
            tables[prof] = table
    validations: dict[int, Validation] = {}
    for path in sorted(app_dir.glob("validation-*.csv")):
        bsz = int(path.stem.rsplit("-", 1)[1])
        cols = _read_csv(path)
        validations[bsz] = Validation(
            bsz,
            np.asarray(cols["progress"], dtype=float),
            np.asarray(cols["grad_sqr"], dtype=float),
            np.asarray(cols["grad_var"], dtype=float),
        )
    if not tables or not validations:
        raise FileNotFoundError(f"incomplete profiles for {app!r} in {app_dir}")
    validations = dict(sorted(validations.items()))
    constants = APP_CONSTANTS.get(app, DEFAULT_CONSTANTS)
    epochs = min(constants.max_epochs, min(len(v.progress) for v in validations.values()))
    if epochs != constants.max_epochs:
        constants = AppConstants(epochs, constants.restart_penalty, constants.rescale_time, constants.slowdown)
    # Epoch boundaries as in the artifact: the smallest progress any batch size reached.
    ends = np.array([min(v.progress[e] for v in validations.values()) for e in range(epochs)])
    epoch_progress = np.concatenate([[0.0], ends])
    return AppProfile(app, tables, validations, constants, epoch_progress)


def load_app(app: str, root: Path | str | None = None) -> AppProfile:
    """Load (and cache) the profiles of `app` from `root` or the shared data folder."""
    return _load_app_cached(app, str(traces_dir(root)))


def available_apps(root: Path | str | None = None) -> tuple[str, ...]:
    base = traces_dir(root)
    return tuple(a for a in APPLICATIONS if (base / a).is_dir())
