"""Step 1 of ``fast``: the fluid LP over (component x machine type) flows, whose size does not grow with the machines."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.errors import PlanningError
from planner.highs import solve_lp
from planner.strategies.base import Deadline
from planner.strategies.fast.machine_types import MachineTypes

UNBOUNDED = (
    "the input rate is unbounded: no machine's load grows with the input rate (every component costs e = 0 per tuple)"
)


@dataclass(frozen=True)
class FluidSolution:
    """The LP's answer: the input rate R and the flows that carry it."""

    rate: float
    """R, tuples/s."""
    flows: np.ndarray
    """(C, T) tuples/s of each component processed on each machine type."""


@dataclass(frozen=True)
class FluidInput:
    """What every LP of one request shares: its machine types, its components' input and the cap on R."""

    types: MachineTypes
    unit_input: np.ndarray
    """(C,) beta_c: input of each component per unit R, with one instance each."""
    active: np.ndarray
    """(C,) bool: components with a cost that receive input (the LP carries their flow)."""
    rate_cap: float
    """R beyond which an instance that alone takes a stream would exceed its best type, tuples/s (inf: none)."""


def fluid_lp(fluid: FluidInput, instance_size: np.ndarray, deadline: Deadline) -> FluidSolution | None:
    """Max R (at most ``rate_cap``) and its flows with instances of ``instance_size[c, t]`` tuples/s; None if infeasible.

    Every flow ``f[c, t]`` costs ``cost + MET / size`` percent per tuple/s on
    its type (the MET of the instances it needs); each type's total within its
    machines' capacity. ``instance_size`` <= 0 forbids a type for a component;
    inf means its MET is paid once (ignored here).
    """
    types = fluid.types
    comps = np.flatnonzero(fluid.active)
    n_c, n_t = len(comps), len(types.used)
    if n_c == 0:
        return None
    n_var = n_c * n_t + 1
    objective = np.zeros(n_var)
    objective[-1] = -1.0
    a_eq = np.zeros((n_c, n_var))
    a_ub = np.zeros((n_t, n_var))
    bounds: list[tuple[float, float | None]] = []
    for k, c in enumerate(comps):
        a_eq[k, k * n_t:(k + 1) * n_t] = 1.0
        a_eq[k, -1] = -fluid.unit_input[c]
        for t in range(n_t):
            ok = instance_size[c, t] > 0
            bounds.append((0.0, None if ok else 0.0))
            if ok:
                overhead = 0.0 if np.isinf(instance_size[c, t]) else types.met[c, t] / instance_size[c, t]
                a_ub[t, k * n_t + t] = types.cost[c, t] + overhead
    bounds.append((0.0, None if np.isinf(fluid.rate_cap) else fluid.rate_cap))
    b_ub = types.capacity * types.count
    remaining = deadline.remaining_s()
    options = {} if remaining is None else {"time_limit": max(remaining, 1e-3)}
    result = solve_lp(objective, options, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.zeros(n_c), bounds=bounds)
    if result.status == 1 and remaining is not None:
        deadline.check()  # HiGHS stopped at the time left: past the deadline now
    if result.status == 3:
        raise PlanningError(UNBOUNDED)
    if result.status != 0:
        return None
    flows = np.zeros_like(types.cost)
    flows[comps] = result.x[:-1].reshape(n_c, n_t)
    return FluidSolution(float(result.x[-1]), flows)
