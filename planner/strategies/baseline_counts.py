"""Instance counts for the Storm baselines (even, resource_aware).

Storm's schedulers only place executors; the user picks the parallelism. To
compare placement alone, as the paper's simulation does, a baseline gets the
instance counts of the ``paper`` plan for every component whose parallelism
is not fixed (and the fixed count where it is).
"""
from __future__ import annotations

from planner.errors import PlanningTimeout
from planner.problem import Problem
from planner.simulator import evaluate_problem
from planner.strategies import paper


def paper_counts(problem: Problem, for_strategy: str) -> tuple[dict[str, int], float]:
    """(instances per component of the paper plan, that plan's closed-form input rate in tuples/s).

    A time-out names ``for_strategy``, the strategy the caller asked for, and why it ran the paper's.
    """
    try:
        result = paper.plan(problem)
    except PlanningTimeout as exc:
        raise PlanningTimeout(f"the {for_strategy} strategy takes its instance counts from the paper's plan, "
                              f"which timed out: {exc}") from None
    evaluation = evaluate_problem(problem, result.placement)
    return evaluation.instances, evaluation.input_rate
