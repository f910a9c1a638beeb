"""Where Storm put every executor of a topology, from Nimbus' getTopologyInfo, in the planner's terms."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from collections.abc import Mapping

from planner.model import SYSTEM_PREFIX, Component, InstanceAssignment, Plan, Placement, StreamShares, Topology
from planner.stream_shares import task_weights


@dataclass(frozen=True)
class ActualPlacement:
    """Executors by component (machine of instance 0, 1, ... in task order), workers per machine, Nimbus' status line."""

    executors: dict[str, list[str]]
    workers: dict[str, int] = field(default_factory=dict)
    sched_status: str = ""

    def user_placement(self) -> Placement:
        """The placement of the topology's own components (system components such as ``__acker`` left out)."""
        return {c: list(ms) for c, ms in self.executors.items() if not c.startswith(SYSTEM_PREFIX)}

    def assignments(self) -> list[InstanceAssignment]:
        """The user components' instances as an EvaluationRequest's assignments (instance order kept)."""
        return [InstanceAssignment(component=c, machine=m) for c, ms in self.user_placement().items() for m in ms]

    def with_system(self, topology: Topology) -> tuple[Topology, list[InstanceAssignment]]:
        """The topology with the system executors Storm placed (``__acker``, ...) added as profile-less bolts, and
        every instance's assignment: the model charges each system executor its machine type's idle thread."""
        system = {c: ms for c, ms in self.executors.items() if c.startswith(SYSTEM_PREFIX) and ms}
        known = {c.id for c in topology.components}
        added = [Component(id=c, kind="bolt", parallelism=len(ms)) for c, ms in system.items() if c not in known]
        with_system = topology.model_copy(update={"components": [*topology.components, *added]})
        ids = known | set(system)
        return with_system, [InstanceAssignment(component=c, machine=m) for c, ms in self.executors.items()
                             if c in ids for m in ms]

    def machines_used(self) -> dict[str, list[str]]:
        """Machine -> the components (with repeats) placed on it, system ones included."""
        used: dict[str, list[str]] = defaultdict(list)
        for c, ms in self.executors.items():
            for m in ms:
                used[m].append(c)
        return dict(used)

    def as_dict(self) -> dict:
        return {"executors": self.executors, "workers": self.workers, "sched_status": self.sched_status}


def placement_shares(placement: ActualPlacement, shares: Mapping[str, Mapping[str, float]] | None) -> list[StreamShares]:
    """Per weighted stream, each executor's share where Storm really placed them, as the weighted groupings split a
    stream (planner.stream_shares.task_weights); a stream split evenly is left out. ``shares``:
    ``hetsched.grouping.shares`` by machine id."""
    result = []
    for stream, per_machine in (shares or {}).items():
        if "->" not in stream:  # the bench names every stream 'from->to'
            continue
        weights = task_weights(placement.executors.get(stream.split("->", 1)[1]) or [], per_machine)
        if weights is not None:
            result.append(StreamShares(stream=stream, shares=weights))
    return result


def from_topology_info(info, machine_of_host: dict[str, str]) -> ActualPlacement | None:
    """The placement in a Thrift TopologyInfo, or None while Nimbus has assigned nothing yet."""
    if not info.executors:
        return None
    by_component: dict[str, list[tuple[int, str]]] = defaultdict(list)
    slots: dict[str, set[int]] = defaultdict(set)
    for executor in info.executors:
        machine = machine_of_host.get(executor.host, executor.host)
        by_component[executor.component_id].append((executor.executor_info.task_start, machine))
        slots[machine].add(executor.port)
    return ActualPlacement(
        executors={c: [m for _task, m in sorted(items)] for c, items in sorted(by_component.items())},
        workers={m: len(ports) for m, ports in sorted(slots.items())},
        sched_status=info.sched_status or "",
    )


def plan_mismatches(placement: ActualPlacement, plan: Plan) -> list[str]:
    """Instances that do not run where the plan says (empty when the placement is the plan)."""
    faults = []
    for a in plan.assignments:
        machines = placement.executors.get(a.component, [])
        actual = machines[a.index] if a.index < len(machines) else None
        if actual != a.machine:
            faults.append(f"{a.component}[{a.index}] on {actual or 'nothing'}, planned {a.machine}")
    return faults
