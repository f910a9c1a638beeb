"""Storm's default scheduler (EvenScheduler / DefaultScheduler) in the planning model.

What Storm 2.8 does for a fresh topology (read from storm-server's
EvenScheduler.scheduleTopology/sortSlots and storm-client's StormCommon):

- Task ids start at 1 and are handed out component by component in
  component-id sorted order (system components included); with one task per
  executor, executors sorted by start task are: components sorted by id,
  each one's instances in order.
- Free slots are grouped by supervisor (supervisor ids sorted), ports sorted
  within a supervisor, supervisors ordered by free-slot count (most first,
  stable), then interleaved: first slot of each supervisor, then the second...
- The topology uses ``min(workers, free slots)`` of them; executor i goes to
  slot ``i mod slots``.

Here the topology asks for one worker per machine (the paper's setup), so the
slots used are the first port of every machine, and executor i lands on the
i-th machine in that order modulo the machine count. Instance counts: see
planner.strategies.baseline_counts. Heterogeneity-blind by construction.
"""
from __future__ import annotations

from planner.model import Cluster, Topology
from planner.problem import Problem
from planner.strategies.base import StrategyResult
from planner.strategies.baseline_counts import paper_counts


def slot_order(cluster: Cluster) -> list[str]:
    """Machine ids in the order EvenScheduler's interleaved slot list first visits them."""
    slots = {t.name: t.slots for t in cluster.machine_types}
    by_id = sorted(cluster.machines, key=lambda m: m.id)
    return [m.id for m in sorted(by_id, key=lambda m: -slots[m.type])]


def even_placement(topology: Topology, cluster: Cluster, counts: dict[str, int], workers: int | None = None) -> dict[str, list[str]]:
    """Deal executors in task order round-robin over the first ``workers`` slots (default one per machine)."""
    machines = slot_order(cluster)
    slots_per_machine = {m.id: next(t.slots for t in cluster.machine_types if t.name == m.type) for m in cluster.machines}
    interleaved: list[str] = []
    for port in range(max(slots_per_machine.values())):
        interleaved.extend(m for m in machines if slots_per_machine[m] > port)
    used = interleaved[: min(workers or len(machines), len(interleaved))]
    placement: dict[str, list[str]] = {}
    executor = 0
    for component in sorted(c.id for c in topology.components):
        placement[component] = []
        for _ in range(counts[component]):
            placement[component].append(used[executor % len(used)])
            executor += 1
    return placement


def plan(problem: Problem) -> StrategyResult:
    """The paper plan's instance counts, dealt round-robin as EvenScheduler deals executors."""
    counts, paper_rate = paper_counts(problem, "even")
    return StrategyResult(
        placement=even_placement(problem.topology, problem.cluster, counts),
        stats={"iterations": 0, "counts_from": "paper", "paper_rate": paper_rate},
    )
