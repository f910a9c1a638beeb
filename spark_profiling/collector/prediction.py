"""How well a profile predicts a machine's CPU: measured against ``base load + TCU``, ``TCU = 100 e IR + MET`` (the paper's Fig. 6). Pure.

The base load is the machine type's idle cost (supervisor and worker JVM) the profiling job keeps
out of ``MET`` (planner.profiles.MACHINE_BASE_LOAD); a profile set without one predicts with 0.
"""
from __future__ import annotations

from dataclasses import dataclass

from planner.model import ProfileEntry
from planner.simulator import entry_cpu_pct


@dataclass(frozen=True)
class PredictionPoint:
    """One rate step of one machine: what its cgroup used and what the profile says it would."""

    machine_type: str
    offered: float
    """Spout rate of the step, tuples/s."""
    input_rate: float
    """Tuples/s the profiled instance really handled in the step."""
    measured: float
    """Machine CPU, percent of its quota."""
    predicted: float
    """Base load + 100 e IR + MET at the measured input rate, percent."""

    @property
    def error_points(self) -> float:
        """Predicted minus measured, percentage points of the machine."""
        return self.predicted - self.measured

    @property
    def error_ratio(self) -> float:
        """|predicted - measured| / measured."""
        return abs(self.predicted - self.measured) / self.measured if self.measured > 0 else float("inf")


@dataclass(frozen=True)
class ErrorSummary:
    machine_type: str
    points: int
    mean_abs_points: float
    worst_abs_points: float
    mean_ratio: float
    worst_ratio: float

    @property
    def accuracy(self) -> float:
        """1 - mean relative error, the paper's 'accuracy'."""
        return 1.0 - self.mean_ratio


def predicted_cpu(entry: ProfileEntry, input_rate: float, base_load: float = 0.0) -> float:
    """A machine's CPU with one instance fed ``input_rate`` tuples/s on it, percent of the machine."""
    return base_load + entry_cpu_pct(entry, input_rate)


def point(entry: ProfileEntry, offered: float, input_rate: float, measured: float, base_load: float = 0.0) -> PredictionPoint:
    return PredictionPoint(entry.machine_type, offered, input_rate, measured, predicted_cpu(entry, input_rate, base_load))


def summarise(points: list[PredictionPoint], machine_type: str = "all") -> ErrorSummary:
    """Mean and worst absolute error, in percentage points and relative to the measured CPU."""
    if not points:
        raise ValueError("no points to summarise")
    pp = [abs(p.error_points) for p in points]
    ratios = [p.error_ratio for p in points]
    return ErrorSummary(machine_type, len(points), sum(pp) / len(pp), max(pp), sum(ratios) / len(ratios), max(ratios))


def by_machine_type(points: list[PredictionPoint]) -> list[ErrorSummary]:
    """One summary per machine type (in the order first seen), then one of all points."""
    types = list(dict.fromkeys(p.machine_type for p in points))
    return [summarise([p for p in points if p.machine_type == t], t) for t in types] + [summarise(points)]
