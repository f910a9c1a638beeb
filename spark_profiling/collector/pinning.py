"""The plan that pins a round's components to their machines, stored by the planner for the Nimbus plugin.

The plugin places a topology whose conf names ``hetsched.plan.id`` exactly as that stored plan's
assignments say. The planning API stores only plans it made itself, so the request is built to
leave it one sensible answer: every machine of the round is given a machine type of its own,
every component a profile key of its own (``pin.<component>``) that is almost free on its
machine and dear everywhere else, and every component one instance. The returned plan is
checked against the round before it is used. Storm's acker is pinned the same way (one
executor: the topology is submitted with ``topology.acker.executors: 1``).
"""
from __future__ import annotations

from planner.model import Cluster, Component, Machine, MachineType, Plan, PlanRequest, ProfileEntry, ProfileRef, Topology
from spark_profiling.collector.design import Round
from spark_profiling.errors import ProfilingError

PIN_PREFIX = "pin."
STRATEGY = "paper"
"""FirstAssignment puts each instance where its predicted load is least: on its pinned machine."""
CHEAP_E, CHEAP_MET = 1e-6, 0.0
DEAR_E, DEAR_MET = 1.0, 1.0
"""Elsewhere a component would cost 100 % per tuple/s; ``MET`` pins the acker, which has no input rate."""


def pin_request(graph: Topology, round_: Round) -> PlanRequest:
    """A PlanRequest whose plan puts each component (one instance) on the round's machine for it."""
    machine_ids = round_.machines()
    wanted = {**round_.placement, **round_.system}
    components = [c.model_copy(update={"profile": PIN_PREFIX + c.id, "parallelism": 1}) for c in graph.components]
    components += [Component(id=s, kind="bolt", profile=PIN_PREFIX + s, parallelism=1) for s in round_.system]
    topology = graph.model_copy(update={"components": components})
    cluster = Cluster(
        machine_types=[MachineType(name=m, capacity=100.0, slots=1) for m in machine_ids],
        machines=[Machine(id=m, type=m) for m in machine_ids],
    )
    entries = [
        ProfileEntry(profile=PIN_PREFIX + c, machine_type=m, alpha=1.0,
                     **({"e": CHEAP_E, "met": CHEAP_MET} if wanted[c] == m else {"e": DEAR_E, "met": DEAR_MET}))
        for c in wanted for m in machine_ids
    ]
    return PlanRequest(topology=topology, cluster=cluster, profiles=ProfileRef(entries=entries), strategy=STRATEGY)


def check_pinned(plan: Plan, round_: Round) -> None:
    """Refuse a plan that does not place every component, once, where the round says."""
    placed: dict[str, list[str]] = {}
    for a in plan.assignments:
        placed.setdefault(a.component, []).append(a.machine)
    wrong = [
        f"{c} on {', '.join(placed.get(c, ['no machine']))} instead of {m}"
        for c, m in {**round_.placement, **round_.system}.items() if placed.get(c) != [m]
    ]
    if wrong:
        raise ProfilingError(
            f"the planner's plan {plan.id} for round {round_.index} does not pin the components: {'; '.join(wrong)}."
        )
