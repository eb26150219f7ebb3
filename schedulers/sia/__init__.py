"""Sia (SOSP'23): heterogeneity-aware, goodput-optimised scheduling of elastic DL jobs.

- `profiles`: measured application profiles from the Sia artifact (read from shared data).
- `goodput`: the Pollux goodput model (fitted `PerfParams`, statistical efficiency).
- `jobs`: job lengths and work units, the engine throughput callable (`SiaThroughput`), per-job
  models with profile-as-you-go (`SiaJobModel`), workload loading (`load_sia_jobs`).
- `configs`, `ilp`: candidate (type, nodes, GPUs) configurations and the allocation ILP (HiGHS).
- `policy`: the `Sia` policy; `baseline`: `SiaFIFO`, a heterogeneity-unaware rigid FIFO.
"""

from .baseline import SiaFIFO
from .jobs import SiaJobModel, SiaThroughput, load_sia_jobs, seed_model
from .policy import Sia, simulate_sia
from .profiles import SIA_CLUSTER

__all__ = ["SIA_CLUSTER", "Sia", "SiaFIFO", "SiaJobModel", "SiaThroughput", "load_sia_jobs", "seed_model", "simulate_sia"]
