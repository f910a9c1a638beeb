"""The least-squares line through one pair's intervals, from sums alone, and the ProfileEntry it gives.

docs/model.md: one instance fed ``IR`` tuples/s uses ``TCU = 100 * e * IR + MET`` percent of the
machine. So a line of CPU percent (y) against input rate (x) has slope ``100 * e`` and intercept
``MET``. The sums (n, Σx, Σy, Σxy, Σx², Σy²) are all the fit needs, which is why the Spark job
aggregates only them and never brings raw rows to the driver. The same sums of two more lines (the
machine's overhead, a task's share of it) give the machine base load (:func:`machine_base_load`).
Pure Python: no Spark here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from planner.model import ProfileEntry

SPREAD_EPSILON = 1e-9
"""Relative variance below which the input rates count as all equal (no slope can be fitted)."""


@dataclass(frozen=True)
class FitCriteria:
    """When a pair's line is trusted enough to plan with (docs/profiling-records.md, "Pairs left out").

    A live topology mostly runs at one rate: its intervals then pin down ``100 * e * IR + MET`` at
    that rate, not ``e`` and ``MET`` apart, so such a pair is left out rather than planned with.
    """

    min_samples: int = 5
    min_rate_spread: float = 0.3
    """Least ``(greatest rate - least rate) / greatest rate`` over the pair's intervals."""
    max_e_error: float = 0.5
    """Greatest standard error of ``e`` relative to ``e`` (0.5: ``e`` two standard errors from zero)."""
    keep_at_quota: bool = False
    """Fit the intervals of workers' records (``cpu_basis`` thread) taken on a machine at its quota too.

    A throttled machine still runs every tuple it is given: an executor thread's CPU and its shell
    subprocess's are counted only while they run, so their CPU per tuple is the same at quota
    (docs/operations/profiling.md, "Tuning a running topology"); what a machine at quota cannot show is a rate that
    varies, which the tune's idle probe supplies. The lab's records (the machine's whole cgroup CPU)
    are capped at quota, so the default leaves them out.
    """
    estimate_weak: bool = False
    """Give a pair whose line cannot be trusted (rates too narrow, no slope, CPU not growing) an estimate
    instead of leaving it out: ``e`` = mean CPU / mean rate, ``MET`` 0 (:func:`ratio_estimate`)."""


@dataclass(frozen=True)
class PairSums:
    """Additive sums over the intervals of one (profile key, machine type) pair."""

    n: int = 0
    sx: float = 0.0
    sy: float = 0.0
    sxy: float = 0.0
    sxx: float = 0.0
    syy: float = 0.0
    x_min: float = math.inf
    x_max: float = -math.inf
    executed: float = 0.0
    emitted: float = 0.0
    # The machine's overhead (its cgroup CPU less the task's own process, y = o) against x, over
    # the intervals where the task ran alone on its machine: what :func:`machine_base_load` needs.
    on: int = 0
    osx: float = 0.0
    osy: float = 0.0
    osxy: float = 0.0
    osxx: float = 0.0
    at_quota: int = 0
    """Intervals left out because the machine was at its CPU quota (not in the sums)."""
    # The executor's JVM thread alone (t, part of y) against x, where it is known (worker records).
    nt: int = 0
    sty: float = 0.0
    sxty: float = 0.0
    # The task's share of its machine's overhead (s, 1 when alone) against x, where it is known.
    ns: int = 0
    ss: float = 0.0
    sxs: float = 0.0

    def __add__(self, other: "PairSums") -> "PairSums":
        merged = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        merged.update(x_min=min(self.x_min, other.x_min), x_max=max(self.x_max, other.x_max))
        return PairSums(**merged)


@dataclass(frozen=True)
class Line:
    slope: float
    intercept: float
    r2: float | None
    """None where the CPU is constant (R² undefined)."""


def _slope_and_intercept(n: int, sx: float, sxx: float, sy: float, sxy: float) -> tuple[float, float] | None:
    """Ordinary least squares of y on x from its sums, or None when the x values have no spread."""
    var_x = sxx - sx * sx / n if n else 0.0
    if n < 2 or var_x <= SPREAD_EPSILON * max(sxx, 1e-300):
        return None
    slope = (sxy - sx * sy / n) / var_x
    return slope, (sy - slope * sx) / n


def fit_line(s: PairSums) -> Line | None:
    """The pair's line of CPU against input rate with its R², or None when the x values have no spread."""
    fitted = _slope_and_intercept(s.n, s.sx, s.sxx, s.sy, s.sxy)
    if fitted is None:
        return None
    slope, intercept = fitted
    var_x = s.sxx - s.sx * s.sx / s.n
    var_y = s.syy - s.sy * s.sy / s.n
    cov = slope * var_x
    r2 = None if var_y <= SPREAD_EPSILON * max(s.syy, 1e-300) else min(1.0, max(0.0, cov * cov / (var_x * var_y)))
    return Line(slope=slope, intercept=intercept, r2=r2)


@dataclass(frozen=True)
class BaseLoad:
    """A machine type's base load: what its machine spends with nothing to do, percent of the machine.

    The supervisor and the worker JVM idle in the machine's cgroup whatever runs there. Charged
    to every instance's ``MET`` it would be counted once per instance on a shared machine, so the
    job takes it out of the profiles and reports it per machine type; a caller plans with
    ``capacity = 100 - percent`` (docs/profiling.md, "Machine base load").
    """

    machine_type: str
    percent: float
    profile: str
    """The pair whose overhead line gave the least intercept (that pair's instance-specific idle cost is not in it)."""
    samples: int


def machine_base_load(pairs: dict[tuple[str, str], PairSums], min_samples: int) -> dict[str, BaseLoad]:
    """Per machine type, the least intercept of the overhead line over the pairs profiled alone there.

    The least, not the mean: what a spout's JVM spends polling it is its own, not the machine's,
    and anything the base load misses stays in the instances' ``MET`` (counted, not lost).
    """
    best: dict[str, BaseLoad] = {}
    for (profile, machine_type), s in sorted(pairs.items()):
        if s.on < min_samples:
            continue
        line = _slope_and_intercept(s.on, s.osx, s.osxx, s.osy, s.osxy)
        if line is None or not all(math.isfinite(v) for v in line):
            continue
        percent = min(max(line[1], 0.0), 100.0)
        if machine_type not in best or percent < best[machine_type].percent:
            best[machine_type] = BaseLoad(machine_type, percent, profile, s.on)
    return best


@dataclass(frozen=True)
class Skipped:
    """A pair left out of the profile set, and why (never an invented profile)."""

    profile: str
    machine_type: str
    samples: int
    reason: str
    verdict: str = "no_fit"
    """too_few, no_spread, no_fit, not_growing, narrow_range or poor_fit."""
    fitted: dict[str, float | None] | None = None
    """What the line would have given (e, met, r2, e_error, rate spread), for a pair left out as weak."""


@dataclass(frozen=True)
class Clamped:
    """A fitted value outside its physical range, replaced by the bound (said in the set's source)."""

    profile: str
    machine_type: str
    field: str
    fitted: float
    used: float


@dataclass(frozen=True)
class PairResult:
    """What one pair's intervals gave: an entry (maybe with clamps), or the reason it was skipped."""

    entry: ProfileEntry | None
    skipped: Skipped | None = None
    clamped: tuple[Clamped, ...] = ()
    base_load_removed: float | None = None
    """Percent taken out of ``MET`` as the pair's share of the machine's base load (None: none taken)."""
    thread_idle_fall: float | None = None
    """How fast the executor threads' CPU fell as the rate rose (percent per tuple/s, > 0), kept out of ``e``."""
    estimate: dict[str, float | str] | None = None
    """Where the entry is a :func:`ratio_estimate`: why the line was not used, the rate and CPU it rests on."""


E_FLOOR_S = 1e-6
"""Least ``e`` (s of the machine per tuple) an estimate gives: a component whose CPU is lost in the noise of its
measurement still costs something, so the planner never sees a free component (an unbounded rate)."""


def ratio_estimate(profile: str, machine_type: str, s: PairSums, why: str) -> PairResult | None:
    """The pair's entry from its mean operating point: ``e`` = mean CPU / (100 x mean rate), ``MET`` 0.

    Exact at the rate the intervals ran at, and above the truth at higher rates (every percent of
    fixed cost is charged per tuple), so a plan made with it under-promises rather than
    over-promises. None when the pair never ran a tuple (no rate to divide by).
    """
    if s.n < 2 or s.sx <= 0 or not all(math.isfinite(v) for v in (s.sx, s.sy, s.executed, s.emitted)):
        return None
    rate, cpu = s.sx / s.n, max(s.sy / s.n, 0.0)
    e = max(cpu / (100.0 * rate), E_FLOOR_S)
    entry = ProfileEntry(
        profile=profile, machine_type=machine_type, e=e, met=0.0,
        alpha=s.emitted / s.executed if s.executed > 0 else 0.0, r2=None, samples=s.n,
        rate_range=(max(s.x_min, 0.0), max(s.x_max, 0.0)),
    )
    return PairResult(entry=entry, estimate={"method": "ratio", "why": why, "rate": round(rate, 4),
                                             "cpu_percent": round(cpu, 4), "e": e})


def e_error(s: PairSums, slope: float) -> float:
    """The standard error of the slope from the sums, relative to the slope (inf with no degrees of freedom)."""
    var_x = s.sxx - s.sx * s.sx / s.n
    var_y = s.syy - s.sy * s.sy / s.n
    if s.n <= 2 or var_x <= 0 or slope == 0:
        return math.inf
    residual = max(var_y - slope * slope * var_x, 0.0)
    return math.sqrt(residual / (s.n - 2) / var_x) / abs(slope)


def rate_spread(s: PairSums) -> float:
    """``(greatest - least) / greatest`` input rate of the pair's intervals (0 when no rate is above 0)."""
    return (s.x_max - s.x_min) / s.x_max if s.x_max > 0 else 0.0


ESTIMABLE = frozenset({"no_spread", "not_growing", "narrow_range", "poor_fit"})
"""Verdicts an estimate may stand in for: the pair ran tuples, only its line cannot be trusted."""


def profile_entry(
    profile: str, machine_type: str, s: PairSums, min_samples: int, base_load: float = 0.0,
    criteria: FitCriteria | None = None,
) -> PairResult:
    """The pair's ProfileEntry, or why there is none.

    ``base_load`` (percent of the machine) is taken out in proportion to the task's share of its
    machine's overhead in each interval: the line of ``y - base_load * s`` against ``x``, from the
    sums. Where a share is unknown for some interval, nothing is taken out.
    Where every interval also has its executor thread's CPU (worker records) and that falls as the
    rate rises (idle wake-ups), the fall is kept out of ``e``: ``e`` is the rest's slope.
    ``r2`` is that of the fitted line of charged CPU before any clamp. A slope at or below zero
    means the CPU does not grow with the input rate: no usable cost per tuple, so the pair is skipped.
    A pair whose rates span less than ``criteria.min_rate_spread``, or whose ``e`` has a relative
    standard error above ``criteria.max_e_error``, is left out too, with what it would have given.
    """
    criteria = criteria or FitCriteria(min_samples=min_samples)

    def skip(reason: str, verdict: str, fitted: dict[str, float | None] | None = None) -> PairResult:
        if criteria.estimate_weak and verdict in ESTIMABLE:
            estimated = ratio_estimate(profile, machine_type, s, reason)
            if estimated is not None:
                return estimated
        return PairResult(entry=None, skipped=Skipped(profile, machine_type, s.n, reason, verdict, fitted))

    if s.n < min_samples and s.at_quota:
        return skip(f"{s.at_quota} of its intervals ran on a machine at its CPU quota, where the CPU cannot grow with "
                    f"the rate; {s.n} left, fewer than the {min_samples} needed", "at_quota")
    if s.n < min_samples:
        return skip(f"{s.n} intervals, fewer than the {min_samples} needed", "too_few")
    line = fit_line(s)
    if line is None:
        return skip(f"every interval had the same input rate ({s.x_min:g} tuples/s), so no slope", "no_spread")
    if not all(math.isfinite(v) for v in (line.slope, line.intercept, s.x_min, s.x_max, s.executed, s.emitted)):
        return skip("the fit is not finite (input rates or CPU readings out of range)", "no_fit")
    slope, intercept, removed = line.slope, line.intercept, None
    share = _slope_and_intercept(s.ns, s.sx, s.sxx, s.ss, s.sxs) if base_load > 0 and s.ns == s.n else None
    if share is not None and all(math.isfinite(v) for v in share):
        slope, intercept = slope - base_load * share[0], intercept - base_load * share[1]
        removed = base_load * s.ss / s.ns
    thread = _slope_and_intercept(s.n, s.sx, s.sxx, s.sty, s.sxty) if s.nt == s.n else None
    idle_fall = None
    if thread is not None and math.isfinite(thread[0]) and thread[0] < 0:
        # An idle executor thread wakes to poll its queue; the busier it is, the fewer wake-ups. That
        # fall is not a negative cost per tuple: the thread's CPU is charged as a constant instead,
        # the line turning about the intervals' mean point.
        idle_fall = -thread[0]
        slope, intercept = slope + idle_fall, intercept - idle_fall * s.sx / s.n
    if not slope > 0:
        return skip(f"CPU does not grow with input rate (slope {slope:.4g} percent per tuple/s)", "not_growing")
    spread, error = rate_spread(s), e_error(s, line.slope)
    fitted = {
        name: round(value, 6) if value is not None and math.isfinite(value) else None
        for name, value in (("e", slope / 100.0), ("met", intercept), ("r2", line.r2), ("e_error", error),
                            ("rate_spread", spread), ("rate_min", s.x_min), ("rate_max", s.x_max))
    }
    if spread < criteria.min_rate_spread:
        return skip(
            f"its input rates ({s.x_min:.3g}..{s.x_max:.3g} tuples/s) span {spread:.0%} of the greatest, under the "
            f"{criteria.min_rate_spread:.0%} needed to tell e from MET", "narrow_range", fitted)
    if error > criteria.max_e_error:
        r2 = "undefined" if line.r2 is None else f"{line.r2:.2f}"
        return skip(
            f"poor fit: e has a standard error of {error:.0%} of its value (over {criteria.max_e_error:.0%}), r2 {r2}",
            "poor_fit", fitted)
    entry = ProfileEntry(
        profile=profile,
        machine_type=machine_type,
        e=slope / 100.0,
        met=max(intercept, 0.0),
        alpha=s.emitted / s.executed if s.executed > 0 else 0.0,
        r2=line.r2,
        samples=s.n,
        rate_range=(max(s.x_min, 0.0), max(s.x_max, 0.0)),
    )
    clamped = (Clamped(profile, machine_type, "met", intercept, 0.0),) if intercept < 0 else ()
    return PairResult(entry=entry, clamped=clamped, base_load_removed=removed, thread_idle_fall=idle_fall)


OUTLIER_MADS = 6.0
"""An interval this many robust standard deviations (1.4826 MAD) off the pair's robust line is an outlier."""
OUTLIER_FLOOR_PERCENT = 1.0
"""Least residual (percent of the machine) that counts as an outlier, so near-exact lines flag nothing."""
OUTLIER_FLOOR_RELATIVE = 0.25
"""Least residual relative to the line's CPU at the interval's rate that counts as an outlier."""


@dataclass(frozen=True)
class OutlierBand:
    """A pair's robust line (Theil-Sen on a sample of its intervals) and how far off it an interval may lie.

    Least squares lets one interval at 100x the rate drag the line to itself (its leverage is
    huge), so outliers are judged against a line that ignores them, and the least-squares fit is
    then made from the intervals inside the band.
    """

    profile: str
    machine_type: str
    slope: float
    intercept: float
    mad_percent: float
    """Residual scale: 1.4826 x the median absolute residual, percent of the machine."""
    k: float = OUTLIER_MADS

    def is_outlier(self, x: float, y: float) -> bool:
        predicted = self.intercept + self.slope * x
        return abs(y - predicted) > self.threshold(predicted)

    def threshold(self, predicted: float) -> float:
        return max(self.k * self.mad_percent, OUTLIER_FLOOR_PERCENT, OUTLIER_FLOOR_RELATIVE * abs(predicted))


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def outlier_band(profile: str, machine_type: str, points: list[tuple[float, float]], k: float = OUTLIER_MADS) -> OutlierBand | None:
    """The band of a pair from a sample of its (input rate, CPU percent) intervals; None under 4 points (nothing to judge by)."""
    finite = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    if len(finite) < 4:
        return None
    xs = [x for x, _ in finite]
    ys = [y for _, y in finite]
    if max(xs) - min(xs) <= SPREAD_EPSILON * max(abs(v) for v in xs + [1.0]):
        slope, intercept = 0.0, _median(ys)
    else:
        from scipy.stats import theilslopes

        fitted = theilslopes(ys, xs)
        slope, intercept = float(fitted.slope), float(fitted.intercept)
    mad = 1.4826 * _median([abs(y - intercept - slope * x) for x, y in finite])
    return OutlierBand(profile, machine_type, slope, intercept, mad, k)
