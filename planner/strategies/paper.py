"""The paper's algorithm, faithful: FirstAssignment then MaximizeThroughput (docs/concepts/model.md, "The paper's algorithm").

Where the paper is loose, docs/concepts/model.md decides and this follows it: the new
instance goes where it *fits* (least predicted CPU, then most remaining
capacity, then machine id), all instances of a component are re-split when
one is added, the step stops on a relative tolerance, and an iteration guard
bounds the loop. "Over-utilised" covers the machine limit (capacity * u_max)
and the per-thread cap (100/cores * u_max) alike.

Memory is a hard limit: an instance goes only where it fits the machine's memory
(planner.strategies.state.PlacementState.memory_fits); where none has room it counts as
"no machine found".

Components with fixed parallelism get all their instances in FirstAssignment
and never another; if one is the hottest task, that counts as "no machine found".
"""
from __future__ import annotations

import numpy as np

from planner.errors import PlanningError
from planner.problem import Problem
from planner.simulator import fits_within, instance_cpu_pct
from planner.strategies.base import Deadline, StrategyResult
from planner.strategies.state import PlacementState, machine_rank


def first_assignment(problem: Problem, rate: float, deadline: Deadline | None = None) -> PlacementState:
    """One instance of each component (all of a fixed one) on the machine where its predicted CPU is least."""
    state = PlacementState(problem)
    counts = np.where(problem.fixed > 0, problem.fixed, 1)
    rates = state.instance_rates(counts)
    load = np.zeros(problem.n_machines)
    for c in range(problem.n_components):
        if deadline is not None:
            deadline.check()
        for i in range(int(counts[c])):
            per_tuple_s = (rates.each_instance[c] + (rates.first_extra[c] if i == 0 else 0.0)) * rate
            cpu = instance_cpu_pct(state.cost[c], state.met[c], per_tuple_s)
            remaining = problem.limit - load
            fits = fits_within(cpu, remaining) & fits_within(cpu, state.thread_limit)
            memory_fits = state.memory_fits(c)
            w = machine_rank(problem, cpu, -remaining, fits & memory_fits)
            if w is None and fits.any():
                raise PlanningError(
                    f"the cluster is too small: instance {i} of component {problem.component_ids[c]} "
                    f"({problem.memory[c]:g} MB) fits in no machine's memory beside the instances placed before it"
                )
            if w is None:
                raise PlanningError(
                    f"the cluster is too small: instance {i} of component {problem.component_ids[c]} "
                    f"fits on no machine at the initial rate {rate:g} tuples/s"
                )
            state.add(c, w)
            load[w] += cpu[w]
    return state


def _violation(state: PlacementState, rate: float) -> tuple[int, int] | None:
    """(first over-utilised machine, component of its hottest task), or None if every load is within its limit."""
    problem = state.problem
    a, b = state.linear_loads()
    load = instance_cpu_pct(a, b, rate)
    cpu, cpu0 = state.instance_cpu(rate)
    hosted = state.hosts > 0
    hottest_cpu = np.where(hosted, cpu, -np.inf)
    for c, machines in enumerate(state.machines_of):
        if machines:
            hottest_cpu[c, machines[0]] = max(hottest_cpu[c, machines[0]], cpu0[c])
    machine_over = ~fits_within(load, problem.limit)
    thread_over = (~fits_within(hottest_cpu, state.thread_limit[None, :])).any(axis=0)
    over = np.flatnonzero(machine_over | thread_over)
    if over.size == 0:
        return None
    w = int(over[0])
    return w, int(np.argmax(hottest_cpu[:, w]))


def _place_new_instance(state: PlacementState, component: int, rate: float) -> int | None:
    """The machine for one more instance of ``component`` after the re-split, or None if it fits nowhere."""
    problem = state.problem
    counts = state.counts.copy()
    counts[component] += 1
    a, b = state.linear_loads(counts)
    rates = state.instance_rates(counts)
    remaining = problem.limit - instance_cpu_pct(a, b, rate)
    cpu = instance_cpu_pct(state.cost[component], state.met[component], rates.each_instance[component] * rate)
    fits = fits_within(cpu, remaining) & fits_within(cpu, state.thread_limit) & state.memory_fits(component)
    return machine_rank(problem, cpu, -remaining, fits)


def maximize_throughput(state: PlacementState, rate: float, deadline: Deadline) -> tuple[PlacementState, float, int, str]:
    """Algorithm 2 with docs/concepts/model.md's fixes; returns (final state, its input rate, iterations, why it stopped)."""
    problem = state.problem
    options = problem.options
    scale = 1.0
    current, final, final_rate = state, state.copy(), rate
    iterations = 0
    while True:
        iterations += 1
        if iterations > options.max_iterations:
            return final, final_rate, iterations - 1, "iteration guard"
        deadline.check(iterations)
        violation = _violation(current, rate)
        if violation is None:
            final, final_rate = current.copy(), rate
            rate += rate / scale
            if not np.isfinite(rate):
                raise PlanningError("the input rate is unbounded: no machine's load grows with the input rate")
            continue
        _, component = violation
        machine = None if problem.fixed[component] else _place_new_instance(current, component, rate)
        if machine is not None:
            current.add(component, machine)
            continue
        if 1.0 / scale < options.tolerance:
            return final, final_rate, iterations, "tolerance"
        scale *= 2.0
        current, rate = final.copy(), final_rate


def plan(problem: Problem) -> StrategyResult:
    """FirstAssignment at ``options.initial_rate``, then MaximizeThroughput (tuned by PlanOptions' tolerance and iteration guard)."""
    options = problem.options
    deadline = Deadline("paper", options.time_limit_s)
    state = first_assignment(problem, options.initial_rate, deadline)
    final, rate, iterations, stopped = maximize_throughput(state, options.initial_rate, deadline)
    return StrategyResult(
        placement=final.placement(),
        stats={"iterations": iterations, "strategy_rate": rate, "stopped_by": stopped},
    )
