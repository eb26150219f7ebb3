"""Labelled training-log corpus: realistic Megatron-LM / DeepSpeed / HF Trainer / Lightning /
PyTorch logs with real progress-line formats, noise, and (for failed logs) one injected Acme root
cause with its cascade; ground truth for the Metric Tracker and the Failure Handler.

The one generator of training and failure logs in the repository (`generate_log`,
`generate_corpus`); `shapes.py` makes the small shapes tests and benchmarks ask for from it
(`make_failed_log`, `generate_training_log`, `make_clean_log`).

Error texts are split into two disjoint pools (`pools.py`): each failure reason has several
message templates and each template, decoy and warning wrapper belongs to exactly one pool, `dev`
or `heldout` (`LogSpec.pool`, in every log's labels). The agents' rules and keyword tables may be
written from the `dev` pool only; the eval reports the `heldout` pool separately, as the measure of
texts no rule author has read. Failed logs of a benchmark corpus also carry hard cases real
clusters produce (`hard.py`: hangs, floods of cascade lines, restarts, decoys, a root cause on
another rank or at WARNING level), listed in `FailureLabel.hard`; the truth labels stay exact.
"""

from schedmate.loglabels import (
                     CorpusEntry,
                     CorpusManifest,
                     FailureLabel,
                     LogLabels,
                     SlowdownLabel,
                     TruthLabel,
                     iter_labels,
                     load_labels,
                     load_manifest,
)
from schedmate.logspec import (
                     HARD_MIX,
                     VARIANTS,
                     FailurePhase,
                     Framework,
                     HardCase,
                     Launcher,
                     LogSpec,
                     LogStatus,
                     Pool,
                     RankPrefix,
)
from schedmate.taxonomy import (
                     ALLOWED_COMPONENTS,
                     REASONS,
                     Component,
                     FailureCategory,
                     FailureReason,
                     category_of,
                     component_of,
                     reasons_in,
)

from .generator import derive_seed, generate_corpus, generate_log
from .pools import TEMPLATES, template_pool
from .shapes import BENIGN_LINES, FailedLog, generate_training_log, make_clean_log, make_failed_log

__all__ = [
    "ALLOWED_COMPONENTS", "BENIGN_LINES", "HARD_MIX", "REASONS", "TEMPLATES", "VARIANTS", "Component", "CorpusEntry",
    "CorpusManifest", "FailedLog", "FailureCategory", "FailureLabel", "FailurePhase", "FailureReason", "Framework",
    "HardCase", "Launcher", "LogLabels", "LogSpec", "LogStatus", "Pool", "RankPrefix", "SlowdownLabel", "TruthLabel",
    "category_of", "component_of", "derive_seed", "generate_corpus", "generate_log", "generate_training_log",
    "iter_labels", "load_labels", "load_manifest", "make_clean_log", "make_failed_log", "reasons_in", "template_pool",
]
