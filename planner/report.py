"""The paper's comparison (its section 6.3), rerun in our model: every strategy on every paper scenario.

Used by ``hetsched compare`` and benchmarks/planner_scenarios.py. Every number is
the simulator's (closed-form R_max of the strategy's placement), so the
strategies compare on equal terms. The yardstick is the exact ``optimal``
strategy where it finishes within its time limit, and the LP upper bound
(planner.bounds) always.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from rich.table import Table

from planner.api import make_plan
from planner.errors import PlanningError
from planner.fixtures import SCENARIOS, TOPOLOGIES, Scenario, load_scenario
from planner.model import Plan, PlanOptions
from planner.problem import Problem
from planner.profiles import ProfileTable

BASELINES = ("paper", "even", "resource_aware", "fast")
SHORT = {"resource_aware": "RAS"}


@dataclass
class Yardstick:
    """What no plan can beat: the exact optimum where it was proven, and the LP bound."""

    lp_bound: float | None = None
    optimal: float | None = None
    optimal_note: str = "not run"


@dataclass
class ScenarioResult:
    name: str
    topology: str
    scenario: int
    machines: int
    plans: dict[str, Plan | str] = field(default_factory=dict)  # strategy -> plan, or the error sentence
    yardstick: Yardstick = field(default_factory=Yardstick)
    yardstick_s: float = 0.0

    def rate(self, strategy: str) -> float | None:
        plan = self.plans.get(strategy)
        return plan.input_rate if isinstance(plan, Plan) else None

    @property
    def best_known(self) -> tuple[float | None, str]:
        """(the optimum if proven, else the LP bound; which one it is)."""
        if self.yardstick.optimal is not None:
            return self.yardstick.optimal, "optimal"
        return self.yardstick.lp_bound, "LP bound"


def _yardstick(scenario, optimal_time_limit_s: float | None) -> Yardstick:
    profiles = ProfileTable.from_entries(scenario.profiles.entries)
    yard = Yardstick()
    try:
        from planner.bounds import lp_upper_bound
    except ImportError:
        yard.optimal_note = "planner.bounds not available"
    else:
        yard.lp_bound = lp_upper_bound(scenario.topology, scenario.cluster, profiles)
    if optimal_time_limit_s is None:
        return yard
    try:
        from planner.strategies import optimal
    except ImportError:
        yard.optimal_note = "planner.strategies.optimal not available"
        return yard
    problem = Problem.build(scenario.topology, scenario.cluster, profiles, PlanOptions())
    try:
        solution = optimal.solve(problem, time_limit_s=optimal_time_limit_s)
    except PlanningError as exc:
        yard.optimal_note = str(exc)
    else:
        yard.optimal = solution.input_rate
        yard.optimal_note = "proven optimal"
    return yard


def without_thread_caps(scenario: Scenario) -> Scenario:
    """The scenario with no ``cores`` on any machine type: no per-thread cap, as in the paper's own simulation."""
    cluster = scenario.cluster.model_copy(deep=True)
    for machine_type in cluster.machine_types:
        machine_type.cores = None
    return replace(scenario, cluster=cluster)


def compare_scenarios(
    topologies: Iterable[str] = TOPOLOGIES,
    scenarios: Iterable[int] = SCENARIOS,
    strategies: Iterable[str] = BASELINES,
    optimal_time_limit_s: float | None = None,
    progress: Callable[[str], None] | None = None,
    thread_caps: bool = True,
) -> list[ScenarioResult]:
    """Plan every scenario with every strategy; ``optimal_time_limit_s`` None skips the exact search.

    ``thread_caps`` False drops the per-thread cap (``cores``) from the clusters.
    """
    results = []
    for topology in topologies:
        for number in scenarios:
            scenario = load_scenario(topology, number)
            if not thread_caps:
                scenario = without_thread_caps(scenario)
            result = ScenarioResult(scenario.name, topology, number, len(scenario.cluster.machines))
            for strategy in strategies:
                if progress:
                    progress(f"{scenario.name}: {strategy}")
                try:
                    result.plans[strategy] = make_plan(
                        scenario.topology, scenario.cluster, scenario.profiles.entries, strategy, PlanOptions()
                    )
                except PlanningError as exc:
                    result.plans[strategy] = str(exc)
            if progress:
                progress(f"{scenario.name}: bound/optimal")
            start = time.perf_counter()
            result.yardstick = _yardstick(scenario, optimal_time_limit_s)
            result.yardstick_s = time.perf_counter() - start
            results.append(result)
    return results


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def rate_table(results: list[ScenarioResult], strategies: Iterable[str] = BASELINES) -> Table:
    strategies = list(strategies)
    table = Table(title="Input rate R (tuples/s) each strategy's placement sustains (closed form)")
    for col in ("scenario", "machines", *[SHORT.get(s, s) for s in strategies], "optimal", "LP bound",
                "paper/even", "paper/best", "fast/best"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for r in results:
        best, _ = r.best_known
        table.add_row(
            r.name,
            str(r.machines),
            *[_num(r.rate(s)) if r.rate(s) is not None else "error" for s in strategies],
            _num(r.yardstick.optimal) if r.yardstick.optimal is not None else "n/a",
            _num(r.yardstick.lp_bound),
            _ratio(r.rate("paper"), r.rate("even")),
            _ratio(r.rate("paper"), best),
            _ratio(r.rate("fast"), best),
        )
    table.caption = "best = the proven optimum where there is one, else the LP upper bound; n/a: not computed"
    return table


def throughput_table(results: list[ScenarioResult], strategies: Iterable[str] = BASELINES) -> Table:
    strategies = list(strategies)
    table = Table(title="Total throughput (sum of IR over components) / sink throughput (tuples/s), weighted utilisation")
    table.add_column("scenario")
    for s in strategies:
        table.add_column(SHORT.get(s, s), justify="right")
    for r in results:
        cells = []
        for s in strategies:
            plan = r.plans.get(s)
            cells.append(
                f"{plan.total_throughput:.1f} / {plan.sink_throughput:.1f}, {plan.weighted_utilization:.0f}%"
                if isinstance(plan, Plan) else "error"
            )
        table.add_row(r.name, *cells)
    return table


def instances_table(results: list[ScenarioResult], strategies: Iterable[str] = ("paper", "fast")) -> Table:
    strategies = list(strategies)
    table = Table(title="Instances per component (the paper's Table 4 counterpart)")
    table.add_column("scenario")
    for s in strategies:
        table.add_column(s)
    for r in results:
        table.add_row(r.name, *[
            _instances(r.plans.get(s)) for s in strategies
        ])
    return table


def errors(results: list[ScenarioResult]) -> list[str]:
    out = [f"{r.name} {s}: {p}" for r in results for s, p in r.plans.items() if isinstance(p, str)]
    out += [f"{r.name} optimal: {r.yardstick.optimal_note}" for r in results
            if r.yardstick.optimal is None and r.yardstick.optimal_note != "not run"]
    return out


def _instances(plan: Plan | str | None) -> str:
    """"component count, ..." of a plan, or "error" where the strategy failed."""
    return ", ".join(f"{c} {n}" for c, n in plan.instances.items()) if isinstance(plan, Plan) else "error"
