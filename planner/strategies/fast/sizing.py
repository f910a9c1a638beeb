"""Step 2 of ``fast``: one instance size per component, and the LP again with the MET that size costs.

All instances of a component get the same share (shuffle splits evenly), so
one size per component must fit the thread cap of every type it runs on: the
largest that fits the types its LP flow uses, then (for the largest size
limit) a coordinate search over the other types' sizes re-solves the LP with
the MET each choice really costs. Smaller limits (1/2, 1/4, ... of a machine)
are tried as well: big instances pay the MET less often, small ones pack better.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.simulator import RATE_REL_TOL
from planner.strategies.base import Deadline
from planner.strategies.fast.fluid_lp import FluidInput, FluidSolution, fluid_lp


@dataclass(frozen=True)
class Counts:
    """Instance counts the strategy does not choose."""

    fixed: np.ndarray
    """(C,) fixed parallelism, 1 where one instance is all that helps, else 0 (free)."""
    one_only: np.ndarray
    """(C,) bool: fed by an ``all`` grouping or by ``global`` streams only, so one instance."""


@dataclass(frozen=True)
class SizeChoice:
    """For one size limit: each component's instance size and the LP with the MET those sizes cost."""

    divisor: int
    """Instances use at most 1/divisor of a machine (and their thread cap)."""
    size: np.ndarray
    """(C,) tuples/s of one instance of each component (inf: no limit)."""
    lp: FluidSolution
    alternatives: tuple["SizeChoice", ...] = ()
    """Other sizes the coordinate search tried whose LP rate is close to this one's (best first)."""


def instance_sizes(fluid: FluidInput, counts: Counts, size: np.ndarray, rate: float) -> np.ndarray:
    """(C, T) instance size (tuples/s) of every component on every type at input rate ``rate``; -1 where it cannot run.

    A free component has its chosen size on every type whose cap allows it; one
    with a fixed count has ``beta * rate / count``.
    """
    largest = fluid.types.largest_instance
    sizes = np.where(largest >= size[:, None] * (1 - 1e-9), size[:, None], -1.0)
    for c in np.flatnonzero(counts.fixed > 0):
        x = fluid.unit_input[c] * rate / counts.fixed[c]
        sizes[c] = np.where(largest[c] >= x, max(x, 1e-300), -1.0)
    return sizes


def choose_sizes(fluid: FluidInput, counts: Counts, divisor: int, coordinate_search: bool,
                 deadline: Deadline, alternatives_gap: float = 0.0, alternatives_max: int = 0
                 ) -> tuple[SizeChoice | None, int]:
    """The instance sizes for one size limit (None if the LP finds no rate), and the LPs solved.

    With ``alternatives_max`` > 0 the coordinate search also starts from each component's size on the type that
    carries most of its capped flow (a component split over a fast and a slow type otherwise keeps the slow
    type's small size), and the choice carries the other tries whose LP rate is within ``alternatives_gap`` of
    the best (at most that many, highest first).
    """
    types = fluid.types
    cap = np.where(types.largest_instance > 0, types.size_cap(divisor), -1.0)
    capped = fluid_lp(fluid, cap, deadline)
    lp_solves = 1
    if capped is None:
        return None, lp_solves
    flows = capped.flows
    flowing = [flows[c].sum() > 0 and cap[c].max() > 0 for c in range(len(cap))]
    smallest = np.array([cap[c][flows[c] > 1e-9 * max(flows[c].max(), 1e-300)].min() if flowing[c] else np.inf
                         for c in range(len(cap))])
    starts = [smallest]
    if alternatives_max > 0:
        starts.append(np.array([cap[c][np.argmax(flows[c])] if flowing[c] else np.inf for c in range(len(cap))]))
    best: tuple[np.ndarray, FluidSolution] | None = None
    tried: list[tuple[float, np.ndarray, FluidSolution]] = []
    for start in starts:
        start = np.where(counts.one_only, np.inf, start)
        if best is not None and np.array_equal(start, best[0]):
            continue
        size, sized, solves = _coordinate_search(fluid, counts, cap, start, capped.rate, coordinate_search,
                                                 tried, deadline)
        lp_solves += solves
        if sized is not None and (best is None or sized.rate > best[1].rate * (1 + RATE_REL_TOL)):
            best = (size, sized)
    if best is None or best[1].rate <= 0:
        return None, lp_solves
    size, sized = best
    close = sorted((t for t in tried if t[0] >= sized.rate * (1 - alternatives_gap)
                    and not np.array_equal(t[1], size)), key=lambda t: -t[0])
    unique: list[SizeChoice] = []
    for _, trial, result in close:
        if len(unique) >= alternatives_max:
            break
        if not any(np.array_equal(trial, u.size) for u in unique):
            unique.append(SizeChoice(divisor, trial, result))
    return SizeChoice(divisor, size, sized, tuple(unique)), lp_solves


def _coordinate_search(fluid: FluidInput, counts: Counts, cap: np.ndarray, size: np.ndarray, rate: float,
                       search: bool, tried: list, deadline: Deadline
                       ) -> tuple[np.ndarray, FluidSolution | None, int]:
    """From ``size``: the LP, then (``search``) each component in turn takes another type's size limit (and
    leaves the types it exceeds) where the LP rate rises. Every LP that found a rate is appended to ``tried``."""
    sized = fluid_lp(fluid, instance_sizes(fluid, counts, size, rate), deadline)
    lp_solves = 1
    if sized is not None and sized.rate > 0:
        tried.append((sized.rate, size, sized))
    for c in np.flatnonzero(fluid.active & (counts.fixed == 0)) if search else ():
        for other in np.unique(cap[c][cap[c] > 0]):
            if np.isclose(other, size[c]):
                continue
            deadline.check()
            trial = size.copy()
            trial[c] = other
            result = fluid_lp(fluid, instance_sizes(fluid, counts, trial, rate), deadline)
            lp_solves += 1
            if result is not None and result.rate > 0:
                tried.append((result.rate, trial, result))
            if result is not None and (sized is None or result.rate > sized.rate * (1 + RATE_REL_TOL)):
                sized, size = result, trial
    return size, sized, lp_solves
