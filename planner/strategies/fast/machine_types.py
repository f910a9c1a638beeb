"""The problem seen per machine type: machines of one type are interchangeable in the model."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.problem import Problem
from planner.simulator import rate_limits


@dataclass(frozen=True)
class MachineTypes:
    """Per machine type arrays of a problem, restricted to the types that have machines (index ``t``)."""

    used: np.ndarray
    """(T,) the problem's type index of each used type."""
    machines: list[np.ndarray]
    """The machine indices of each type."""
    count: np.ndarray
    """(T,) machines of each type."""
    capacity: np.ndarray
    """(T,) percent one machine of the type may carry (capacity * u_max)."""
    thread_cap: np.ndarray
    """(T,) percent one instance may use (inf: no cap)."""
    cost: np.ndarray
    """(C, T) per-tuple cost, percent per tuple/s."""
    met: np.ndarray
    """(C, T) MET, percent."""
    largest_instance: np.ndarray
    """(C, T) largest tuples/s one instance can take on each type (< 0: it cannot run there)."""

    @classmethod
    def of(cls, problem: Problem) -> MachineTypes:
        used = np.unique(problem.machine_type)
        machines = [np.flatnonzero(problem.machine_type == t) for t in used]
        capacity = np.array([problem.limit[m[0]] for m in machines])
        thread_cap = problem.thread_limit[used]
        cost, met = problem.cost[:, used], problem.met[:, used]
        return cls(used, machines, np.array([len(m) for m in machines], dtype=float), capacity, thread_cap, cost, met,
                   instance_size_cap(cost, met, thread_cap, capacity, 1))

    def size_cap(self, divisor: int) -> np.ndarray:
        """(C, T) largest tuples/s of one instance on each type if it may use at most 1/divisor of a machine."""
        return instance_size_cap(self.cost, self.met, self.thread_cap, self.capacity, divisor)


def instance_size_cap(cost: np.ndarray, met: np.ndarray, thread_cap: np.ndarray, capacity: np.ndarray,
                      divisor: int) -> np.ndarray:
    """Largest tuples/s of one instance within its thread cap and 1/divisor of a machine (< 0: none fits)."""
    return rate_limits(np.minimum(thread_cap, capacity / divisor)[None, :], cost, met)
