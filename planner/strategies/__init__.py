"""The strategy registry: every strategy is a pure function of the request that returns a placement.

A strategy decides instance counts and places every instance; it does not
score its result. planner.api scores every strategy's placement with the same
simulator, so strategies compare on equal terms.
"""
from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.errors import PlanningTimeout
from planner.model import Cluster, PlanOptions, Placement, Topology
from planner.profiles import ProfileTable


@dataclass
class StrategyResult:
    """A strategy's answer: where every instance runs, and what it wants to report (``iterations``, ...)."""

    placement: Placement
    stats: dict = field(default_factory=dict)


Strategy = Callable[[Topology, Cluster, ProfileTable, PlanOptions], StrategyResult]


class Deadline:
    """``options.time_limit_s`` for strategies that iterate: call ``check`` in the loop."""

    def __init__(self, strategy: str, time_limit_s: float | None):
        self.strategy = strategy
        self.limit = time_limit_s
        self.start = time.perf_counter()

    def check(self, iterations: int) -> None:
        """Raise PlanningTimeout once the time limit has passed (cheap: call it every iteration)."""
        if self.limit is not None and time.perf_counter() - self.start > self.limit:
            raise PlanningTimeout(
                f"the {self.strategy} strategy ran past its time limit of {self.limit:g} s "
                f"after {iterations} iterations"
            )


# name -> module with a ``plan(topology, cluster, profiles, options) -> StrategyResult`` function.
_MODULES: dict[str, str] = {
    "paper": "planner.strategies.paper",
    "even": "planner.strategies.even",
    "resource_aware": "planner.strategies.resource_aware",
    "fast": "planner.strategies.fast",
    "optimal": "planner.strategies.optimal",
}

STRATEGIES: dict[str, Strategy] = {name: importlib.import_module(module).plan for name, module in _MODULES.items()}

DEFAULT_STRATEGY = "fast"
"""The best strategy the project has on the benchmarks (benchmarks/planner_scenarios.py)."""
