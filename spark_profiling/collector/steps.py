"""The spout's rate steps of a round: how high to go, and when a machine has saturated. Pure.

A round starts from a guess of the rate at which its busiest machine fills up (the configured
CPU per tuple plus a guess of the overhead) and steps through fractions of that rate. After
every step the guess is redone from what the machines really used (a line of each machine's
CPU against the delivered rate), so the later steps approach saturation wherever the guess was.
The round stops after the step in which some machine saturated: its cgroup CPU reached the quota,
or a component no longer kept up with the tuples offered to it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spark_profiling.collector.design import HELPER_OVERHEAD_MS, Design, Round

SATURATED_CPU_PERCENT = 95.0
"""A machine using this much of its quota is saturated."""
LAG_RATIO = 0.9
"""A component handling less than this share of the tuples offered to it is saturated ..."""
BUSY_CPU_PERCENT = 70.0
"""... if some machine is this busy: with every machine idler, a lag is a queue draining, not saturation
(a host busy with other work can keep a machine under its quota, so a lag counts below 95 %)."""
IDLE_CORES_GUESS = 0.05
"""A machine's CPU with a worker and a supervisor but no tuples, in cores (measured about 0.05)."""
TOP_FRACTION = 1.2
"""The last step offers this much of the estimated saturating rate, so saturation is reached."""
MIN_RATE = 0.5
GROWTH = 1.1
"""Each step offers at least this much more than the one before."""
MAX_GROWTH = 2.5
"""... and at most this many times as much: one noisy step never throws the next far past saturation."""
LINE_SPREAD = 1.3
"""Two steps whose delivered rates differ less than this factor give no trustworthy line."""


@dataclass(frozen=True)
class StepObservation:
    """What a round's machines and components did over the settled part of one step."""

    offered: float
    """The spout rate asked for, tuples/s (the whole topology)."""
    delivered: float
    """What the spouts really emitted, tuples/s."""
    handled: dict[str, float]
    """Component -> tuples/s it executed (a spout: emitted)."""
    emitted: dict[str, float]
    """Component -> tuples/s it emitted on its user streams."""
    machine_cpu: dict[str, float]
    """Machine id -> CPU used, percent of its quota."""


FIRST_FRACTION = 0.1
"""The first step offers this share of the estimated saturating rate: a line needs a light end."""


def fractions(steps: int) -> list[float]:
    """``steps`` evenly spaced fractions of the saturating rate, from light to past it."""
    if steps < 1:
        raise ValueError("a round needs at least one step")
    if steps == 1:
        return [TOP_FRACTION]
    return [FIRST_FRACTION + (TOP_FRACTION - FIRST_FRACTION) * i / (steps - 1) for i in range(steps)]


def predicted_capacity(design: Design, round_: Round, cpu_ms: Mapping[str, float]) -> float:
    """Spout rate (tuples/s) at which the round's first machine would fill up, from the configured costs."""
    capacities = []
    for machine_id in round_.machines():
        machine = design.machines[machine_id]
        ms_per_unit = sum(
            design.unit_rates[c] * (cpu_ms.get(design.profiles[c], 0.0) + HELPER_OVERHEAD_MS)
            for c in round_.components_on(machine_id)
        )
        slope = ms_per_unit / 1000.0 / machine.cores * 100.0
        idle = IDLE_CORES_GUESS / machine.cores * 100.0
        if slope > 0:
            capacities.append(max(MIN_RATE, (100.0 - idle) / slope))
    return min(capacities) if capacities else 100.0


def refined_capacity(design: Design, round_: Round, history: list[StepObservation], guess: float) -> float:
    """The saturating spout rate from the steps so far: per machine, its CPU line against the delivered rate."""
    capacities = []
    for machine_id in round_.machines():
        points = [(s.delivered, s.machine_cpu[machine_id]) for s in history
                  if machine_id in s.machine_cpu and s.delivered > 0]
        if not points:
            continue
        idle = IDLE_CORES_GUESS / design.machines[machine_id].cores * 100.0
        xs = [x for x, _ in points]
        if len(points) >= 2 and max(xs) >= LINE_SPREAD * min(xs):
            slope, intercept = _line(points)
        else:
            x, y = max(points)
            intercept = min(idle, y)
            slope = (y - intercept) / x
        if slope > 0:
            capacities.append(max(MIN_RATE, (100.0 - max(0.0, intercept)) / slope))
    return min(capacities) if capacities else guess


def next_rate(step: int, steps: list[float], capacity: float, previous: float | None) -> float:
    """The spout rate of step ``step`` (0-based): its fraction of the capacity, and above the last step."""
    rate = max(MIN_RATE, steps[step] * capacity)
    if previous is not None:
        rate = min(max(rate, previous * GROWTH), previous * MAX_GROWTH)
    return round(rate, 2)


def saturation(
    observation: StepObservation, inputs: Mapping[str, list[str]], spouts: list[str], round_: Round
) -> list[str]:
    """Why the round's machines are saturated in this step (empty: not saturated).

    ``inputs``: bolt -> the components it subscribes to.
    """
    reasons = []
    for machine_id, cpu in sorted(observation.machine_cpu.items()):
        if cpu >= SATURATED_CPU_PERCENT:
            reasons.append(f"{machine_id} used {cpu:.0f}% of its CPU quota")
    if max(observation.machine_cpu.values(), default=0.0) < BUSY_CPU_PERCENT:
        return reasons
    if spouts and observation.offered > 0 and observation.delivered < LAG_RATIO * observation.offered:
        reasons.append(
            f"the spouts emitted {observation.delivered:.1f} of the {observation.offered:.1f} tuples/s offered"
        )
    for bolt, parents in inputs.items():
        offered = sum(observation.emitted.get(p, 0.0) for p in parents)
        handled = observation.handled.get(bolt)
        if handled is not None and offered > 0 and handled < LAG_RATIO * offered:
            reasons.append(
                f"{bolt} on {round_.placement[bolt]} executed {handled:.1f} of the {offered:.1f} tuples/s offered to it"
            )
    return reasons


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    slope = sxy / sxx if sxx > 0 else 0.0
    return slope, my - slope * mx
