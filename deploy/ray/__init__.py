"""SchedMate on Ray (issue 14 item 2): scale-out without changing any answer.

- `cluster`: join a Ray cluster by address, or start a local one (a custom GPU resource on CPU-only
  machines);
- `actors`: `RayServiceCore`, the advisor / tracker / failure handler as a pool of actors behind
  `ServiceCore`'s API (the service can serve from it);
- `executor`: `RayExecutor`, jobs run as Ray tasks with (fractional) GPU resources, placed and
  preempted by a registry policy; `train_job` is the short CPU training job it runs;
- `sweep`: `RayMap`, a `SeedMap` that fans seeds and sweep points out as Ray tasks, and `run_sweep`.

Modules import `ray` themselves; importing this package imports nothing heavy.
"""
