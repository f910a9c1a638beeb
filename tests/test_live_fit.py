"""The live fit's stand-ins for a line it cannot trust (spark_profiling.fit.ratio_estimate), pure."""
from __future__ import annotations

import pytest

from spark_profiling.fit import E_FLOOR_S, FitCriteria, PairSums, profile_entry


def sums(points: list[tuple[float, float]], executed: float = 100.0, emitted: float = 200.0) -> PairSums:
    total = PairSums()
    for x, y in points:
        total += PairSums(n=1, sx=x, sy=y, sxy=x * y, sxx=x * x, syy=y * y, x_min=x, x_max=x)
    return total.__class__(**{**total.__dict__, "executed": executed, "emitted": emitted})


ONE_RATE = [(20.0, 10.0), (20.5, 10.2), (19.8, 9.9), (20.1, 10.1), (20.2, 10.0), (19.9, 9.8)]
"""A live topology at one rate: the line cannot tell e from MET."""


def test_a_narrow_range_is_left_out_by_default_and_estimated_when_asked():
    assert profile_entry("bolt", "small", sums(ONE_RATE), 5).skipped.verdict == "narrow_range"
    got = profile_entry("bolt", "small", sums(ONE_RATE), 5, criteria=FitCriteria(estimate_weak=True))
    assert got.skipped is None and got.entry.met == 0.0
    mean_rate = sum(x for x, _ in ONE_RATE) / len(ONE_RATE)
    mean_cpu = sum(y for _, y in ONE_RATE) / len(ONE_RATE)
    # exact at the rate it ran at: 100 * e * rate == the CPU measured there
    assert 100 * got.entry.e * mean_rate == pytest.approx(mean_cpu)
    assert got.entry.alpha == 2.0
    assert got.estimate["method"] == "ratio" and "span" in got.estimate["why"]


def test_a_component_whose_cpu_does_not_grow_gets_a_small_measured_cost_not_a_hole():
    flat = [(x, 0.0) for x in (5.0, 10.0, 20.0, 30.0, 40.0, 50.0)]  # a cheap Java counter: no CPU to see
    assert profile_entry("count", "large", sums(flat), 5).skipped.verdict in ("not_growing", "no_fit")
    got = profile_entry("count", "large", sums(flat), 5, criteria=FitCriteria(estimate_weak=True))
    assert got.entry.e == E_FLOOR_S and got.estimate is not None


def test_a_good_line_is_fitted_as_before_and_an_idle_probe_gives_one():
    with_idle = ONE_RATE + [(0.0, 0.5), (0.0, 0.6), (0.0, 0.4)]
    got = profile_entry("bolt", "small", sums(with_idle), 5, criteria=FitCriteria(estimate_weak=True))
    assert got.estimate is None and got.entry.r2 is not None
    assert got.entry.met == pytest.approx(0.5, abs=0.2)
    assert 100 * got.entry.e == pytest.approx((10.0 - 0.5) / 20.0, rel=0.05)


def test_too_few_intervals_are_never_estimated():
    got = profile_entry("bolt", "small", sums(ONE_RATE[:3]), 5, criteria=FitCriteria(estimate_weak=True))
    assert got.entry is None and got.skipped.verdict == "too_few"
