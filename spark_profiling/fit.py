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


def profile_entry(profile: str, machine_type: str, s: PairSums, min_samples: int, base_load: float = 0.0) -> PairResult:
    """The pair's ProfileEntry, or why there is none.

    ``base_load`` (percent of the machine) is taken out in proportion to the task's share of its
    machine's overhead in each interval: the line of ``y - base_load * s`` against ``x``, from the
    sums. Where a share is unknown for some interval, nothing is taken out.
    ``r2`` is that of the fitted line of charged CPU before any clamp. A slope at or below zero
    means the CPU does not grow with the input rate: no usable cost per tuple, so the pair is skipped.
    """
    def skip(reason: str) -> PairResult:
        return PairResult(entry=None, skipped=Skipped(profile, machine_type, s.n, reason))

    if s.n < min_samples:
        return skip(f"{s.n} intervals, fewer than the {min_samples} needed")
    line = fit_line(s)
    if line is None:
        return skip(f"every interval had the same input rate ({s.x_min:g} tuples/s), so no slope")
    if not all(math.isfinite(v) for v in (line.slope, line.intercept, s.x_min, s.x_max, s.executed, s.emitted)):
        return skip("the fit is not finite (input rates or CPU readings out of range)")
    slope, intercept, removed = line.slope, line.intercept, None
    share = _slope_and_intercept(s.ns, s.sx, s.sxx, s.ss, s.sxs) if base_load > 0 and s.ns == s.n else None
    if share is not None and all(math.isfinite(v) for v in share):
        slope, intercept = slope - base_load * share[0], intercept - base_load * share[1]
        removed = base_load * s.ss / s.ns
    if not slope > 0:
        return skip(f"CPU does not grow with input rate (slope {slope:.4g} percent per tuple/s)")
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
    return PairResult(entry=entry, clamped=clamped, base_load_removed=removed)
