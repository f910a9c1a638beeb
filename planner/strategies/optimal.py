"""The exact optimum under the planning model (MODEL.md, "optimal"), for small requests.

The yardstick for every heuristic: the largest input rate R any choice of
instance counts and placement sustains, found by mixed-integer programming
with HiGHS (``scipy.optimize.milp``).

How. For a fixed R every per-instance load is linear, so "is some plan
feasible at rate R?" is a MILP (``_feasibility_model``):

- ``N_c = sum_j 2^j b[c,j]`` with binaries ``b``, ``1 <= N_c <= Nmax_c``
  (or N_c fixed by ``parallelism``);
- integer ``x[c,w]``: instances of c on machine w, ``sum_w x[c,w] = N_c``;
- ``u[c,w] = x[c,w] / N_c``, the share of c's split input that w receives,
  stated exactly as ``x[c,w] = sum_j 2^j u[c,w] b[c,j]`` with each product of
  a binary and a [0,1] variable linearised exactly (McCormick);
- binary ``z[c,w]``: machine w hosts instance 0, which alone receives the
  ``global`` streams;
- machine load ``sum_c 100 e R (split_c u + each_c x + first_c z) + MET x
  <= cap * u_max``;
- the thread cap ``100/cores`` as a least instance count per machine type:
  c may use type t only if N_c is large enough that one instance's share fits;
- symmetry: machines of one type are interchangeable (type fixes capacity,
  cores and profiles), so their loads are ordered, which removes equivalent
  permutations without losing any plan. Aggregating them into one variable
  per type would not be exact (each machine is its own bin).

Then a bisection on R between the best plan found and the LP bound
(planner.bounds). Every feasible answer is scored in closed form by the
simulator and the lower end jumps to that plan's R_max, so the search stops
with a plan within ``OPTIMALITY_GAP`` (relative) of the proven best.

Instance counts are searched up to ``Nmax_c``: what the cluster can host
given each instance's least MET, at most ``MAX_INSTANCES_PER_COMPONENT``
(where MET is 0 more instances always refine the split, so some cap is
needed). ``stats["instance_caps"]`` lists the caps and
``stats["capped_components"]`` those where the cap, not the cluster, binds.

Components with an ``all`` input grouping and free parallelism that feed
others change their descendants' rates with their count; their counts are
enumerated outside the MILP. Components that cost nothing (no profile, e.g.
``__acker``) get their fixed parallelism or one instance, spread over the
machines the plan uses.

Limits and time: requests above the size limits below are refused with a
PlanningError that says so. The search honours ``options.time_limit_s``
(default ``DEFAULT_TIME_LIMIT_S``); when it runs out before the optimum is
proven it raises PlanningTimeout naming the best rate found and the proven
upper bound, rather than returning an unproven plan under the name "optimal".
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner.bounds import instance_limit, least_counts, lp_upper_bound_problem
from planner.errors import PlanningError, PlanningTimeout
from planner.linear_model import LinearModel
from planner.model import Cluster, PlanOptions, Placement, Topology
from planner.problem import Problem
from planner.profiles import ProfileTable
from planner.simulator import linear_loads, max_rate
from planner.strategies import StrategyResult

MAX_PLACED_COMPONENTS = 8
"""Components with a CPU cost the exact search accepts."""
MAX_MACHINES = 16
MAX_COMPONENT_MACHINE_PAIRS = 64
MAX_INSTANCES_PER_COMPONENT = 64
"""Largest instance count searched for one component (unless its parallelism is fixed higher)."""
MAX_COUNT_COMBINATIONS = 16
"""Largest number of instance-count combinations of ``all``-grouped components enumerated outside the MILP."""
DEFAULT_TIME_LIMIT_S = 60.0
PRESOLVE = True
OPTIMALITY_GAP = 1e-6
"""Relative gap between the plan returned and the proven upper bound at which the search stops."""


@dataclass
class OptimalSolution:
    placement: Placement
    input_rate: float
    """The closed-form R_max of ``placement``, tuples/s."""
    upper_bound: float
    """No plan within the instance caps sustains more than this, tuples/s."""
    lp_bound: float
    milp_solves: int
    instance_caps: dict[str, int]
    capped_components: list[str]
    elapsed_s: float
    stats: dict = field(default_factory=dict)

    def to_stats(self) -> dict:
        return {
            "iterations": self.milp_solves,
            "milp_solves": self.milp_solves,
            "proven_optimal": True,
            "optimal_input_rate": self.input_rate,
            "upper_bound": self.upper_bound,
            "relative_gap": (self.upper_bound - self.input_rate) / self.input_rate if self.input_rate > 0 else None,
            "lp_bound": self.lp_bound,
            "instance_caps": self.instance_caps,
            "capped_components": self.capped_components,
            "solve_s": self.elapsed_s,
        }


@dataclass(frozen=True)
class _Roles:
    """Which components the MILP places, which are enumerated outside it, and which cost nothing."""

    placed: list[int]
    enumerated: list[int]
    free: list[int]


def _roles(problem: Problem) -> _Roles:
    used = np.unique(problem.machine_type)
    _, each, _ = problem.shares(least_counts(problem))
    placed, enumerated, free = [], [], []
    for c in range(problem.n_components):
        costless = not problem.cost[c, used].any() and not problem.met[c, used].any()
        if costless:
            free.append(c)
            continue
        placed.append(c)
        if each[c] > 0 and problem.fixed[c] == 0 and not problem.is_sink[c]:
            enumerated.append(c)
    return _Roles(placed, enumerated, free)


def _check_size(problem: Problem, roles: _Roles) -> None:
    n_placed, n_machines = len(roles.placed), problem.n_machines
    if (
        n_placed > MAX_PLACED_COMPONENTS
        or n_machines > MAX_MACHINES
        or n_placed * n_machines > MAX_COMPONENT_MACHINE_PAIRS
    ):
        from planner.strategies import DEFAULT_STRATEGY

        raise PlanningError(
            f"the optimal strategy is limited to {MAX_PLACED_COMPONENTS} components with a CPU cost, "
            f"{MAX_MACHINES} machines and {MAX_COMPONENT_MACHINE_PAIRS} component-machine pairs; "
            f"this request has {n_placed} components, {n_machines} machines ({n_placed * n_machines} pairs); "
            f"use strategy {DEFAULT_STRATEGY} for a plan and the LP upper bound (planner.bounds) to rate it"
        )


def instance_caps(problem: Problem, roles: _Roles, max_instances: int) -> tuple[dict[int, int], list[int]]:
    """Nmax_c for every placed component with free parallelism, and those where ``max_instances`` binds.

    Every instance of c costs at least its least MET; the other components need
    at least one instance (or their fixed count) each, so no feasible plan has
    more than ``1 + (total limit - their least MET) / least MET of c`` instances of c.
    """
    used = np.unique(problem.machine_type)
    k_limit = instance_limit(problem)
    least_met = np.array(
        [min((problem.met[c, t] for t in used if problem.met[c, t] <= k_limit[t]), default=np.inf) for c in range(problem.n_components)]
    )
    reserve = float(np.sum(least_counts(problem) * np.where(np.isfinite(least_met), least_met, 0.0)))
    total = float(problem.limit.sum())
    caps: dict[int, int] = {}
    capped: list[int] = []
    for c in roles.placed:
        if problem.fixed[c] > 0:
            continue
        natural = math.inf
        if least_met[c] > 0 and np.isfinite(least_met[c]):
            natural = 1 + math.floor((total - reserve) / least_met[c] + 1e-9)
        caps[c] = int(max(1, min(natural, max_instances)))
        if natural > max_instances:
            capped.append(c)
    return caps, capped


def _least_count(cost_rate_split: float, base: float, limit: float) -> int | None:
    """Least N with ``cost_rate_split / N + base <= limit`` (one instance's CPU), or None if no N works."""
    if base > limit or (base == limit and cost_rate_split > 0):
        return None
    if cost_rate_split <= 0:
        return 1
    return max(1, math.ceil(cost_rate_split / (limit - base) - 1e-9))


@dataclass
class _Vars:
    x: dict[tuple[int, int], int] = field(default_factory=dict)
    z: dict[tuple[int, int], int] = field(default_factory=dict)


def _feasibility_model(
    problem: Problem, roles: _Roles, rate: float, counts: np.ndarray, caps: dict[int, int]
) -> tuple[LinearModel, _Vars]:
    """The MILP "some plan sustains input rate ``rate``" for fixed counts of the enumerated components."""
    model = LinearModel()
    v = _Vars()
    split, each, first = problem.shares(counts)
    k_limit = instance_limit(problem)
    machines = range(problem.n_machines)
    load: list[dict[int, float]] = [dict() for _ in machines]
    for c in roles.placed:
        fixed = int(problem.fixed[c]) or (int(counts[c]) if c in roles.enumerated else 0)
        n_max = fixed or caps[c]
        s, a, g = split[c], each[c], first[c]
        least_regular: dict[int, int | None] = {}
        least_first: dict[int, int | None] = {}
        for t in np.unique(problem.machine_type):
            cr = problem.cost[c, t] * rate
            least_regular[t] = _least_count(cr * s, cr * a + problem.met[c, t], k_limit[t])
            least_first[t] = _least_count(cr * s, cr * (a + g) + problem.met[c, t], k_limit[t])

        def allowed(least: int | None) -> bool:
            return least is not None and (least <= fixed if fixed else least <= n_max)

        bits = [] if fixed else [model.var(hi=1, integer=True) for _ in range(n_max.bit_length())]
        count_expr = {b: float(2**j) for j, b in enumerate(bits)}
        if not fixed:
            model.row(count_expr, 1.0, float(n_max))
        for w in machines:
            t = problem.machine_type[w]
            met = problem.met[c, t]
            hi = n_max if met <= 0 else min(n_max, math.floor(problem.limit[w] / met + 1e-9))
            v.x[c, w] = model.var(hi=hi if allowed(least_regular[t]) else 0, integer=True)
            if g > 0:
                v.z[c, w] = model.var(hi=1 if allowed(least_first[t]) else 0, integer=True)
                model.row({v.z[c, w]: 1.0, v.x[c, w]: -1.0}, hi=0.0)
        x_sum = {v.x[c, w]: 1.0 for w in machines}
        if fixed:
            model.row(x_sum, fixed, fixed)
        else:
            model.row({**x_sum, **{b: -coef for b, coef in count_expr.items()}}, 0.0, 0.0)
        if g > 0:
            model.row({v.z[c, w]: 1.0 for w in machines}, 1.0, 1.0)

        share: dict[int, int] = {}
        if s > 0 and not fixed:
            for w in machines:
                share[w] = model.var(hi=1.0 if model.upper[v.x[c, w]] > 0 else 0.0)
                products = []
                for j, b in enumerate(bits):
                    p = model.var(hi=1.0)
                    model.row({p: 1.0, share[w]: -1.0}, hi=0.0)
                    model.row({p: 1.0, b: -1.0}, hi=0.0)
                    model.row({p: 1.0, share[w]: -1.0, b: -1.0}, lo=-1.0)
                    products.append(p)
                model.row({v.x[c, w]: 1.0, **{p: -(2.0**j) for j, p in enumerate(products)}}, 0.0, 0.0)
            model.row({share[w]: 1.0 for w in machines}, 1.0, 1.0)

        if not fixed:
            for t in np.unique(problem.machine_type):
                on_type = [w for w in machines if problem.machine_type[w] == t]
                least = least_regular[t]
                if allowed(least) and least > 1:
                    uses = model.var(hi=1, integer=True)
                    for w in on_type:
                        model.row({v.x[c, w]: 1.0, uses: -float(model.upper[v.x[c, w]])}, hi=0.0)
                    model.row({**count_expr, uses: -float(least)}, lo=0.0)
                least0 = least_first[t]
                if g > 0 and allowed(least0) and least0 > 1:
                    model.row({**count_expr, **{v.z[c, w]: -float(least0) for w in on_type}}, lo=0.0)

        for w in machines:
            t = problem.machine_type[w]
            cr = problem.cost[c, t] * rate
            terms = load[w]
            terms[v.x[c, w]] = cr * a + problem.met[c, t] + (cr * s / fixed if fixed else 0.0)
            if share:
                terms[share[w]] = cr * s
            if g > 0:
                terms[v.z[c, w]] = cr * g
    for w in machines:
        model.row(load[w], hi=float(problem.limit[w]))
    for w, w_next in zip(machines, machines[1:]):
        if problem.machine_type[w] == problem.machine_type[w_next]:
            diff = dict(load[w])
            for col, coef in load[w_next].items():
                diff[col] = diff.get(col, 0.0) - coef
            model.row(diff, lo=0.0)
    return model, v


def _placement_from(
    problem: Problem, roles: _Roles, vars_: _Vars, solution: np.ndarray, counts: np.ndarray
) -> Placement:
    placement: Placement = {}
    used: list[int] = []
    for c in roles.placed:
        per_machine = {w: int(round(solution[vars_.x[c, w]])) for w in range(problem.n_machines)}
        machines: list[int] = []
        hosts = [w for w in range(problem.n_machines) if (c, w) in vars_.z and solution[vars_.z[c, w]] > 0.5]
        if hosts:
            machines.append(hosts[0])
            per_machine[hosts[0]] -= 1
        for w, n in per_machine.items():
            machines.extend([w] * n)
        used.extend(machines)
        placement[problem.component_ids[c]] = [problem.machine_ids[w] for w in machines]
    hosts_used = sorted(set(used)) or list(range(problem.n_machines))
    next_host = 0
    for c in roles.free:
        n = int(problem.fixed[c]) or int(counts[c])
        placement[problem.component_ids[c]] = [
            problem.machine_ids[hosts_used[(next_host + i) % len(hosts_used)]] for i in range(n)
        ]
        next_host += n
    return placement


def _count_combinations(problem: Problem, roles: _Roles, caps: dict[int, int]) -> list[np.ndarray]:
    base = least_counts(problem)
    ranges = [range(1, caps[c] + 1) for c in roles.enumerated]
    total = math.prod(len(r) for r in ranges)
    if total > MAX_COUNT_COMBINATIONS:
        names = ", ".join(problem.component_ids[c] for c in roles.enumerated)
        raise PlanningError(
            f"the optimal strategy enumerates the instance counts of components with an 'all' input grouping "
            f"that feed others ({names}) and is limited to {MAX_COUNT_COMBINATIONS} combinations; this request "
            f"has {total}; fix their parallelism"
        )
    combos = []
    for values in itertools.product(*ranges):
        counts = base.copy()
        counts[roles.enumerated] = values
        combos.append(counts)
    return combos


def solve(
    problem: Problem,
    max_instances: int = MAX_INSTANCES_PER_COMPONENT,
    gap: float = OPTIMALITY_GAP,
    time_limit_s: float | None = None,
) -> OptimalSolution:
    """The best plan of a compiled, validated problem (instance counts up to ``max_instances`` per component)."""
    start = time.perf_counter()
    limit_s = time_limit_s if time_limit_s is not None else DEFAULT_TIME_LIMIT_S
    deadline = start + limit_s
    roles = _roles(problem)
    _check_size(problem, roles)
    caps, capped = instance_caps(problem, roles, max_instances)
    combos = _count_combinations(problem, roles, caps)
    lp_bound = lp_upper_bound_problem(problem)
    low, high = 0.0, lp_bound * (1.0 + 1e-7)
    best: Placement | None = None
    solves = 0
    while best is None or high > low * (1.0 + gap):
        rate = (low + high) / 2.0
        found = None
        for counts in combos:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                _timeout(limit_s, low, high, solves)
            model, vars_ = _feasibility_model(problem, roles, rate, counts, caps)
            result = model.solve(time_limit_s=remaining, presolve=PRESOLVE)
            solves += 1
            if result.status == 4:
                # HiGHS can fail to map a solution of its presolved model back (ERGO-Code/HiGHS#2808);
                # the same model without presolve is solved cleanly.
                result = model.solve(time_limit_s=max(deadline - time.perf_counter(), 1e-3), presolve=False)
                solves += 1
            if result.status == 0:
                found = _placement_from(problem, roles, vars_, result.x, counts)
                break
            if result.status == 1:
                _timeout(limit_s, low, high, solves)
            if result.status != 2:
                raise PlanningError(f"the optimal strategy's solver failed: {result.message.strip()}")
        if found is None:
            high = rate
            if best is None and high < lp_bound * 1e-9:
                raise PlanningError("the cluster cannot host one instance of every component at any input rate")
            continue
        found_rate, _ = max_rate(problem, linear_loads(problem, found))
        if found_rate < rate * (1.0 - 1e-5):
            raise PlanningError(
                f"the optimal strategy's MILP found a plan at {rate:.6g} tuples/s that the simulator scores at "
                f"{found_rate:.6g}: the model and the simulator disagree (a bug, please report it)"
            )
        if best is None or found_rate > low:
            low, best = found_rate, found
        else:
            # HiGHS met the rows only within its tolerances and the plan is no better than the
            # incumbent: treat the rate as out of reach, or the bisection would repeat itself.
            high = rate
    return OptimalSolution(
        placement=best,
        input_rate=low,
        upper_bound=max(high, low),
        lp_bound=lp_bound,
        milp_solves=solves,
        instance_caps={problem.component_ids[c]: n for c, n in caps.items()},
        capped_components=[problem.component_ids[c] for c in capped],
        elapsed_s=time.perf_counter() - start,
    )


def _timeout(limit_s: float, low: float, high: float, solves: int) -> None:
    from planner.strategies import DEFAULT_STRATEGY

    found = f"the best plan found sustains {low:.6g} tuples/s" if low > 0 else "no plan was found yet"
    raise PlanningTimeout(
        f"the optimal strategy ran past its time limit of {limit_s:g} s after {solves} MILP solves without "
        f"proving the optimum ({found}; no plan exceeds {high:.6g} tuples/s); raise options.time_limit_s "
        f"or use strategy {DEFAULT_STRATEGY}"
    )


def plan(topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions) -> StrategyResult:
    """The exact best instance counts and placement (small requests only; see the module docstring)."""
    problem = Problem.build(topology, cluster, profiles, options)
    solution = solve(problem, time_limit_s=options.time_limit_s)
    return StrategyResult(placement=solution.placement, stats=solution.to_stats())


optimal = plan
