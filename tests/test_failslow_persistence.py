"""A shift must persist before it is a fail-slow: at least `min_events` readings and, when those
cover less, `persist_s` (15 s) of the log's own time, read from its step times and step counter
(unless its evidence is decisive, `decisive_h` x the CUSUM threshold).
A few seconds of noise on a fast-stepping job is not a slowdown; the same few readings on a job
that logs once a minute are, and a real slowdown is still flagged inside the 60-s budget."""

from __future__ import annotations

import random

from schedmate.agents.tracker.failslow import FailSlowConfig, detect_lines


def _log(times: list[float], every: int = 1) -> list[str]:
    """Key/value lines, one per `every` steps; `times` are the step times of the logged readings."""
    return [f"step {i * every}/99999 | loss=2.0000 | step_time={t:.4f}s" for i, t in enumerate(times, 1)]


def _steady(n: int, seed: int, level: float, noise: float = 0.03) -> list[float]:
    rng = random.Random(seed)
    return [level * rng.lognormvariate(0.0, noise) for _ in range(n)]


def _burst(base: float, seed: int, rise: float = 0.12, length: int = 5) -> list[float]:
    """200 steady readings, `length` readings `rise` higher, 200 steady readings."""
    return _steady(200, seed, base) + _steady(length, seed + 100, base * (1 + rise)) + _steady(200, seed + 200, base)


def test_a_few_seconds_of_slower_steps_on_a_fast_job_raise_no_alert() -> None:
    for seed in range(5):
        assert detect_lines(_log(_burst(0.5, seed))) == []  # 5 readings of 0.56 s: 3 s


def test_the_same_readings_on_a_job_that_logs_every_20_steps_last_long_enough_to_alarm() -> None:
    # 20 steps of 0.5 s per reading: five slower readings are 56 s of slower training
    flagged = [detect_lines(_log(_burst(0.5, seed, length=8), every=20)) for seed in range(5)]
    assert all(len(a) >= 1 and 200 <= a[0].since_line <= 203 and a[0].line <= 205 for a in flagged)


def test_a_sustained_slowdown_near_the_noise_on_a_fast_job_waits_for_evidence_but_is_flagged_within_60_s() -> None:
    # 12% on 5% noise, 0.5-s steps: alarmed once 15 s have passed or the evidence is decisive,
    # many readings after the 4 that a burst of noise can also fill
    for seed in range(5):
        times = _steady(200, seed, 0.5, noise=0.05) + _steady(300, seed + 50, 0.5 * 1.12, noise=0.05)
        alerts = detect_lines(_log(times))
        assert len(alerts) == 1 and 195 <= alerts[0].since_line <= 205
        slowed = sum(times[alerts[0].since_line - 1:alerts[0].line])
        assert alerts[0].line - alerts[0].since_line >= 12 and 8.0 <= slowed <= 60.0
        assert 1.08 <= alerts[0].ratio <= 1.16  # judged against the level before it, not a half-absorbed one


def test_a_decisive_slowdown_does_not_wait_for_15_s() -> None:
    # evidence at 4x the CUSUM threshold: no noise excursion seen on the dev seeds came near it
    for seed in range(5):
        times = _steady(200, seed, 0.5) + _steady(100, seed + 50, 0.5 * 1.5)
        alerts = detect_lines(_log(times))
        assert len(alerts) == 1 and 200 <= alerts[0].since_line <= 202 and alerts[0].line <= 201 + 8


def test_with_persistence_off_the_burst_alarms_at_once() -> None:
    # the control: what the rule removes (4 readings, no wall-time requirement)
    cfg = FailSlowConfig(persist_s=0.0)
    hits = sum(bool(detect_lines(_log(_burst(0.5, seed, rise=0.2)), cfg)) for seed in range(5))
    assert hits == 5
    assert sum(bool(detect_lines(_log(_burst(0.5, seed, rise=0.2)))) for seed in range(5)) == 0
