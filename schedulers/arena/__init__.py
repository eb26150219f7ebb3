"""Arena (Xue et al., EuroSys '26): co-designed scheduling and adaptive parallelism, after spec
`arena.md`.

Pure models: `hardware` (GPU constants, the spec's clusters), `model` (grids, the analytic AP /
DP throughput and memory model), `views` (what each arm believes), `search` (buddy placement,
bounded-depth downgrade search, scale-up), `config` (options, overheads, baselines). On the
engine: `policy.Arena` (also the baselines and ablations by `variant`), `sim.CostedSimulator`
(downtime), `workload` (the §6 synthetic trace) and the reproduction `experiment`.
"""

from .config import ABLATIONS, BASELINES, SENSITIVITY, ArenaConfig, Profiling, View
from .policy import ATTR, Arena, LMJob

__all__ = ["ABLATIONS", "ATTR", "BASELINES", "SENSITIVITY", "Arena", "ArenaConfig", "LMJob", "Profiling", "View"]
