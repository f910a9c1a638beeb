"""What every strategy shares: its answer, its clock and its signature. Strategies import this, never the registry.

A strategy is a pure function of a compiled request (planner.problem.Problem)
that decides instance counts and places every instance; it does not score its
result. planner.api scores every strategy's placement with the same simulator,
so strategies compare on equal terms.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from planner.errors import PlanningTimeout
from planner.model import Placement
from planner.problem import Problem


@dataclass
class StrategyResult:
    """A strategy's answer: where every instance runs, and what it wants to report (``iterations``, ...)."""

    placement: Placement
    stats: dict[str, Any] = field(default_factory=dict)


class Strategy(Protocol):
    """``plan(problem) -> StrategyResult``; each module's ``plan`` also takes its tuning, with defaults."""

    def __call__(self, problem: Problem) -> StrategyResult: ...


class Deadline:
    """``options.time_limit_s`` of one planning call: every loop that can run long calls ``check``."""

    def __init__(self, strategy: str, time_limit_s: float | None):
        self.strategy = strategy
        self.limit = time_limit_s
        self.start = time.perf_counter()

    def remaining_s(self) -> float | None:
        """Seconds left (at least 0), or None without a limit."""
        if self.limit is None:
            return None
        return max(0.0, self.limit - (time.perf_counter() - self.start))

    def check(self, iterations: int | None = None) -> None:
        """Raise PlanningTimeout once the time limit has passed (cheap: call it every iteration)."""
        if self.limit is not None and time.perf_counter() - self.start > self.limit:
            after = "" if iterations is None else f" after {iterations} iterations"
            raise PlanningTimeout(f"the {self.strategy} strategy ran past its time limit of {self.limit:g} s{after}")


DEFAULT_STRATEGY = "fast"
"""The best strategy the project has on the benchmarks (benchmarks/planner_scenarios.py)."""
