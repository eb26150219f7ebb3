"""Co-location speeds with the semantics of Lucid's `ColocateUpdater`, on the engine's protocol.

The engine takes co-location speeds from whatever `InterferenceModel` the caller passes
(`Simulator(..., interference=...)`); the Lucid policy never sets speeds itself. The engine's own
`MeasuredInterference` keys pairs by (model, dataset, GPU count, batch size, AMP). Lucid's
`colocate_info.csv` was measured on 1 GPU only, and Lucid's updater deliberately ignores the GPU
count, so with the plain model every multi-GPU pair falls back to the default factor. This
wrapper reproduces Lucid's lookup:

- the pair is matched on (model, dataset, batch size, AMP) in either order, GPU count ignored;
- a pair involving NeuMF, ResNet50, BERT or Transformer (not in the table) counts as no
  interference (speed 1 for both), as Lucid assumes;
- anything else unmeasured (or a job without workload attributes) gets the default factor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..interference import ConstantInterference, MeasuredInterference
from ..job import JobSpec
from .data import default_colocate_csv, warn_missing, workload_key

OUTSIDE_MODELS = frozenset({"NeuMF", "ResNet50", "BERT", "Transformer"})


@dataclass(frozen=True)
class LucidInterference:
    measured: MeasuredInterference
    outside_models: frozenset[str] = OUTSIDE_MODELS
    default: ConstantInterference = field(default_factory=ConstantInterference)

    @classmethod
    def from_csv(cls, path: str | Path, default_factor: float = 0.6) -> LucidInterference:
        return cls(MeasuredInterference.from_csv(path, default_factor), default=ConstantInterference(default_factor))

    @classmethod
    def from_shared_data(cls, default_factor: float = 0.6) -> LucidInterference | ConstantInterference:
        """From `../shared/data/lucid/colocate_info.csv`; the constant factor when it is absent."""
        path = default_colocate_csv()
        if path is None:
            warn_missing("colocate_info.csv")
            return ConstantInterference(default_factor)
        return cls.from_csv(path, default_factor)

    def speeds(self, a: JobSpec, b: JobSpec) -> tuple[float, float]:
        ka, kb = workload_key(a.attributes), workload_key(b.attributes)
        if ka is None or kb is None:
            return self.default.speeds(a, b)
        if ka[0] in self.outside_models or kb[0] in self.outside_models:
            return 1.0, 1.0
        one_a = (ka[0], ka[1], 1, ka[2], ka[3])
        one_b = (kb[0], kb[1], 1, kb[2], kb[3])
        pairs = self.measured.pairs
        if (one_a, one_b) in pairs:
            return pairs[(one_a, one_b)]
        if (one_b, one_a) in pairs:
            sb, sa = pairs[(one_b, one_a)]
            return sa, sb
        return self.default.speeds(a, b)
