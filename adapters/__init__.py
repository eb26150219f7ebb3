"""SchedMate to policies: the InsightSource interface and one adapter per reference scheduler."""
