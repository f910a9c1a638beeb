"""What `hetsched replan` decides for a running topology: its placement now, the request for a better plan, the gain. Pure.

A running topology's executor count per component can rise by rebalance only up to its task count
(``topology.tasks``, fixed at submit; ``hetsched submit --spare-tasks``), so a plan asking for more
instances than a component has tasks is made again with that component fixed at its task count.

A topology that runs with weighted groupings (issue 33: its conf carries ``hetsched.grouping.shares``) is planned
with weighted shares, and the new plan's shares go with the rebalance that applies it (Storm's
``topology_conf_overrides``, as ``storm rebalance NAME -t '{...}'``): the workers only ever read the shares from the
topology's conf, so without that they would keep the first plan's.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hetsched.inventory import ExecutorPlace, SupervisorRow, declared_cluster
from planner.model import (
    Cluster,
    EvaluationRequest,
    InstanceAssignment,
    Plan,
    PlanOptions,
    PlanRequest,
    ProfileRef,
    Topology,
)
from planner.stream_shares import CONF_KEY as SHARES_KEY
from planner.stream_shares import machine_shares
from topologies import conf as keys

BASE_LOAD_KEY = "machine_base_load"


class ReplanError(Exception):
    """The running topology or cluster cannot be re-planned as it is; one sentence."""


@dataclass(frozen=True)
class RunningPlacement:
    """A running topology's user executors: per component, the machine of executor 0, 1, ... (task order), and its tasks."""

    machines: dict[str, list[str]]
    tasks: dict[str, int]

    @property
    def executors(self) -> dict[str, int]:
        return {c: len(ms) for c, ms in self.machines.items()}

    @classmethod
    def of(cls, places: Iterable[ExecutorPlace]) -> RunningPlacement:
        machines: dict[str, list[str]] = {}
        tasks: dict[str, int] = {}
        unknown = set()
        for p in sorted(places, key=lambda p: (p.component, p.task_start)):
            if p.component.startswith("__"):
                continue
            if not p.machine:
                unknown.add(p.host or "(not placed)")
            machines.setdefault(p.component, []).append(p.machine or "")
            tasks[p.component] = tasks.get(p.component, 0) + p.task_end - p.task_start + 1
        if unknown:
            raise ReplanError(f"the machine of {', '.join(sorted(unknown))} is unknown (give its storm.yaml with "
                              "--storm-yaml, or wait until every executor is placed)")
        return cls(machines, tasks)


def planner_cluster(rows: Iterable[SupervisorRow], base_load: Mapping[str, float]) -> Cluster:
    """The supervisors with a declared machine that Storm offers its scheduler (not blacklisted), each type's capacity
    the whole machine less its base load (as the plugin): :func:`hetsched.inventory.declared_cluster`, refused where
    no supervisor is left."""
    rows = list(rows)
    if not any(r.schedulable for r in rows):
        raise ReplanError("no supervisor declares its machine (supervisor.scheduler.meta machine-id and machine-type)")
    return declared_cluster(rows, base_load)


def with_counts(topology: Topology, counts: Mapping[str, int | None]) -> Topology:
    return topology.model_copy(update={"components": [
        c.model_copy(update={"parallelism": counts.get(c.id)}) for c in topology.components]})


def current_evaluation_request(topology: Topology, cluster: Cluster, profiles: str,
                               running: RunningPlacement, weighted_shares: bool = False) -> EvaluationRequest:
    """The running placement to score; ``weighted_shares`` (a topology on weighted groupings) scores it with the
    shares the planner would choose for it, as the new plan is, so the gain compares like with like."""
    fixed = with_counts(topology, running.executors)
    return EvaluationRequest(topology=fixed, cluster=cluster, profiles=ProfileRef(name=profiles),
                             options=PlanOptions(weighted_shares=weighted_shares), assignments=[
        InstanceAssignment(component=c.id, machine=m) for c in fixed.components for m in running.machines[c.id]])


def plan_request(topology: Topology, cluster: Cluster, profiles: str, capped: Mapping[str, int],
                 strategy: str | None = None, keep_counts: Mapping[str, int] | None = None,
                 weighted_shares: bool = False) -> PlanRequest:
    """Instance counts free except where ``capped`` (at the task count) or ``keep_counts`` fix them."""
    counts: dict[str, int | None] = {**(keep_counts or {}), **capped}
    return PlanRequest(topology=with_counts(topology, counts), cluster=cluster, profiles=ProfileRef(name=profiles),
                       strategy=strategy, options=PlanOptions(weighted_shares=weighted_shares))


def task_count_caps(plan: Plan, tasks: Mapping[str, int]) -> dict[str, int]:
    """Components whose instance count a rebalance cannot apply as the model sees it, each with the count it can.

    More instances than tasks: the task count. A count that does not divide the task count: the
    largest that does. Storm splits a component's tasks over its executors as evenly as it can and a
    shuffle spreads tuples evenly over tasks, so 8 tasks on 6 executors give two of them twice the
    tuples of the others, where the model splits evenly over instances (a tune of Linear so placed
    ran at 14.7 tuples/s, under half its plan's 31.2: issue19/tune-explore-20261126).
    """
    fixed: dict[str, int] = {}
    for c, n in plan.instances.items():
        t = tasks.get(c)
        if t is None or t < 1 or (n <= t and t % n == 0):
            continue
        fixed[c] = max(d for d in range(1, min(n, t) + 1) if t % d == 0)
    return fixed


def gain(current_rate: float, planned_rate: float) -> float:
    """Relative gain of the planned input rate over the current one (inf when the current placement sustains nothing)."""
    if current_rate <= 0:
        return math.inf if planned_rate > 0 else 0.0
    return planned_rate / current_rate - 1.0


def placement_of_plan(plan: Plan) -> dict[str, list[str]]:
    """Component -> machine of instance 0, 1, ... (the plan's ``index``)."""
    found: dict[str, dict[int, str]] = {}
    for a in plan.assignments:
        found.setdefault(a.component, {})[a.index] = a.machine
    return {c: [by_index[i] for i in sorted(by_index)] for c, by_index in found.items()}


def plan_within_tasks(ask: Callable[[PlanRequest], Plan], topology: Topology, cluster: Cluster, profiles: str,
                      tasks: Mapping[str, int], strategy: str | None = None,
                      keep_counts: Mapping[str, int] | None = None,
                      weighted_shares: bool = False) -> tuple[Plan, dict[str, int]]:
    """A plan a rebalance can apply, and the components capped on the way: ``ask`` (the planner's ``POST /v1/plans``)
    is asked again with every component :func:`task_count_caps` names fixed at the count it gives."""
    capped: dict[str, int] = {}
    plan = ask(plan_request(topology, cluster, profiles, capped, strategy, keep_counts, weighted_shares))
    while over := task_count_caps(plan, tasks):
        capped.update(over)
        plan = ask(plan_request(topology, cluster, profiles, capped, strategy, keep_counts, weighted_shares))
    return plan, capped


Shares = Mapping[str, Mapping[str, float]]
"""``hetsched.grouping.shares``: stream ``from->to`` -> machine (host or machine id) -> share of the stream."""


def runs_weighted(conf: Mapping[str, Any]) -> bool:
    """Whether a running topology's streams use the weighted groupings: its conf carries their shares."""
    return conf.get(SHARES_KEY) is not None


def plan_shares(plan: Plan, machine_of_host: Mapping[str, str]) -> dict[str, dict[str, float]] | None:
    """A plan's shares as the workers read them, each machine named by its host (as ``hetsched submit`` writes them).

    ``{}`` for a plan made with weighted shares that kept every stream even; None for a plan made without them
    (a placement stored by the tune, say), which says nothing of the weights.
    """
    if not plan.shares and "weighted_shares" not in plan.stats:
        return None
    host_of = {machine: host for host, machine in machine_of_host.items()}
    return {stream: {host_of.get(m, m): share for m, share in per_machine.items()}
            for stream, per_machine in machine_shares(plan).items()}


def shares_overrides(running: Shares | None, wanted: Shares | None, machine_of_host: Mapping[str, str],
                     tolerance: float = 1e-6) -> dict[str, Any]:
    """The conf a re-placement must send for the weights: ``{hetsched.grouping.shares: wanted}``, or ``{}`` when the
    topology runs without weighted groupings, nothing is wanted, or the weights are the same (machines compared by
    id, so a host and its machine id are one machine). Sending only a change spares the workers a restart for it.
    """
    if running is None or wanted is None:
        return {}
    try:
        now, then = _by_machine(running, machine_of_host), _by_machine(wanted, machine_of_host)
        same = now.keys() == then.keys() and all(
            now[s].keys() == then[s].keys() and all(abs(now[s][m] - then[s][m]) <= tolerance for m in now[s]) for s in now)
    except (AttributeError, TypeError, ValueError):  # running shares the workers could not read either: replace them
        same = False
    return {} if same else {SHARES_KEY: {stream: dict(per_machine) for stream, per_machine in wanted.items()}}


def _by_machine(shares: Shares, machine_of_host: Mapping[str, str]) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for stream, per_machine in shares.items():
        for machine, share in (per_machine or {}).items():
            key = machine_of_host.get(machine, machine)
            found.setdefault(stream, {})[key] = found.get(stream, {}).get(key, 0.0) + float(share)
    return found


def shares_line(name: str, sent: Shares) -> str:
    """One line saying a re-placement sends new weights, and which."""
    streams = "; ".join(f"{stream} " + (", ".join(f"{m} {v:.3g}" for m, v in sorted(per_machine.items())) or "even")
                        for stream, per_machine in sorted(sent.items()))
    return (f"{name}: the plan's weights change, so the rebalance sends them ({SHARES_KEY}): "
            + (streams or "every stream even"))


def planner_conf_overrides(conf: Mapping[str, Any], profiles: str) -> dict[str, Any]:
    """What a re-placement must add to a running topology's conf for the plugin to place it by its bound plan.

    The plugin places evenly, bound plan or not, a topology whose conf names neither a profile set nor a plan
    (one submitted for Storm's own scheduling); the rebalance gives it ``hetsched.profiles``, which also keeps
    it planned afterwards (repairs after a machine loss need the set). A conf that names one is left alone.
    """
    if conf.get(keys.PROFILES) is not None or conf.get(keys.PLAN_ID) is not None:
        return {}
    return {keys.PROFILES: profiles}


def replacement_line(result: Any) -> str:
    """One line on what a drained re-placement (``observe.replacement.ReplacementResult``) did."""
    return (
        f"re-placed {'drained' if result.drained else 'after the message timeout'} in {result.drain_s:.1f} s, placed by "
        f"plan in {result.placed_s:.1f} s{'' if result.matches_plan else ' (NOT as the plan says: see hetsched placement)'}; "
        f"executors {result.executors_before} -> {result.executors_after}; spout tuples failed during the drain: "
        f"{result.failed_during_drain}, in flight when the workers stopped: {result.in_flight_at_rebalance}"
        + (f"; kept inactive {result.conf_wait_s:.0f} s more, until every supervisor had restarted its workers with the "
           "new conf" if result.conf_wait_s else ""))
