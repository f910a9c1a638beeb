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
                 deadline: Deadline) -> tuple[SizeChoice | None, int]:
    """The instance sizes for one size limit (None if the LP finds no rate), and the LPs solved."""
    types = fluid.types
    cap = np.where(types.largest_instance > 0, types.size_cap(divisor), -1.0)
    capped = fluid_lp(fluid, cap, deadline)
    lp_solves = 1
    if capped is None:
        return None, lp_solves
    flows = capped.flows
    size = np.array([
        cap[c][flows[c] > 1e-9 * max(flows[c].max(), 1e-300)].min()
        if flows[c].sum() > 0 and cap[c].max() > 0 else np.inf
        for c in range(len(cap))
    ])
    size = np.where(counts.one_only, np.inf, size)
    sized = fluid_lp(fluid, instance_sizes(fluid, counts, size, capped.rate), deadline)
    lp_solves += 1
    # each component may take another type's size limit (and leave the types it exceeds)
    for c in np.flatnonzero(fluid.active & (counts.fixed == 0)) if coordinate_search else ():
        for other in np.unique(cap[c][cap[c] > 0]):
            if np.isclose(other, size[c]):
                continue
            deadline.check()
            trial = size.copy()
            trial[c] = other
            result = fluid_lp(fluid, instance_sizes(fluid, counts, trial, capped.rate), deadline)
            lp_solves += 1
            if result is not None and (sized is None or result.rate > sized.rate * (1 + RATE_REL_TOL)):
                sized, size = result, trial
    if sized is None or sized.rate <= 0:
        return None, lp_solves
    return SizeChoice(divisor, size, sized), lp_solves
