"""Baseline policies; build any registered policy by name (`fifo`, `sjf+bf`, `tiresias`, `sia`, ...).

Names resolve through the lazy registry (`schedulers.registry`): importing this package imports the
small baselines only, never Lucid or Sia.
"""

from __future__ import annotations

from ..registry import BUILTIN as POLICIES
from ..registry import make_policy
from .fifo import FIFO
from .qssf import QSSF
from .sjf import SJF
from .srtf import SRTF
from .tiresias import Tiresias

__all__ = ["FIFO", "QSSF", "SJF", "SRTF", "Tiresias", "POLICIES", "make_policy"]
