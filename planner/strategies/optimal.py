"""The exact optimum under the planning model (docs/concepts/model.md, "optimal"), for small requests.

The yardstick for every heuristic: the largest input rate R that any choice
of instance counts and placement sustains, found by mixed-integer programming
with HiGHS (``scipy.optimize.milp``) and proven to within ``OptimalTuning.optimality_gap``.

**The model at one rate.** For a fixed rate every instance's CPU is a
constant, so "which plans sustain rate R?" is a MILP (``_rate_model``):

- binary ``y[c,n]``: component c has n instances, ``sum_n y[c,n] = 1``
  (n from 1 to its cap, or the fixed parallelism);
- integer ``x[c,w,n]``: instances of c on machine w when c has n,
  ``sum_w x[c,w,n] = n * y[c,n]``; one of them costs
  ``100 e[c,t] R (split_c / n + each_c) + MET[c,t]`` percent, so every load is
  linear and no product of variables is needed;
- binary ``host[c,w]``: machine w hosts instance 0, which alone receives the
  ``global`` streams (its extra CPU ``100 e R first_c``);
- machine rows ``load_w <= theta * cap_w * u_max`` with ``theta <= 1``;
- the thread cap ``100/cores`` drops every (c, n, machine type) where one
  instance would exceed it (and for instance 0 forbids host-on-type with
  those n);
- memory, a hard limit: on every machine with ``memory_mb``,
  ``sum memory_c x[c,w,n] + worker_memory * worker[w] <= memory_mb`` with binary
  ``worker[w] >= x[c,w,n] / n`` (the topology's worker on every machine it uses);
  components that cost no CPU but need memory are placed by the MILP then;
- symmetry: machines of one type are interchangeable (the type fixes
  capacity, cores and profiles). HiGHS detects this permutation symmetry
  itself; explicit rows ordering their loads (``OptimalTuning.symmetry_rows``) are valid
  but made HiGHS do more work on the random suite (12 requests: 251 against
  207 CPU seconds; one hard proof: 64k against 35k LP iterations), so they
  are off. Merging the machines of a type into one variable would not be
  exact: each machine is its own bin.

**The search over R** (a Dinkelbach-style iteration from below). With the
best rate found so far ``R_lo``, ask the MILP for the plan with the least peak
utilisation ``theta`` at ``lambda = R_lo * (1 + gap)``. If HiGHS proves there
is none, no plan sustains lambda, and ``R_lo`` is optimal within the gap.
Otherwise that plan sustains at least ``lambda / theta`` (loads are
``a R + b`` with ``b >= 0``), often far more; its closed-form R_max (the
simulator's) becomes the new ``R_lo``. The first rate tried is half the LP
bound (planner.bounds). Only proofs lower the upper bound, so the
``upper_bound`` reported is always proven; the gap (``optimality_gap``,
0.01 %) stays well above the solver's tolerances.

**Instance counts** are searched up to the most that any plan sustaining the
rate could host (every instance costs its MET; planner.bounds computes the
bound from the fluid relaxation), and at most
``OptimalTuning.max_instances_per_component`` (64 by default: where MET is 0 more instances
always refine the split, so some cap is needed). ``stats["capped_components"]``
names components where that cap, not the cluster, limited the search.

Components with an ``all`` input grouping and free parallelism that feed
others change their descendants' rates with their count: with only ``all``
and ``global`` inputs one instance dominates; with a split input as well
their counts are enumerated outside the MILP (see ``_Roles``). Components that cost nothing (no profile, e.g.
``__acker``) get their fixed parallelism or one instance, spread over the
machines the plan uses.

**Remote tuples** (docs/concepts/model.md, "Remote tuples"): a tuple that crosses workers costs CPU in proportion to
the share of a receiver's instances on other machines, a product of placement variables (``x[d,w,n] / n``
times the sender's load on w). The MILP does not linearise it: where the profiles give a remote cost it
solves the model without it (an upper bound stays an upper bound, the costs being >= 0), the plan is scored
by the simulator with it, and ``stats`` says ``proven_optimal: false, remote_cost_ignored: true`` with the
rate and bound of the model it did solve. Without remote costs (every profile set measured before them) it
is exact as before, and the brute-force checks hold.

**Limits and time.** Requests above the size limits below are refused with
a PlanningError that says so. The search honours ``options.time_limit_s``
(default ``OptimalTuning.default_time_limit_s``); when time runs out before the optimum is
proven it raises PlanningTimeout naming the best rate found and the proven
upper bound, rather than return an unproven plan under the name "optimal".
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner.bounds import (
    instance_limit,
    least_counts,
    lp_upper_bound_problem,
    most_instances_at_rate,
)
from planner.errors import PlanningError, PlanningTimeout
from planner.linear_model import LinearModel
from planner.model import Placement
from planner.problem import Problem
from planner.simulator import linear_loads, max_rate
from planner.strategies.base import DEFAULT_STRATEGY, StrategyResult

log = logging.getLogger(__name__)

TIME_LIMIT_ADVICE = f"raise options.time_limit_s or use strategy {DEFAULT_STRATEGY}"
"""How a caller of the core gets past the search's time limit (the service rewrites it where its own limit binds)."""


@dataclass(frozen=True)
class OptimalTuning:
    """The exact search's size limits, gaps and steering; the defaults are what the benchmarks ran with."""

    max_placed_components: int = 8
    """Components with a CPU cost the exact search accepts."""
    max_machines: int = 16
    max_component_machine_pairs: int = 64
    max_instances_per_component: int = 64
    """Largest instance count searched for one component whose parallelism is free."""
    max_count_combinations: int = 16
    """Largest number of instance-count combinations of ``all``-grouped components enumerated outside the MILP."""
    default_time_limit_s: float = 60.0
    """Seconds the search may take when ``options.time_limit_s`` is not set."""
    optimality_gap: float = 1e-4
    """Relative gap between the plan returned and the proven upper bound at which the search stops.

    Well above HiGHS's feasibility tolerances (1e-6 and below), so that a rate a
    plan misses by a rounding error is never mistaken for one it reaches."""
    few_instances: int = 4
    """Instance counts up to this are searched first (see ``_Search.plan_at``)."""
    theta_gap: float = 0.01
    """HiGHS stops minimising the peak utilisation within this relative gap: theta only steers the search."""
    small_jump: float = 0.01
    """A capped plan that sustains less than this much (relative) above the rate asked raises the cap next time."""
    symmetry_rows: bool = False
    """Order the loads of machines of one type. Off: HiGHS finds this symmetry itself (its symmetry detection is
    on by default), and with the rows on it did more work on the random suite (see the module docstring)."""


DEFAULT_TUNING = OptimalTuning()


@dataclass
class OptimalSolution:
    placement: Placement
    input_rate: float
    """The closed-form R_max of ``placement``, tuples/s."""
    upper_bound: float
    """No plan within the instance caps sustains this rate or more, tuples/s."""
    lp_bound: float
    milp_solves: int
    instance_caps: dict[str, int]
    capped_components: list[str]
    elapsed_s: float

    def to_stats(self) -> dict:
        return {
            "iterations": self.milp_solves,
            "milp_solves": self.milp_solves,
            "proven_optimal": True,
            "optimal_input_rate": self.input_rate,
            "upper_bound": self.upper_bound,
            "relative_gap": (self.upper_bound - self.input_rate) / self.input_rate,
            "lp_bound": self.lp_bound,
            "instance_caps": self.instance_caps,
            "capped_components": self.capped_components,
            "solve_s": self.elapsed_s,
        }


@dataclass(frozen=True)
class _Roles:
    """How the search treats each component (indices into the problem's components).

    ``placed``: the MILP places it. ``enumerated``: placed, but its count
    changes its descendants' rates (an ``all`` input and a split input, free
    parallelism, and output streams), so the count is fixed per MILP and
    enumerated outside. ``single``: placed with one instance, because its
    input is all ``all``/``global`` (no split part): every further instance
    would receive the whole stream again and only add load, here and
    downstream, so one instance dominates. ``free``: costs nothing anywhere.
    """

    placed: list[int]
    enumerated: list[int]
    single: list[int]
    free: list[int]

    def pinned_count(self, problem: Problem, c: int, counts: np.ndarray) -> int:
        """The instance count a MILP must use for component c (0: the MILP chooses)."""
        if problem.fixed[c]:
            return int(problem.fixed[c])
        return int(counts[c]) if c in self.enumerated or c in self.single else 0


def _roles(problem: Problem) -> _Roles:
    used = np.unique(problem.machine_type)
    shares = problem.shares(least_counts(problem))
    split, each = shares.split, shares.each
    placed: list[int] = []
    enumerated: list[int] = []
    single: list[int] = []
    free: list[int] = []
    for c in range(problem.n_components):
        if not problem.cost[c, used].any() and not problem.met[c, used].any():
            if problem.memory_bound and problem.memory[c] > 0:
                placed.append(c)  # costs no CPU but memory: the MILP places its least count
                single.append(c)
            else:
                free.append(c)
            continue
        placed.append(c)
        if each[c] > 0 and problem.fixed[c] == 0 and not problem.is_sink[c]:
            (enumerated if split[c] > 0 else single).append(c)
    return _Roles(placed, enumerated, single, free)


def _check_size(problem: Problem, roles: _Roles, tuning: OptimalTuning) -> None:
    n_placed, n_machines = len(roles.placed), problem.n_machines
    if (
        n_placed > tuning.max_placed_components
        or n_machines > tuning.max_machines
        or n_placed * n_machines > tuning.max_component_machine_pairs
    ):
        raise PlanningError(
            f"the optimal strategy is limited to {tuning.max_placed_components} components with a CPU cost, "
            f"{tuning.max_machines} machines and {tuning.max_component_machine_pairs} component-machine pairs; "
            f"this request has {n_placed} components and {n_machines} machines ({n_placed * n_machines} pairs); "
            f"use strategy {DEFAULT_STRATEGY} for a plan and the LP upper bound (planner.bounds) to rate it"
        )


def _least_count(cost_rate_split: float, base: float, limit: float) -> int | None:
    """Least N with ``cost_rate_split / N + base <= limit`` (one instance's CPU), or None if no N works."""
    if base > limit or (base == limit and cost_rate_split > 0):
        return None
    if cost_rate_split <= 0:
        return 1
    return max(1, math.ceil(cost_rate_split / (limit - base) - 1e-9))


def _enough(least: int | None, n: int) -> bool:
    """Whether ``n`` instances are enough, given the least count that fits (None: no count fits)."""
    return least is not None and least <= n


@dataclass
class _Vars:
    count: dict[tuple[int, int], int] = field(default_factory=dict)
    """(c, n) -> binary y: component c has n instances."""
    x: dict[tuple[int, int, int], int] = field(default_factory=dict)
    """(c, w, n) -> integer: instances of c on machine w when c has n."""
    host: dict[tuple[int, int], int] = field(default_factory=dict)
    """(c, w) -> binary: machine w hosts instance 0 of c (only where c has a global input)."""


def _rate_model(
    problem: Problem, roles: _Roles, rate: float, counts: np.ndarray, caps: dict[int, int], symmetry_rows: bool = False
) -> tuple[LinearModel, _Vars] | None:
    """The MILP of the plans that sustain ``rate`` tuples/s, least peak utilisation first.

    None if some component fits nowhere at that rate. ``counts`` fixes the
    enumerated components' instance counts, ``caps`` bounds the others'.
    """
    model = LinearModel()
    v = _Vars()
    theta = model.var(hi=1.0, cost=1.0)
    shares = problem.shares(counts)
    split, each, first = shares.split, shares.each, shares.first
    k_limit = instance_limit(problem)
    machines = range(problem.n_machines)
    types = [int(t) for t in np.unique(problem.machine_type)]
    on_type = {t: [w for w in machines if problem.machine_type[w] == t] for t in types}
    load: list[dict[int, float]] = [{} for _ in machines]
    for c in roles.placed:
        fixed = roles.pinned_count(problem, c, counts)
        s, a, g = split[c], each[c], first[c]
        cost_rate = problem.cost[c] * rate
        least = {t: _least_count(cost_rate[t] * s, cost_rate[t] * a + problem.met[c, t], k_limit[t]) for t in types}
        least_first = {
            t: _least_count(cost_rate[t] * s, cost_rate[t] * (a + g) + problem.met[c, t], k_limit[t]) for t in types
        }
        fits: dict[int, set[int]] = {}  # n -> machine types where one instance fits when c has n
        for n in [fixed] if fixed else range(1, caps[c] + 1):
            regular = {t for t in types if _enough(least[t], n)}
            if regular and (g == 0 or any(_enough(least_first[t], n) for t in types)):
                fits[n] = regular
        if not fits:
            return None
        for n, fit_types in fits.items():
            v.count[c, n] = model.var(hi=1, integer=True)
            for w in machines:
                t = int(problem.machine_type[w])
                cpu = cost_rate[t] * (s / n + a) + problem.met[c, t]
                most_here = n if cpu <= 0 else min(n, math.floor(problem.limit[w] / cpu + 1e-9))
                if t in fit_types and most_here > 0:
                    v.x[c, w, n] = model.var(hi=most_here, integer=True)
                    load[w][v.x[c, w, n]] = cpu
            on_machines = {v.x[c, w, n]: 1.0 for w in machines if (c, w, n) in v.x}
            model.row({**on_machines, v.count[c, n]: -float(n)}, 0.0, 0.0)
        model.row({v.count[c, n]: 1.0 for n in fits}, 1.0, 1.0)
        if g > 0:
            for w in machines:
                v.host[c, w] = model.var(hi=1, integer=True)
                load[w][v.host[c, w]] = cost_rate[int(problem.machine_type[w])] * g
                model.row({v.host[c, w]: 1.0, **{v.x[c, w, n]: -1.0 for n in fits if (c, w, n) in v.x}}, hi=0.0)
            model.row({v.host[c, w]: 1.0 for w in machines}, 1.0, 1.0)
            for t in types:
                too_few = [n for n in fits if not _enough(least_first[t], n)]
                if too_few:
                    model.row({**{v.host[c, w]: 1.0 for w in on_type[t]}, **{v.count[c, n]: 1.0 for n in too_few}}, hi=1.0)
    for w in machines:
        model.row({**load[w], theta: -float(problem.limit[w])}, hi=0.0)
    if problem.memory_bound:
        _memory_rows(problem, model, v)
    for t in types if symmetry_rows else []:
        for w, w_next in zip(on_type[t], on_type[t][1:]):
            diff = dict(load[w])
            for col, coef in load[w_next].items():
                diff[col] = diff.get(col, 0.0) - coef
            model.row(diff, lo=0.0)
    return model, v


def _memory_rows(problem: Problem, model: LinearModel, v: _Vars) -> None:
    """Memory is a hard limit: on every machine with one, its instances' MB plus one worker if it hosts any.

    Binary ``worker[w]`` is 1 where machine w hosts an instance (every ``x[c,w,n] <= its bound * worker[w]``).
    """
    on_machine: dict[int, list[tuple[int, int, int]]] = {}
    for c, w, n in v.x:
        on_machine.setdefault(w, []).append((c, w, n))
    for w, keys in on_machine.items():
        limit = float(problem.memory_limit[w])
        if math.isinf(limit):
            continue
        row = {v.x[k]: float(problem.memory[k[0]]) for k in keys}
        if problem.worker_memory > 0:
            worker = model.var(hi=1, integer=True)
            for k in keys:
                model.row({v.x[k]: 1.0, worker: -float(k[2])}, hi=0.0)
            row[worker] = problem.worker_memory
        model.row(row, hi=limit)


def _placement_from(
    problem: Problem, roles: _Roles, vars_: _Vars, solution: np.ndarray, counts: np.ndarray
) -> Placement:
    placement: Placement = {}
    used: list[int] = []
    for c in roles.placed:
        n = next(n for (cc, n), var in vars_.count.items() if cc == c and solution[var] > 0.5)
        per_machine = {
            w: round(float(solution[vars_.x[c, w, n]])) if (c, w, n) in vars_.x else 0 for w in range(problem.n_machines)
        }
        machines: list[int] = []
        hosts = [w for w in range(problem.n_machines) if (c, w) in vars_.host and solution[vars_.host[c, w]] > 0.5]
        if hosts:
            machines.append(hosts[0])
            per_machine[hosts[0]] -= 1
        for w, k in per_machine.items():
            machines.extend([w] * k)
        used.extend(machines)
        placement[problem.component_ids[c]] = [problem.machine_ids[w] for w in machines]
    hosts_used = sorted(set(used)) or list(range(problem.n_machines))
    next_host = 0
    for c in roles.free:
        k = int(counts[c])
        placement[problem.component_ids[c]] = [
            problem.machine_ids[hosts_used[(next_host + i) % len(hosts_used)]] for i in range(k)
        ]
        next_host += k
    return placement


def _instance_caps(
    problem: Problem, roles: _Roles, rate: float, max_instances: int
) -> tuple[dict[int, int], list[int]] | None:
    """Most instances of every placed component in a plan that sustains ``rate``, and those ``max_instances`` cut.

    None: the fluid relaxation already shows that no plan sustains ``rate``.
    """
    searched = [c for c in roles.placed if problem.fixed[c] == 0 and c not in roles.single]
    most = most_instances_at_rate(problem, rate, searched)
    if most is None:
        return None
    caps = {c: max(1, min(max_instances, math.floor(most[c] + 1e-6))) for c in searched}
    capped = [c for c in searched if most[c] + 1e-6 >= max_instances + 1]
    return caps, capped


def _count_combinations(problem: Problem, roles: _Roles, caps: dict[int, int], most: int) -> list[np.ndarray]:
    base = least_counts(problem)
    ranges = [range(1, caps[c] + 1) for c in roles.enumerated]
    total = math.prod(len(r) for r in ranges)
    if total > most:
        names = ", ".join(problem.component_ids[c] for c in roles.enumerated)
        raise PlanningError(
            f"the optimal strategy enumerates the instance counts of components with an 'all' input grouping "
            f"that feed others ({names}) and is limited to {most} combinations; this request "
            f"has {total}; fix their parallelism"
        )
    combos = []
    for values in itertools.product(*ranges):
        counts = base.copy()
        counts[roles.enumerated] = values
        combos.append(counts)
    return combos


@dataclass
class _Search:
    """The state of the search over R: what is proven, the best plan, the clock."""

    problem: Problem
    roles: _Roles
    tuning: OptimalTuning
    time_limit_s: float
    deadline: float
    low: float = 0.0
    """R_max of the best plan found, tuples/s."""
    high: float = math.inf
    """Proven: no plan (within the caps) sustains this rate."""
    floor: float = 0.0
    """The next rate tried is at least this (see ``step``)."""
    few: int = DEFAULT_TUNING.few_instances
    """Instance caps below this are known to admit no plan at the rates still to try."""
    best: Placement | None = None
    solves: int = 0

    @property
    def target(self) -> float:
        """The next rate to try: half the bound until a first plan is found, then just above the best plan."""
        if self.best is None:
            return self.high / 2.0
        return max(self.low * (1.0 + self.tuning.optimality_gap), self.floor)

    def done(self) -> bool:
        return self.best is not None and self.target >= self.high

    def remaining_s(self) -> float:
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            self.timeout()
        return remaining

    def timeout(self) -> None:
        found = f"the best plan found sustains {self.low:.6g} tuples/s" if self.best else "no plan was found yet"
        raise PlanningTimeout(
            f"the optimal strategy ran past its time limit of {self.time_limit_s:g} s after {self.solves} MILP "
            f"solves without proving the optimum ({found}; no plan reaches {self.high:.6g} tuples/s); {TIME_LIMIT_ADVICE}"
        )

    def step(self) -> None:
        """Try one rate. Only a proof (no plan at that rate) lowers ``high``; a plan raises ``low``.

        HiGHS meets its rows within tolerances, so a plan it returns may sustain
        a hair less than the rate asked; then the next rate tried is above it,
        so the search never repeats itself and never claims what it has not proven.
        """
        rate = self.target
        found = self.plan_at(rate)
        if found is None:
            log.debug("optimal: no plan sustains %.6g tuples/s (proven, %d MILP solves so far)", rate, self.solves)
            self.high = rate
            return
        placement, found_rate = found
        log.debug("optimal: at %.6g tuples/s found a plan that sustains %.6g (%d MILP solves so far)",
                  rate, found_rate, self.solves)
        if found_rate < rate * (1.0 - 1e-4):
            raise PlanningError(
                f"the optimal strategy's MILP found a plan at {rate:.6g} tuples/s that the simulator scores at "
                f"{found_rate:.6g}: the model and the simulator disagree (a bug, please report it)"
            )
        if self.best is None or found_rate > self.low:
            self.low, self.best = found_rate, placement
        if found_rate < rate:
            self.floor = rate * (1.0 + self.tuning.optimality_gap)

    def plan_at(self, rate: float) -> tuple[Placement, float] | None:
        """A plan that sustains ``rate`` tuples/s and its R_max, or None when the MILPs prove there is none.

        Plans with few instances per component are looked for first, with
        the caps doubling from ``few_instances``: their models are small,
        such plans are usually the best, and HiGHS picks the least-utilised
        one, which sustains the most beyond ``rate``. A cap with no plan at
        this rate has none at any higher rate either, so later steps skip
        it; a cap whose best plan barely beats the rate is skipped too, as a
        heuristic. Only when no capped model has a plan does the model with
        every count up to the caps run, and then its first plan is enough:
        its main job is the proof.
        """
        caps = _instance_caps(self.problem, self.roles, rate, self.tuning.max_instances_per_component)
        if caps is None:
            return None
        full = caps[0]
        while any(n > self.few for n in full.values()):
            found = self._solve_at(rate, {c: min(n, self.few) for c, n in full.items()}, self.tuning.theta_gap)
            if found is not None:
                if found[1] < rate * (1.0 + self.tuning.small_jump):
                    self.few *= 2
                return found
            self.few *= 2
        return self._solve_at(rate, full, 1.0)

    def _solve_at(self, rate: float, caps: dict[int, int], theta_gap: float) -> tuple[Placement, float] | None:
        for counts in _count_combinations(self.problem, self.roles, caps, self.tuning.max_count_combinations):
            built = _rate_model(self.problem, self.roles, rate, counts, caps, self.tuning.symmetry_rows)
            if built is None:
                continue
            model, vars_ = built
            result = model.solve(time_limit_s=self.remaining_s(), mip_rel_gap=theta_gap)
            self.solves += 1
            if result.status == 4:
                # HiGHS can fail to map a solution of its presolved model back
                # (ERGO-Code/HiGHS#2808); the same model without presolve solves cleanly.
                result = model.solve(time_limit_s=self.remaining_s(), mip_rel_gap=theta_gap, presolve=False)
                self.solves += 1
            if result.status in (0, 1) and result.x is not None:
                placement = _placement_from(self.problem, self.roles, vars_, result.x, counts)
                return placement, max_rate(self.problem, linear_loads(self.problem, placement))[0]
            if result.status == 1:
                self.timeout()
            if result.status != 2:
                raise PlanningError(f"the optimal strategy's solver failed: {result.message.strip()}")
        return None


def solve(problem: Problem, tuning: OptimalTuning = DEFAULT_TUNING, time_limit_s: float | None = None) -> OptimalSolution:
    """The best plan of a compiled, validated problem (instance counts up to ``tuning.max_instances_per_component``)."""
    start = time.perf_counter()
    limit_s = time_limit_s if time_limit_s is not None else tuning.default_time_limit_s
    roles = _roles(problem)
    _check_size(problem, roles, tuning)
    lp_bound = lp_upper_bound_problem(problem)
    search = _Search(problem, roles, tuning, limit_s, start + limit_s, high=lp_bound * (1.0 + 1e-7),
                     few=tuning.few_instances)
    while not search.done():
        if search.best is None and search.high < lp_bound * 1e-9:
            memory = " (within the machines' memory)" if problem.memory_bound else ""
            raise PlanningError(f"the cluster cannot host one instance of every component{memory} at any input rate")
        search.step()
    caps = _instance_caps(problem, roles, search.low, tuning.max_instances_per_component)
    caps_used, capped = caps if caps is not None else ({}, [])
    assert search.best is not None
    return OptimalSolution(
        placement=search.best,
        input_rate=search.low,
        upper_bound=search.high,
        lp_bound=lp_bound,
        milp_solves=search.solves,
        instance_caps={problem.component_ids[c]: n for c, n in caps_used.items()},
        capped_components=[problem.component_ids[c] for c in capped],
        elapsed_s=time.perf_counter() - start,
    )


def plan(problem: Problem, tuning: OptimalTuning = DEFAULT_TUNING) -> StrategyResult:
    """The exact best instance counts and placement (small requests only; see the module docstring).

    Where the profiles give tuples crossing workers a CPU cost, the MILP cannot express it (see "Remote tuples"
    above): it solves the model without it, and says so in ``stats``; the plan is then scored with it.
    """
    if not problem.has_remote_cost:
        solution = solve(problem, tuning, time_limit_s=problem.options.time_limit_s)
        return StrategyResult(placement=solution.placement, stats=solution.to_stats())
    blind = dataclasses.replace(problem, has_remote_cost=False)
    solution = solve(blind, tuning, time_limit_s=problem.options.time_limit_s)
    stats = solution.to_stats()
    stats.update(proven_optimal=False, remote_cost_ignored=True, optimal_input_rate_without_remote_cost=stats.pop(
        "optimal_input_rate"), upper_bound_without_remote_cost=stats.pop("upper_bound"))
    stats.pop("relative_gap")
    return StrategyResult(placement=solution.placement, stats=stats)
