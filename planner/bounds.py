"""An upper bound on the input rate R that any plan can reach (the fluid LP relaxation).

Rate any plan as "x% of the bound" without an exact search: the bound is one
small linear program per request, with variables per (component, machine type)
rather than per machine, so it scales to thousands of machines.

Variables, for every component c and machine type t (``n_t`` machines):

- ``f[c,t] >= 0``: tuples/s of c processed on machines of type t,
- ``k[c,t] >= 0``: instances of c on type t, relaxed to a real number,
- ``R``: the topology input rate, maximised.

Constraints:

1. ``sum_t f[c,t] = beta_c * R``: c processes all its input (``beta_c`` its
   input per unit R, with ``all``-grouped components at their least count).
2. ``sum_t k[c,t] >= 1`` (``= P`` where the parallelism P is fixed).
3. ``100 e[c,t] f[c,t] + MET[c,t] k[c,t] <= K_t k[c,t]`` with ``K_t`` the most
   one instance may use on type t (its thread cap, at most the machine limit).
4. ``sum_c 100 e[c,t] f[c,t] + MET[c,t] k[c,t] <= n_t * cap_t * u_max``.
5. ``R <= (K_t - MET) / (100 e * g_c)`` on the best type, for the instance 0
   that alone receives a ``global`` stream (rate ``g_c R``), and likewise for
   the ``all`` part every instance receives.

Why it is a bound: take any feasible plan (instance counts, placement, rate
R). Setting ``f[c,t]`` to the tuples/s its instances on type t receive and
``k[c,t]`` to their number satisfies every constraint: (1) is the sum of the
instance rates (an ``all`` grouping with more instances only adds rate, and
every load grows with rate, so the least count is the weakest case); (3) is
the sum of the per-instance limits ``100 e r_i + MET <= K_t`` over the
instances on t; (4) is the sum of the machine limits over the machines of t;
(5) holds for the machine that hosts instance 0. So the plan's R is feasible
for the LP and cannot exceed its optimum. The relaxation forgets that
instances are whole, that machines of a type are separate bins, and that an
even split gives every instance the same share.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from planner.errors import PlanningError
from planner.linear_model import LinearModel
from planner.model import Cluster, PlanOptions, Topology
from planner.problem import Problem
from planner.profiles import ProfileTable


def least_counts(problem: Problem) -> np.ndarray:
    """Instance counts that give every component its least input: fixed parallelism, else 1."""
    return np.where(problem.fixed > 0, problem.fixed, 1)


def instance_limit(problem: Problem) -> np.ndarray:
    """(T,) the most CPU percent one instance may use on each machine type: its thread cap, at most the machine limit."""
    by_type = np.full(len(problem.type_names), np.inf)
    np.minimum.at(by_type, problem.machine_type, problem.limit)
    return np.minimum(by_type, problem.thread_limit)


@dataclass
class FluidModel:
    """The fluid relaxation as a linear model: its rate variable and the instance-count variables k[c, t]."""

    model: LinearModel
    rate: int
    counts: dict[int, list[int]]
    """Component index -> its k[c, t] variables over the machine types that have machines."""


def fluid_model(problem: Problem, rate: float | None = None) -> FluidModel:
    """The constraints of the module docstring; ``rate`` fixes R (tuples/s) instead of leaving it free."""
    types = [int(t) for t in np.unique(problem.machine_type)]
    machines_of_type = np.bincount(problem.machine_type, minlength=len(problem.type_names))
    type_limit = np.zeros(len(problem.type_names))
    type_limit[problem.machine_type] = problem.limit
    k_limit = instance_limit(problem)
    counts = least_counts(problem)
    shares = problem.shares(counts)
    each, first = shares.each, shares.first
    beta = shares.total(counts)

    model = LinearModel()
    rate_var = model.var()
    rate_cap = np.inf
    f: dict[tuple[int, int], int] = {}
    k: dict[tuple[int, int], int] = {}
    for c in range(problem.n_components):
        for t in types:
            runs_here = problem.met[c, t] <= k_limit[t]
            f[c, t] = model.var(hi=np.inf if runs_here else 0.0)
            k[c, t] = model.var(hi=np.inf if runs_here else 0.0)
            if runs_here and problem.cost[c, t] > 0:
                model.row({f[c, t]: problem.cost[c, t], k[c, t]: problem.met[c, t] - k_limit[t]}, hi=0.0)
        model.row({**{f[c, t]: 1.0 for t in types}, rate_var: -beta[c]}, 0.0, 0.0)
        fixed = float(problem.fixed[c])
        model.row({k[c, t]: 1.0 for t in types}, fixed or 1.0, fixed or np.inf)
        for per_instance in (each[c] + first[c], each[c]):
            if per_instance > 0:
                rate_cap = min(rate_cap, _best_single_instance_rate(problem, c, per_instance, types, k_limit))
    for t in types:
        coefs: dict[int, float] = {}
        for c in range(problem.n_components):
            coefs[f[c, t]] = problem.cost[c, t]
            coefs[k[c, t]] = problem.met[c, t]
        model.row(coefs, hi=float(machines_of_type[t] * type_limit[t]))
    if rate is None:
        model.upper[rate_var] = rate_cap
    else:
        model.lower[rate_var] = model.upper[rate_var] = rate
    return FluidModel(model, rate_var, {c: [k[c, t] for t in types] for c in range(problem.n_components)})


def lp_upper_bound_problem(problem: Problem) -> float:
    """The fluid LP bound on R (tuples/s) of a compiled problem; see the module docstring."""
    fluid = fluid_model(problem)
    fluid.model.objective[fluid.rate] = -1.0
    result = fluid.model.solve()
    if result.status == 3 or (result.status == 0 and not np.isfinite(-result.fun)):
        raise PlanningError(
            "the input rate is unbounded: no machine's load grows with the input rate "
            "(every component costs e = 0 per tuple)"
        )
    if result.status != 0:
        raise PlanningError(
            "the cluster cannot host one instance of every component, even with fractional instances "
            f"({result.message.strip()})"
        )
    return float(-result.fun)


def most_instances_at_rate(problem: Problem, rate: float, components: list[int]) -> dict[int, float] | None:
    """The most instances each of ``components`` can have in any plan that sustains ``rate`` tuples/s.

    Every instance costs its MET, so the CPU left beside the work of the
    tuples bounds the instance count; the fluid relaxation finds that bound
    (inf where MET is 0). None if no plan sustains ``rate`` at all. A plan
    that sustains a rate also sustains every lower rate, so the bound at a
    rate also holds for every higher rate.
    """
    fluid = fluid_model(problem, rate)
    most: dict[int, float] = {}
    for c in components:
        fluid.model.objective = [0.0] * fluid.model.n_vars
        for var in fluid.counts[c]:
            fluid.model.objective[var] = -1.0
        result = fluid.model.solve()
        if result.status == 2:
            return None
        if result.status == 3:
            most[c] = np.inf
        elif result.status == 0:
            most[c] = float(-result.fun)
        else:
            raise PlanningError(f"the fluid relaxation could not be solved: {result.message.strip()}")
    return most


def _best_single_instance_rate(
    problem: Problem, c: int, per_instance: float, types: list[int], k_limit: np.ndarray
) -> float:
    """Largest R at which one instance fed ``per_instance * R`` fits on the best machine type."""
    best = 0.0
    for t in types:
        cost, met = problem.cost[c, t], problem.met[c, t]
        if met <= k_limit[t]:
            best = max(best, np.inf if cost == 0 else (k_limit[t] - met) / (cost * per_instance))
    return best


def compute_bound(topology: Topology, cluster: Cluster, profiles: ProfileTable,
                  options: PlanOptions | None = None) -> float:
    """The compute bound on R (tuples/s): the fluid LP with no fixed cost per instance (every MET taken as 0).

    What the machines could reach doing nothing but their components' per-tuple work, any stream split any way:
    the fluid bound less what running an instance costs. The bench passes the cluster at full capacity (no base
    load) and ``max_utilization`` 1, "every machine at its quota doing only the bolts' own work".
    """
    problem = Problem.build(topology, cluster, profiles, options or PlanOptions())
    return lp_upper_bound_problem(dataclasses.replace(problem, met=np.zeros_like(problem.met)))


def lp_upper_bound(
    topology: Topology, cluster: Cluster, profiles: ProfileTable, options: PlanOptions | None = None
) -> float:
    """An upper bound on the input rate R (tuples/s) of any plan of this request (expects a validated request)."""
    return lp_upper_bound_problem(Problem.build(topology, cluster, profiles, options or PlanOptions()))
