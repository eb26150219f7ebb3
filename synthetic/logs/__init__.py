"""Labelled training-log corpus: realistic Megatron-LM / DeepSpeed / HF Trainer / Lightning /
PyTorch logs with real progress-line formats, noise, and (for failed logs) one injected Acme root
cause with its cascade; ground truth for the Metric Tracker and the Failure Handler."""

from .generator import derive_seed, generate_corpus, generate_log
from schedmate.loglabels import (CorpusEntry, CorpusManifest, FailureLabel, LogLabels, SlowdownLabel, TruthLabel, iter_labels,
                     load_labels, load_manifest)
from schedmate.logspec import VARIANTS, FailurePhase, Framework, Launcher, LogSpec, LogStatus, RankPrefix
from schedmate.taxonomy import (ALLOWED_COMPONENTS, REASONS, Component, FailureCategory, FailureReason, category_of,
                       component_of, reasons_in)

__all__ = [
    "ALLOWED_COMPONENTS", "REASONS", "VARIANTS", "Component", "CorpusEntry", "CorpusManifest", "FailureCategory",
    "FailureLabel", "FailurePhase", "FailureReason", "Framework", "Launcher", "LogLabels", "LogSpec", "LogStatus",
    "RankPrefix", "SlowdownLabel", "TruthLabel", "category_of", "component_of", "derive_seed", "generate_corpus",
    "generate_log", "iter_labels", "load_labels", "load_manifest", "reasons_in",
]
