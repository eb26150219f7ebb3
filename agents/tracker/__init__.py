"""Metric Tracker (spec §3): training-log lines → step time, loss and throughput for schedulers.

Regex fast path per framework, validated LLM fallback, MAD outlier removal, incremental tailing
and a per-job registry with the scheduler-facing throughput API.
"""

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
    "TailRead",
    "Throughput",
    "ThroughputComparison",
    "TrackedLine",
    "TrackerReport",
    "TrackerResult",
    "looks_like_injection",
    "mad_filter",
    "parse_timestamp",
    "regex_extract",
    "robust_mean",
    "validate",
]
