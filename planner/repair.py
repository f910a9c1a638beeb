"""Repair a placement after a machine is lost: keep every instance that still runs, place only the rest.

A topology whose machine died still has instances on the surviving machines; moving them restarts
their workers for nothing. A repair keeps them where they are (the fewest changes) and chooses
machines for the lost instances only, maximising the closed-form sustainable input rate R of the
whole placement (planner.simulator). Few lost instances (``machines ** lost`` up to
:data:`EXHAUSTIVE_LIMIT`) are placed by trying every choice; more are placed greedily, one
instance at a time onto its best machine, then improved by moving one lost instance at a time
until no move raises R. Pure: a compiled Problem in, a Placement out.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from planner.errors import PlanningError
from planner.model import (
    Cluster,
    Name,
    Placement,
    Plan,
    PlanOptions,
    ProfileEntry,
    ProfileRef,
    Topology,
)
from planner.problem import Problem, compile_problem
from planner.profiles import ProfileTable
from planner.simulator import evaluate_problem, linear_loads, max_rate
from planner.validation import validate

EXHAUSTIVE_LIMIT = 20_000
"""Most placements of the lost instances tried one by one; above it the greedy search runs."""
STRATEGY = "repair"


class KeptInstance(BaseModel):
    """An instance that keeps running where it is: instance ``index`` of ``component`` on ``machine``."""

    model_config = ConfigDict(extra="forbid")
    component: Name
    index: int = Field(ge=0)
    machine: Name


class RepairRequest(BaseModel):
    """``POST /v1/repairs``: every component's instance count fixed (``parallelism``), the instances to keep."""

    model_config = ConfigDict(extra="forbid")
    topology: Topology
    cluster: Cluster
    profiles: ProfileRef
    options: PlanOptions = Field(default_factory=PlanOptions)
    keep: list[KeptInstance] = Field(default_factory=list, max_length=1_000_000,
                                     description="Instances that stay where they run; every other one is placed.")


def _rate(problem: Problem, placement: Placement) -> float:
    return max_rate(problem, linear_loads(problem, placement))[0]


def kept_placement(problem: Problem, keep: Iterable[KeptInstance]) -> tuple[Placement, list[tuple[str, int]]]:
    """The placement with kept instances filled in (others None), and the (component, index) of every lost one."""
    placement: dict[str, list[str | None]] = {}
    for component in problem.components:
        if component.parallelism is None:
            raise PlanningError(f"a repair needs every component's instance count: give {component.id} a parallelism")
        placement[component.id] = [None] * component.parallelism
    for k in keep:
        instances = placement.get(k.component)
        if instances is None:
            raise PlanningError(f"keep names unknown component {k.component}")
        if k.index >= len(instances):
            raise PlanningError(f"keep names instance {k.index} of {k.component}, which has {len(instances)} instances")
        if k.machine not in problem.machine_index:
            raise PlanningError(f"keep puts {k.component} instance {k.index} on machine {k.machine}, "
                                "which is not in the cluster")
        if instances[k.index] is not None:
            raise PlanningError(f"keep names instance {k.index} of {k.component} twice")
        instances[k.index] = k.machine
    lost = [(cid, i) for cid in problem.component_ids for i, m in enumerate(placement[cid]) if m is None]
    return placement, lost  # type: ignore[return-value]


def _with(placement: dict[str, list], lost: list[tuple[str, int]], machines: Iterable[str]) -> Placement:
    filled = {cid: list(ms) for cid, ms in placement.items()}
    for (cid, i), machine in zip(lost, machines):
        filled[cid][i] = machine
    return filled


def repair(problem: Problem, keep: Iterable[KeptInstance], exhaustive_limit: int = EXHAUSTIVE_LIMIT
           ) -> tuple[Placement, dict]:
    """The placement keeping ``keep`` with the highest R found for the lost instances, and how it was found."""
    placement, lost = kept_placement(problem, keep)
    machines = problem.machine_ids
    kept = sum(len(ms) for ms in placement.values()) - len(lost)
    if not lost:
        return _with(placement, [], []), {"kept": kept, "placed": 0, "search": "none"}
    if len(machines) ** len(lost) <= exhaustive_limit:
        best, best_rate = None, -1.0
        for choice in itertools.product(machines, repeat=len(lost)):
            candidate = _with(placement, lost, choice)
            rate = _rate(problem, candidate)
            if rate > best_rate:
                best, best_rate = candidate, rate
        return best, {"kept": kept, "placed": len(lost), "search": "exhaustive"}  # type: ignore[return-value]
    return _greedy(problem, placement, lost), {"kept": kept, "placed": len(lost), "search": "greedy"}


def _greedy(problem: Problem, placement: dict[str, list], lost: list[tuple[str, int]]) -> Placement:
    """Lost instances start on the machine with the most capacity; then each moves to its best machine until none gains."""
    start = problem.machine_ids[int(problem.limit.argmax())]
    choice = [start] * len(lost)
    rate = _rate(problem, _with(placement, lost, choice))
    improved = True
    while improved:
        improved = False
        for k in range(len(lost)):
            for machine in problem.machine_ids:
                if machine == choice[k]:
                    continue
                trial = choice[:k] + [machine] + choice[k + 1:]
                trial_rate = _rate(problem, _with(placement, lost, trial))
                if trial_rate > rate * (1 + 1e-9):
                    choice, rate, improved = trial, trial_rate, True
    return _with(placement, lost, choice)


def make_repair(topology: Topology, cluster: Cluster, entries: Iterable[ProfileEntry], keep: list[KeptInstance],
                options: PlanOptions | None = None) -> Plan:
    """Validate, repair and score: a Plan whose ``stats`` say how many instances were kept and placed."""
    started = time.perf_counter()
    options = options or PlanOptions()
    profiles = ProfileTable.from_entries(entries)
    validate(topology, cluster, profiles, options)
    problem = compile_problem(topology, cluster, profiles, options)
    placement, stats = repair(problem, keep)
    evaluation = evaluate_problem(problem, placement, stats)
    evaluation.stats["elapsed_ms"] = (time.perf_counter() - started) * 1000.0
    return Plan(**evaluation.model_dump(), strategy=STRATEGY)


def repair_json(topology: Topology, cluster: Cluster, entries: list[ProfileEntry], keep: list[KeptInstance],
                options: PlanOptions) -> str:
    """``make_repair`` as a planning worker runs it: the plan as JSON."""
    return make_repair(topology, cluster, entries, keep, options).model_dump_json()
