"""The strategy registry: name -> ``plan(problem) -> StrategyResult`` (see planner.strategies.base).

The registry imports the strategy modules; they import only planner.strategies.base
(and each other's functions), never this module, so there is no import cycle.
"""
from __future__ import annotations

from planner.strategies import even, fast, optimal, paper, resource_aware
from planner.strategies.base import DEFAULT_STRATEGY, Deadline, Strategy, StrategyResult

STRATEGIES: dict[str, Strategy] = {
    "paper": paper.plan,
    "even": even.plan,
    "resource_aware": resource_aware.plan,
    "fast": fast.plan,
    "optimal": optimal.plan,
}

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Deadline", "Strategy", "StrategyResult"]
