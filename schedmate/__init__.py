"""SchedMate: semantic-aware add-on for GPU-cluster schedulers."""

__version__ = "0.1.0"
