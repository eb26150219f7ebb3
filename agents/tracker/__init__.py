"""Metric Tracker (spec §3): training-log lines → step time, loss and throughput for schedulers.

Regex fast path per framework (and a key/value tokenizer for the many trainers that print
`key: value` pairs, `formats.py`), evaluation lines skipped, validated LLM fallback, the pure-LLM
baseline (`llm_baseline.py`), MAD outlier removal, incremental tailing
and a per-job registry with the scheduler-facing throughput API.
"""

from schedmate.agents.tracker.formats import is_eval_line
from schedmate.agents.tracker.llm_baseline import TailReading, llm_tail_metrics
from schedmate.agents.tracker.llm_extractor import ProgressMetrics, looks_like_injection, validate
from schedmate.agents.tracker.regex_extractors import Extraction, parse_timestamp, regex_extract
from schedmate.agents.tracker.registry import JobLogRegistry, Throughput, ThroughputComparison
from schedmate.agents.tracker.robust import mad_filter, robust_mean
from schedmate.agents.tracker.tail import LogTail, TailLine, TailRead
from schedmate.agents.tracker.tracker import (
    LineMetrics,
    MetricEstimate,
    MetricTracker,
    NoSignal,
    PassStats,
    SourceLine,
    TrackedLine,
    TrackerReport,
    TrackerResult,
)

__all__ = [
    "Extraction",
    "JobLogRegistry",
    "LineMetrics",
    "LogTail",
    "MetricEstimate",
    "MetricTracker",
    "NoSignal",
    "PassStats",
    "ProgressMetrics",
    "SourceLine",
    "TailLine",
    "TailReading",
    "TailRead",
    "Throughput",
    "ThroughputComparison",
    "TrackedLine",
    "TrackerReport",
    "TrackerResult",
    "is_eval_line",
    "llm_tail_metrics",
    "looks_like_injection",
    "mad_filter",
    "parse_timestamp",
    "regex_extract",
    "robust_mean",
    "validate",
]
