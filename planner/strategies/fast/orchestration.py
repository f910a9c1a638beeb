"""The order of ``fast``'s steps: fluid bound, sizes and packings per size limit, then polish the best candidates.

Components fed by an ``all`` grouping or by ``global`` streams only keep one
instance (more would only add load, or get nothing); fixed parallelism is
kept and only placed. On small requests every packing is polished, and the
local search also starts from the ``paper`` plan, so ``fast`` never ends below
it there. Where a ``global`` stream feeds an instance 0, the search runs with
and without moving that instance; the better end is kept. Small requests then
go on to the count jumps of ``resize`` (large ones to a shorter search without fresh packings), unless R is
already within 2% (large: 5%) of the fluid bound.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from planner import survive
from planner.errors import PlanningError, PlanningTimeout
from planner.problem import Problem
from planner.simulator import RATE_REL_TOL, HostedModel, memory_message, memory_over
from planner.strategies import paper
from planner.strategies.base import Deadline, StrategyResult
from planner.strategies.fast.colocate import colocate
from planner.strategies.fast.fluid_lp import UNBOUNDED, FluidInput, fluid_lp
from planner.strategies.fast.joint_shares import joint_search
from planner.strategies.fast.machine_types import MachineTypes
from planner.strategies.fast.memory import memory_first, repair_memory
from planner.strategies.fast.packing import Packing, best_packing
from planner.strategies.fast.polish import Layout, polish
from planner.strategies.fast.resize import resize_search
from planner.strategies.fast.sizing import (
    Counts,
    SizeChoice,
    choose_sizes,
    instance_sizes,
)
from planner.strategies.fast.tuning import DEFAULT_TUNING, FastTuning

NO_RATE = "the cluster cannot carry the topology at any input rate: the fixed costs (MET) exceed the machines"


@dataclass(frozen=True)
class Candidate:
    """A starting layout for the local search, and where it came from."""

    packing: Packing
    size_choice: SizeChoice | None
    """The instance sizes it was packed with; None for the paper plan and the memory-first layout."""
    memory_first: bool = False
    """Made for memory first (planner.strategies.fast.memory.memory_first)."""

    @property
    def label(self) -> str:
        if self.memory_first:
            return "memory first"
        if self.size_choice is None:
            return "paper plan"
        return f"packing, instances at most 1/{self.size_choice.divisor} machine"

    @property
    def lp_rate(self) -> float:
        """The LP rate of its instance sizes, tuples/s (0 for the paper plan)."""
        return 0.0 if self.size_choice is None else self.size_choice.lp.rate


def plan(problem: Problem, tuning: FastTuning = DEFAULT_TUNING) -> StrategyResult:
    """Plan with the fluid LP, round to instances, polish with the closed form (see planner.strategies.fast)."""
    deadline = Deadline("fast", problem.options.time_limit_s)
    types = MachineTypes.of(problem)
    shares = problem.one_each_shares
    unit_input = shares.split + shares.each + shares.first
    one_only = ((shares.each > 0) | ((shares.split == 0) & (shares.first > 0))) & (problem.fixed == 0)
    counts = Counts(np.where(problem.fixed > 0, problem.fixed, np.where(one_only, 1, 0)), one_only)
    active = (types.cost > 0).any(axis=1) & (unit_input > 0)
    if not active.any():
        raise PlanningError(UNBOUNDED)
    fluid = FluidInput(types, unit_input, active, _rate_cap(types, counts, unit_input, shares.first))

    # 1. Fluid bound with each type's largest instance size.
    bound = fluid_lp(fluid, types.largest_instance, deadline)
    if bound is None:
        raise PlanningError(NO_RATE)
    lp_solves = 1

    # 2-3. Per size limit: instance sizes, then the best packing by bisection on the rate.
    model = HostedModel.of(problem)
    small = problem.n_components * problem.n_machines <= tuning.polish_all_max_cells
    candidates: list[Candidate] = []
    for divisor in tuning.size_divisors:
        choice, solves = choose_sizes(fluid, counts, divisor, divisor == tuning.size_divisors[0], deadline,
                                      tuning.size_alternatives_gap, tuning.size_alternatives_max if small else 0)
        lp_solves += solves
        for option in () if choice is None else (choice, *choice.alternatives):
            if any(np.array_equal(option.size, c.size_choice.size)
                   for c in candidates if c.size_choice is not None):
                continue
            packing = best_packing(model, fluid, counts, option.lp.flows, option.lp.rate,
                                   partial(instance_sizes, fluid, counts, option.size), tuning, deadline)
            candidates.append(Candidate(packing, option))
            deadline.check(0)
    if not candidates:
        raise PlanningError(NO_RATE)

    # 4. Local search: from the best packing, or, where the search is cheap, from each packing and the paper plan.
    candidates.sort(key=lambda cand: -cand.packing.rate)
    if not small:
        candidates = candidates[:1]
    else:
        candidates += _paper_start(problem, model, deadline)
    free = (problem.fixed == 0) & ~one_only
    if problem.memory_bound:
        candidates = _within_memory(model, candidates, free, counts)
    first_moves = (True, False) if (shares.first > 0).any() else (False,)
    iterations = 0
    polished: list[tuple[float, Layout, Candidate]] = []
    for candidate in candidates:
        for move_first in first_moves:
            layout, steps = polish(model, candidate.packing.layout, free, move_first, deadline,
                                   problem.options.max_iterations, tuning)
            iterations += steps
            polished.append((model.max_rate(layout.hosts, layout.first_machine).rate, layout, candidate))
    polished.sort(key=lambda p: -p[0])
    _, layout, start = polished[0]
    if problem.memory_bound and memory_over(problem, problem.memory_used(layout.hosts)).any():
        raise PlanningError("the cluster cannot hold the topology's memory: "
                            + memory_message(problem, problem.memory_used(layout.hosts)))
    # 5. The jumps, from the best polished layout (small requests: the best tuning.resize_starts).
    ends = []
    starts = _distinct(polished, tuning.resize_starts if small else 1)
    shared = dataclasses.replace(tuning, resize_work_cells=tuning.resize_work_cells // len(starts))  # one budget for all starts
    for rate, layout, candidate in starts:
        if problem.memory_bound and memory_over(problem, problem.memory_used(layout.hosts)).any():
            continue
        layout, steps = resize_search(model, layout, free, bool(first_moves[0]), bound.rate, deadline,
                                      problem.options.max_iterations, shared)
        iterations += steps
        ends.append((model.max_rate(layout.hosts, layout.first_machine).rate, layout, candidate))
    _, layout, start = max(ends, key=lambda e: e[0] * (1 + RATE_REL_TOL) if e is ends[0] else e[0])
    if problem.has_remote_cost:
        layout, steps = _colocate_and_polish(model, layout, free, bool(first_moves[0]), deadline, tuning)
        iterations += steps
        blind = _remote_blind_layout(problem, tuning, deadline)
        if blind is not None:
            blind_polished, steps = polish(model, blind, free, bool(first_moves[0]), deadline,
                                     problem.options.max_iterations, tuning)
            iterations += steps
            if model.max_rate(blind_polished.hosts, blind_polished.first_machine).rate > \
                    model.max_rate(layout.hosts, layout.first_machine).rate * (1 + RATE_REL_TOL):
                layout = blind_polished
    joint, even_split = None, None
    if problem.options.weighted_shares:  # 7. counts and placement for what weighted shares reach
        if problem.options.survive_loss is not None:  # its worst-case search starts from the even split's plan too
            even_split = layout.placement(problem)
        joint = joint_search(model, layout, free, deadline, tuning)
        layout = joint.layout
    stats: dict[str, Any] = {
        "iterations": iterations,
        "lp_solves": lp_solves,
        "lp_rate": start.lp_rate,
        "start": start.label,
        "rounded_rate": start.packing.rate,
    }
    if not (problem.fixed > 0).any() and not problem.has_all_grouping:
        stats["fluid_bound"] = bound.rate
    if joint is not None:
        stats["joint_shares"] = joint.stats
    if even_split is not None:
        stats[survive.EVEN_START_KEY] = even_split
    return StrategyResult(placement=layout.placement(problem), stats=stats)


def _distinct(polished: list[tuple[float, Layout, Candidate]], n: int) -> list[tuple[float, Layout, Candidate]]:
    """The first ``n`` of ``polished`` (best first) with different layouts."""
    chosen: list[tuple[float, Layout, Candidate]] = []
    for entry in polished:
        if len(chosen) >= n:
            break
        if not any(np.array_equal(entry[1].hosts, c[1].hosts) and np.array_equal(entry[1].first_machine, c[1].first_machine)
                   for c in chosen):
            chosen.append(entry)
    return chosen


def _remote_blind_layout(problem: Problem, tuning: FastTuning, deadline: Deadline) -> Layout | None:
    """The plan ``fast`` makes when tuples crossing workers cost nothing: a start the remote-aware search may not
    reach (its steps weigh co-location one move at a time). None where that plan fails."""
    left = deadline.remaining_s()
    # the joint search of weighted shares (step 7) is for the plan, not for this start
    options = problem.options.model_copy(update={"weighted_shares": False} if left is None else
                                         {"weighted_shares": False, "time_limit_s": max(left, 1e-3)})
    blind = dataclasses.replace(problem, has_remote_cost=False, options=options)
    try:
        placement = plan(blind, tuning).placement
    except PlanningTimeout:
        raise
    except PlanningError:
        return None
    return Layout.of(problem, placement)


def _colocate_and_polish(model: HostedModel, layout: Layout, free: np.ndarray, move_first: bool, deadline: Deadline,
                         tuning: FastTuning) -> tuple[Layout, int]:
    """Co-location moves, then the polish again (it may rebalance what they gathered); the better end is kept."""
    gathered, steps = colocate(model, layout, deadline, tuning)
    polished, more = polish(model, gathered, free, move_first, deadline, model.problem.options.max_iterations, tuning)
    best = max((layout, gathered, polished), key=lambda lay: model.max_rate(lay.hosts, lay.first_machine).rate)
    return best, steps + more


def _within_memory(model: HostedModel, candidates: list[Candidate], free: np.ndarray, counts: Counts
                   ) -> list[Candidate]:
    """Every candidate repaired to fit the machines' memory, and a layout made for memory first
    (planner.strategies.fast.memory); an error if none fits."""
    fitting = []
    least = np.where(counts.fixed > 0, counts.fixed, 1)
    by_memory = memory_first(model, least)
    if by_memory is not None:
        rate = model.max_rate(by_memory.hosts, by_memory.first_machine).rate
        fitting.append(Candidate(Packing(rate, by_memory), None, memory_first=True))
    for candidate in candidates:
        layout = repair_memory(model, candidate.packing.layout, free)
        if layout is not None:
            rate = model.max_rate(layout.hosts, layout.first_machine).rate
            fitting.append(Candidate(Packing(rate, layout), candidate.size_choice))
    if not fitting:
        problem = model.problem
        raise PlanningError("the machines' memory cannot hold one instance of every component with their workers: "
                            "in the best CPU packing, "
                            + memory_message(problem, problem.memory_used(candidates[0].packing.layout.hosts)))
    return fitting


def _rate_cap(types: MachineTypes, counts: Counts, unit_input: np.ndarray, first_extra: np.ndarray) -> float:
    """An instance that alone takes a stream (fixed count, ``global`` to instance 0) caps R by its best type."""
    best_size = types.largest_instance.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        caps = [counts.fixed[c] * best_size[c] / unit_input[c]
                for c in np.flatnonzero((counts.fixed > 0) & (unit_input > 0))]
        caps += [best_size[c] / first_extra[c] for c in np.flatnonzero(first_extra > 0)]
    return float(min(caps, default=np.inf))


def _paper_start(problem: Problem, model: HostedModel, deadline: Deadline) -> list[Candidate]:
    """The paper strategy's placement as a starting point, or none if it fails (a time-out still stops ``fast``)."""
    rate = problem.options.initial_rate
    try:
        state, _, _, _ = paper.maximize_throughput(paper.first_assignment(problem, rate, deadline), rate, deadline)
    except PlanningTimeout:
        raise
    except PlanningError:
        return []
    layout = Layout(state.hosts.copy(), state.first_machines())
    return [Candidate(Packing(model.max_rate(layout.hosts, layout.first_machine).rate, layout), None)]
