"""Silent pauses (an unannounced checkpoint or eval: one very long step) must not raise a
fail-slow alert, while a sustained slowdown of the same size still does."""

from __future__ import annotations

import random

from schedmate.agents.tracker.failslow import detect_lines


def _log(times: list[float]) -> list[str]:
    return [f"step {i}/9999 | loss=2.0000 | step_time={t:.3f}s" for i, t in enumerate(times, 1)]


def _steady(n: int, seed: int, level: float = 1.0) -> list[float]:
    rng = random.Random(seed)
    return [level * rng.lognormvariate(0.0, 0.02) for _ in range(n)]


def test_isolated_silent_stalls_on_a_small_drift_raise_no_alert() -> None:
    times = _steady(80, 1) + _steady(80, 2, level=1.04)  # a 4% drift, below what matters
    for at in (90, 120, 150):
        times[at] = 40.0  # checkpoint writes nobody announced
    assert detect_lines(_log(times)) == []


def test_a_sustained_slowdown_far_above_baseline_is_still_caught() -> None:
    times = _steady(80, 3) + _steady(20, 4, level=3.0)
    alerts = detect_lines(_log(times))
    assert len(alerts) == 1 and alerts[0].ratio > 2.5
    assert 81 <= alerts[0].since_line <= 83 and alerts[0].line <= 81 + 20  # within 60 s of 3-s steps



def _ramp(seed: int, ramp: int, rise: float = 0.12) -> list[float]:
    """100 steady steps, a linear rise of `rise` over `ramp` steps, then 100 steps at the new level."""
    rng = random.Random(seed)
    return ([rng.lognormvariate(0.0, 0.02) for _ in range(100)]
            + [(1 + rise * i / ramp) * rng.lognormvariate(0.0, 0.02) for i in range(ramp)]
            + [(1 + rise) * rng.lognormvariate(0.0, 0.02) for _ in range(100)])


def test_a_gradual_rise_below_10_percent_is_absorbed_but_a_step_is_caught_within_a_minute() -> None:
    # Against the readings just before its estimated onset an 8% ramp over 60 steps is no change
    # point; a 12% step is. (A 12% ramp that then stays is flagged once most of it has happened:
    # while a shift persists the baseline is held, so a lasting 12% loss is a slowdown.)
    for seed in range(4):
        assert detect_lines(_log(_ramp(seed, 60, rise=0.08))) == []
        step = detect_lines(_log(_steady(100, seed) + _steady(100, seed + 50, level=1.12)))
        assert len(step) == 1 and 101 <= step[0].since_line <= 102 and step[0].line <= 101 + 53  # 60 s of 1.12-s steps
        assert step[0].ratio > 1.08
