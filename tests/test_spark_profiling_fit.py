"""The line fit from sums (spark_profiling.fit): no Spark needed."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from spark_profiling.fit import FitCriteria, PairSums, fit_line, outlier_band, profile_entry


def sums_of(points: list[tuple[float, float]], executed: float = 0.0, emitted: float = 0.0) -> PairSums:
    total = PairSums()
    for x, y in points:
        total += PairSums(n=1, sx=x, sy=y, sxy=x * y, sxx=x * x, syy=y * y, x_min=x, x_max=x)
    return total + PairSums(executed=executed, emitted=emitted)


def test_fit_from_sums_equals_numpy_least_squares():
    rng = random.Random(3)
    points = [(x, 0.9 * x + 2.5 + rng.gauss(0, 1.0)) for x in (rng.uniform(5, 200) for _ in range(300))]
    line = fit_line(sums_of(points))
    xs, ys = np.array(points).T
    slope, intercept = np.polyfit(xs, ys, 1)
    r2 = np.corrcoef(xs, ys)[0, 1] ** 2
    assert line.slope == pytest.approx(slope, rel=1e-9)
    assert line.intercept == pytest.approx(intercept, rel=1e-9)
    assert line.r2 == pytest.approx(r2, rel=1e-9)


def test_sums_add_up_like_the_concatenated_points():
    a = [(1.0, 2.0), (3.0, 5.0)]
    b = [(10.0, 7.0), (0.5, 1.0), (4.0, 4.0)]
    assert sums_of(a) + sums_of(b) == sums_of(a + b)


def test_entry_units_e_is_slope_over_100_met_is_intercept():
    # CPU percent = 100 * e * IR + MET with e = 0.004 s/tuple, MET = 3 %.
    points = [(x, 100 * 0.004 * x + 3.0) for x in (5.0, 10.0, 20.0, 40.0, 80.0)]
    result = profile_entry("highCompute", "small", sums_of(points, executed=1000, emitted=250), min_samples=5)
    assert result.skipped is None and not result.clamped
    entry = result.entry
    assert entry.e == pytest.approx(0.004)
    assert entry.met == pytest.approx(3.0)
    assert entry.alpha == pytest.approx(0.25)
    assert entry.r2 == pytest.approx(1.0)
    assert entry.samples == 5
    assert entry.rate_range == (5.0, 80.0)


def test_too_few_samples_is_skipped_not_invented():
    points = [(x, 0.5 * x + 1) for x in (1.0, 2.0, 3.0)]
    result = profile_entry("p", "t", sums_of(points, executed=10, emitted=10), min_samples=5)
    assert result.entry is None
    assert result.skipped.samples == 3
    assert "fewer than the 5 needed" in result.skipped.reason


def test_no_spread_in_input_rate_is_skipped():
    points = [(20.0, 3.0 + i * 0.1) for i in range(10)]
    assert fit_line(sums_of(points)) is None
    result = profile_entry("p", "t", sums_of(points, executed=10, emitted=10), min_samples=5)
    assert result.entry is None and "same input rate" in result.skipped.reason


def test_cpu_that_falls_with_rate_is_skipped():
    points = [(x, 50 - 0.1 * x) for x in (1.0, 5.0, 10.0, 20.0, 40.0)]
    result = profile_entry("p", "t", sums_of(points, executed=10, emitted=10), min_samples=5)
    assert result.entry is None and "does not grow" in result.skipped.reason


def test_negative_intercept_is_clamped_to_zero_and_said():
    points = [(x, 0.5 * x - 2.0) for x in (10.0, 20.0, 30.0, 40.0, 50.0)]
    result = profile_entry("p", "t", sums_of(points, executed=10, emitted=10), min_samples=5)
    assert result.entry.met == 0.0
    assert result.entry.e == pytest.approx(0.005)
    (clamp,) = result.clamped
    assert clamp.field == "met" and clamp.fitted == pytest.approx(-2.0) and clamp.used == 0.0


def test_constant_cpu_has_no_r2():
    # CPU grows by the slope exactly, but a zero-variance y must not divide by zero.
    line = fit_line(sums_of([(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)]))
    assert line.slope == pytest.approx(0.0, abs=1e-12) and line.r2 is None


def test_non_finite_sums_are_skipped_not_crashed():
    points = [(x, 0.5 * x + 1) for x in (1.0, 2.0, 3.0, 4.0, 5.0)]
    result = profile_entry("p", "t", sums_of(points, executed=math.inf, emitted=1.0), min_samples=5)
    assert result.entry is None and "not finite" in result.skipped.reason


def test_the_base_load_comes_out_in_proportion_to_the_share_of_the_machine():
    """y - base * s fitted against x, from sums: alone (s = 1) the whole base load, shared a part that follows s."""
    from spark_profiling.fit import machine_base_load

    base = 20.0
    alone = PairSums()
    for x in (1.0, 3.0, 5.0, 7.0, 9.0):
        y, o = 2.0 * x + 5.0 + base, 0.5 * x + base + 3.0
        alone += PairSums(n=1, sx=x, sy=y, sxy=x * y, sxx=x * x, syy=y * y, x_min=x, x_max=x,
                          on=1, osx=x, osy=o, osxy=x * o, osxx=x * x, ns=1, ss=1.0, sxs=x)
    shared = PairSums()
    for x in (1.0, 3.0, 5.0, 7.0, 9.0):
        s = 0.4 + 0.01 * x
        y = 1.5 * x + 4.0 + base * s
        shared += PairSums(n=1, sx=x, sy=y, sxy=x * y, sxx=x * x, syy=y * y, x_min=x, x_max=x, ns=1, ss=s, sxs=x * s)

    loads = machine_base_load({("k", "small"): alone, ("m", "small"): shared}, min_samples=5)
    assert loads["small"].percent == pytest.approx(base + 3.0) and loads["small"].profile == "k"
    entry = profile_entry("m", "small", shared, 5, base_load=base).entry
    assert entry.met == pytest.approx(4.0) and entry.e == pytest.approx(0.015)
    result = profile_entry("k", "small", alone, 5, base_load=base)
    assert result.entry.met == pytest.approx(5.0) and result.base_load_removed == pytest.approx(base)
    unknown_share = profile_entry("m", "small", PairSums(**{**vars(shared), "ns": 4}), 5, base_load=base)
    assert unknown_share.base_load_removed is None and unknown_share.entry.met == pytest.approx(4.0 + base * 0.4)


def _line_points(e: float, met: float, rates: list[float], noise: float = 0.02, seed: int = 5) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [(x, (100 * e * x + met) * (1 + rng.gauss(0, noise))) for x in rates]


def test_one_interval_at_100x_the_rate_is_an_outlier_and_kept_out_of_the_fit():
    rates = [2.0 + 0.5 * i for i in range(40)]
    points = _line_points(0.004, 3.0, rates)
    glitch = (100 * max(rates), points[-1][1])  # the counter jumped, the CPU did not
    with_glitch = points + [glitch]

    naive = profile_entry("high", "small", sums_of(with_glitch, 100, 100), 5, criteria=FitCriteria(max_e_error=math.inf))
    assert naive.entry is None or not naive.entry.e == pytest.approx(0.004, rel=0.5)  # what one glitch did before

    band = outlier_band("high", "small", with_glitch)
    flagged = [p for p in with_glitch if band.is_outlier(*p)]
    assert flagged == [glitch]
    kept = [p for p in with_glitch if not band.is_outlier(*p)]
    entry = profile_entry("high", "small", sums_of(kept, 100, 100), 5).entry
    assert entry.e == pytest.approx(0.004, rel=0.05)
    assert entry.met == pytest.approx(3.0, abs=0.5)


def test_a_cpu_spike_is_an_outlier_but_ordinary_noise_is_not():
    points = _line_points(0.01, 5.0, [1.0 + i for i in range(30)], noise=0.03)
    band = outlier_band("p", "t", points + [(10.0, 90.0)])
    assert band.is_outlier(10.0, 90.0)
    assert not any(band.is_outlier(*p) for p in points)


def test_too_few_points_give_no_band():
    assert outlier_band("p", "t", [(1.0, 2.0), (2.0, 3.0), (3.0, 4.0)]) is None


def test_a_narrow_range_of_rates_is_left_out_with_what_it_would_have_given():
    points = _line_points(0.004, 3.0, [20.0 + 0.2 * i for i in range(30)], noise=0.01)
    result = profile_entry("high", "small", sums_of(points, 100, 100), 5)
    assert result.entry is None
    assert result.skipped.verdict == "narrow_range"
    assert "tell e from MET" in result.skipped.reason
    assert result.skipped.fitted["rate_spread"] < 0.3
    assert set(result.skipped.fitted) >= {"e", "met", "r2", "e_error"}


def test_a_poor_fit_is_left_out_and_a_good_one_over_the_same_rates_is_kept():
    rates = [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    noisy = [(x, 0.2 * x + 30.0 + r) for x, r in zip(rates, (3, -3, -3, 3, 3, -3))]  # e = 0.002, residuals of 3 %
    result = profile_entry("p", "t", sums_of(noisy, 10, 10), 5)
    assert result.entry is None and result.skipped.verdict == "poor_fit"
    assert "standard error" in result.skipped.reason
    clean = _line_points(0.002, 30.0, rates, noise=0.005, seed=2)
    assert profile_entry("p", "t", sums_of(clean, 10, 10), 5).entry is not None


def test_the_lab_profiles_shipped_pass_the_criteria():
    """The shipped lab set (profiles/default-cluster.json) must still be a set under the new criteria."""
    from planner.model import ProfileSet
    from spark_profiling.fit import e_error

    shipped = ProfileSet.model_validate_json(open("profiles/default-cluster.json").read())
    criteria = FitCriteria()
    for entry in shipped.entries:
        low, high = entry.rate_range
        assert (high - low) / high >= criteria.min_rate_spread
        n, r2 = entry.samples, entry.r2
        assert math.sqrt((1 - r2) / (r2 * (n - 2))) <= criteria.max_e_error, entry.profile
    assert e_error(sums_of([(1.0, 1.0), (2.0, 2.0)]), 1.0) == math.inf


def with_thread(points: list[tuple[float, float, float]]) -> PairSums:
    """Sums of (rate, total CPU %, the executor thread's part of it %)."""
    total = sums_of([(x, y) for x, y, _ in points])
    for x, _, t in points:
        total += PairSums(nt=1, sty=t, sxty=x * t)
    return total


def test_an_idle_thread_whose_cpu_falls_with_the_rate_is_charged_as_a_constant_not_a_negative_cost():
    # The subprocess burns 1.5 % per tuple/s; the executor thread's idle wake-ups fall from 6 % to 2 %.
    rates = [1.0, 2.0, 3.0, 4.0, 5.0]
    points = [(x, 1.5 * x + (7.0 - x), 7.0 - x) for x in rates]
    result = profile_entry("highCompute", "large", with_thread(points), min_samples=5)
    assert result.entry.e == pytest.approx(0.015)
    assert result.thread_idle_fall == pytest.approx(1.0)
    # The line turns about the mean point: at the mean rate it still gives the mean CPU.
    assert result.entry.met + 100 * result.entry.e * 3.0 == pytest.approx(sum(y for _, y, _ in points) / 5)


def test_a_thread_that_grows_with_the_rate_or_is_unknown_leaves_the_fit_as_it_was():
    growing = [(x, 2.0 * x + 1.0, 0.5 * x + 1.0) for x in (1.0, 2.0, 3.0, 4.0, 5.0)]
    result = profile_entry("p", "t", with_thread(growing), min_samples=5)
    assert result.entry.e == pytest.approx(0.02) and result.thread_idle_fall is None
    partly = with_thread(growing[:4]) + sums_of([(5.0, 11.0)])
    result = profile_entry("p", "t", partly, min_samples=5)
    assert result.entry.e == pytest.approx(0.02) and result.thread_idle_fall is None


def test_a_pair_left_with_too_few_intervals_by_its_machines_quota_says_so():
    points = [(x, 2.0 * x + 1.0) for x in (1.0, 2.0, 3.0)]
    result = profile_entry("highCompute", "small", sums_of(points) + PairSums(at_quota=40), min_samples=5)
    assert result.entry is None and result.skipped.verdict == "at_quota"
    assert result.skipped.reason.startswith("40 of its intervals ran on a machine at its CPU quota")
    enough = [(x, 2.0 * x + 1.0) for x in (1.0, 2.0, 3.0, 4.0, 5.0)]
    kept = profile_entry("highCompute", "small", sums_of(enough) + PairSums(at_quota=40), min_samples=5)
    assert kept.entry is not None and kept.entry.e == pytest.approx(0.02)
