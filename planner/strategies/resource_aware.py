"""Storm's Resource Aware Scheduler (R-Storm, DefaultResourceAwareStrategy) in the planning model.

How a user would run RAS on this cluster, and how it is modelled:

- Every supervisor declares its CPU capacity: its machine type's capacity
  (100 = the whole machine), whatever the type.
- Every executor declares CPU points: its predicted CPU percent on the
  reference machine type (``options.reference_machine_type``, default the
  first type) at the rate the ``paper`` plan sustains, with the paper plan's
  instance counts (see planner.strategies.baseline_counts). RAS then treats a
  point as the same on every machine: it is blind to a tuple costing
  different CPU on different machine types.
- Executor order (ExecSorterByConnectionCount): components by connection
  count (sum over neighbours of their executors x own executors), most
  first, ties by id; for each, one executor of it then one of each neighbour
  (neighbours fewest connections first, ties by id), repeated until they run
  out; system components after the user components, ``__acker`` last.
- Node order for each executor (NodeSorterHostProximity, COMMON sort, CPU the
  only resource): nodes already holding more executors of the topology first,
  then more available CPU share, then id; the executor goes to the first
  node where its points fit (RasNode.wouldFit). So RAS packs node by node.
- Memory (RAS's other resource): an executor needs its component's
  ``memory_mb`` on a node, plus the topology's ``worker_memory_mb`` on a node
  that holds none of its executors yet; a node whose memory it exceeds does
  not fit (RasNode.wouldFit checks memory as well as CPU).
- Storm backtracks when an executor fits nowhere; here the greedy pass is
  kept and a failure is a PlanningError saying RAS could not schedule.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from planner.errors import PlanningError
from planner.model import Topology
from planner.problem import Problem
from planner.simulator import MEMORY_SLACK_MB, instance_cpu_pct
from planner.strategies.base import Deadline, StrategyResult
from planner.strategies.baseline_counts import paper_counts

ACKER = "__acker"


def executor_order(topology: Topology, counts: dict[str, int]) -> list[tuple[str, int]]:
    """(component, instance index) in ExecSorterByConnectionCount order."""
    user = [c.id for c in topology.components if not c.is_system]
    neighbours: dict[str, set[str]] = {c: set() for c in user}
    for s in topology.streams:
        if s.source in neighbours and s.target in neighbours:
            neighbours[s.source].add(s.target)
            neighbours[s.target].add(s.source)

    def connections(c: str) -> int:
        return sum(counts[n] * counts[c] for n in neighbours[c])

    queues = {c: deque(range(counts[c])) for c in user}
    ordered: list[tuple[str, int]] = []
    for comp in sorted(user, key=lambda c: (-connections(c), c)):
        near = sorted(neighbours[comp], key=lambda n: (counts[n] * counts[comp], n))
        progressed = True
        while progressed:
            progressed = False
            for c in [comp, *near]:
                if queues[c]:
                    ordered.append((c, queues[c].popleft()))
                    progressed = True
    system = sorted((c.id for c in topology.components if c.is_system), key=lambda c: (c == ACKER, c))
    for c in system:
        ordered.extend((c, i) for i in range(counts[c]))
    return ordered


def cpu_points(problem: Problem, counts: dict[str, int], rate: float, reference_type: str) -> dict[str, list[float]]:
    """CPU points each executor declares: its predicted CPU percent on the reference type at ``rate``."""
    t = problem.type_names.index(reference_type)
    count_arr = np.array([counts[c] for c in problem.component_ids])
    shares = problem.shares(count_arr)
    points: dict[str, list[float]] = {}
    for ci, cid in enumerate(problem.component_ids):
        n = counts[cid]
        per = [shares.split[ci] / n + shares.each[ci] + (shares.first[ci] if i == 0 else 0.0) for i in range(n)]
        points[cid] = [float(instance_cpu_pct(problem.cost[ci, t], problem.met[ci, t], r * rate)) for r in per]
    return points


def plan(problem: Problem) -> StrategyResult:
    """The paper plan's instance counts, placed as Storm's RAS would place them (see the module docstring)."""
    topology, cluster, options = problem.topology, problem.cluster, problem.options
    deadline = Deadline("resource_aware", options.time_limit_s)
    counts, paper_rate = paper_counts(problem, "resource_aware")
    reference = options.reference_machine_type or cluster.machine_types[0].name
    points = cpu_points(problem, counts, paper_rate, reference)
    capacity = {t.name: t.capacity for t in cluster.machine_types}
    machine_ids = [m.id for m in cluster.machines]
    total = np.array([capacity[m.type] for m in cluster.machines])
    available = total.copy()
    placed = np.zeros(len(machine_ids), dtype=np.int64)
    id_rank = np.argsort(np.argsort(np.array(machine_ids, dtype=object)))
    memory_free = problem.memory_limit.copy()
    memory_of = dict(zip(problem.component_ids, problem.memory))
    placement: dict[str, list[str | None]] = {c: [None] * counts[c] for c in counts}
    for placed_so_far, (comp, index) in enumerate(executor_order(topology, counts)):
        deadline.check(placed_so_far)
        need = points[comp][index]
        memory_need = memory_of[comp] + problem.worker_memory * (placed == 0)
        share = available / available.sum() if available.sum() > 0 else np.zeros_like(available)
        order = np.lexsort((id_rank, -share, -placed))
        cpu_fits = available[order] >= need - 1e-9
        fits = order[cpu_fits & (memory_free[order] >= memory_need[order] - MEMORY_SLACK_MB)]
        if fits.size == 0:
            what = (f"its {need:.1f} CPU points fit on no supervisor" if not cpu_fits.any()
                    else f"its {memory_of[comp]:g} MB fit in no supervisor's free memory")
            raise PlanningError(
                f"resource_aware: Storm's RAS could not schedule instance {index} of component {comp}: {what}"
            )
        w = int(fits[0])
        available[w] -= need
        memory_free[w] -= memory_need[w]
        placed[w] += 1
        placement[comp][index] = machine_ids[w]
    return StrategyResult(
        placement={c: [m for m in ms if m is not None] for c, ms in placement.items()},
        stats={"iterations": 0, "counts_from": "paper", "paper_rate": paper_rate, "reference_machine_type": reference},
    )
