"""The cluster's ledger: every topology placed by plan, its load and worker slot on each machine, and what is left.

A registration holds a placement's load as linear functions of the topology's input rate
(the simulator's closed form), so the ledger recomputes admission and shares
(:mod:`planner.tenancy`) whenever a tenant comes, goes or changes priority. Each registration
also holds one Storm worker slot on every machine it uses (the plugin runs one worker per
topology per supervisor), out of the machine type's ``slots``. Plans for a tenant are made on a
cluster whose machines offer only what the others use less, without the machines whose slots
the others hold: machines of one type with different room become derived machine types
(``type@machine``) with the same profile entries, mapped back to their own type in the answer,
so no strategy changes.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import combinations

import numpy as np
from pydantic import Field

from planner.model import (
    Cluster,
    MachineType,
    Name,
    NonNegativeFloat,
    Placement,
    Plan,
    PlanRequest,
    ProfileEntry,
    TenantSpec,
    _Model,
)
from planner.problem import Problem
from planner.simulator import linear_loads, rate_limits
from planner.tenancy import Allocation, ShareMode, Tenant, allocate, no_free_slot

DERIVED_TYPE_SEPARATOR = "@"
MAX_PERCENT = 1e6
"""The largest load or capacity a registration may state, percent: far beyond any machine, short of float overflow."""
MIN_ROOM_PCT = 1.0
"""A machine with less room than this (percent) is left out of a tenant's plan."""


def _finite_or_none(rate: float) -> float | None:
    return round(rate, 3) if math.isfinite(rate) else None


class MachineShare(_Model):
    """One machine under a tenant's placement: its load ``fixed + worker + slope * R`` and its capacity (limit)."""

    slope: NonNegativeFloat = Field(le=MAX_PERCENT, description="Percent of the machine per tuple/s of the topology's input rate.")
    fixed: NonNegativeFloat = Field(default=0.0, le=MAX_PERCENT, description="Percent of the machine at any rate (the instances' MET).")
    worker: NonNegativeFloat = Field(default=0.0, le=MAX_PERCENT, description=(
        "Percent of the machine the topology's own worker costs at any rate: the machine base load, which every "
        "topology's worker on a machine costs again (docs/concepts/model.md, \"Many topologies\")."))
    capacity: NonNegativeFloat = Field(le=MAX_PERCENT, description=(
        "The machine's limit, capacity * max_utilization, percent: planned on 100 less one worker's base load."))
    type: Name
    slots: int | None = Field(default=None, ge=1, le=10_000, description=(
        "The machine's Storm worker slots (its type's `slots`), of which the topology's worker holds one; none: not "
        "counted (a registration that does not say)."))


class TenantRegistration(TenantSpec):
    """``PUT /v1/tenants/{topology}``: a placed topology and its load on every machine it uses."""

    plan_id: Name | None = None
    machines: dict[str, MachineShare] = Field(min_length=1, max_length=100_000)
    rate_cap: NonNegativeFloat | None = Field(default=None, description="The most input rate its threads carry; none: unbounded.")


class TenantRecord(TenantRegistration):
    topology: Name
    registered_at: float
    heartbeat_at: float
    request: PlanRequest | None = Field(default=None, description=(
        "The plan request it was placed by (its executor counts fixed), so the service can plan it again beside a "
        "newcomer; none when registered by PUT."))

    def tenant(self) -> Tenant:
        return Tenant(self.topology, slope={w: m.slope for w, m in self.machines.items()},
                      fixed={w: m.fixed + m.worker for w, m in self.machines.items()}, priority=self.priority,
                      min_rate=self.min_rate, target_rate=self.target_rate,
                      rate_cap=math.inf if self.rate_cap is None else self.rate_cap, arrival=self.registered_at,
                      hosts=frozenset(self.machines))


class LedgerTenant(_Model):
    topology: str
    plan_id: str | None
    priority: int
    min_rate: float
    target_rate: float | None
    status: str = Field(description="admitted, or refused (its minimum does not fit beside more important tenants').")
    rate: float | None = Field(description="Its share: the input rate, tuples/s, it is planned to run at (0 when refused; "
                                           "null when no machine's load grows with its rate, so nothing bounds it).")
    reason: str | None = None
    fits_rate: float | None = Field(default=None, description="Refused: the largest min_rate that would fit.")
    heartbeat_age_s: float


class LedgerMachine(_Model):
    id: str
    type: str
    capacity: float = Field(description="Percent of the machine the tenants may fill: capacity * max_utilization, "
                                        "plus the one worker's base load the capacity was lowered by.")
    loads: dict[str, float] = Field(description="Topology -> its predicted percent at its rate, its own worker's base "
                                                "load included.")
    free: float = Field(description="capacity less the loads, percent.")
    slots: int | None = Field(default=None, description="The machine's Storm worker slots; null where no "
                                                        "registration says.")
    slots_used: int = Field(default=0, description="Worker slots the tenants hold there: one per topology using it, "
                                                   "refused ones (running idle) included.")


class Ledger(_Model):
    mode: ShareMode
    ttl_s: float
    machines: list[LedgerMachine]
    tenants: list[LedgerTenant]


class AliveTopologies(_Model):
    topologies: list[Name] = Field(max_length=100_000, description="The names of every topology the cluster runs now.")


class Eviction(_Model):
    """A running topology the ledger refuses: its minimum does not fit beside the more important tenants'."""

    topology: str
    reason: str
    fits_rate: float = Field(description="The largest min_rate that would fit, tuples/s.")


class AliveAnswer(_Model):
    renewed: list[str]
    released: list[str]
    evicted: list[Eviction] = Field(default_factory=list, description=(
        "Listed topologies the ledger refuses now (after a priority change, say): the Nimbus plugin frees their "
        "slots. Empty where the service keeps refused tenants (--keep-refused)."))


class PriorityChange(_Model):
    priority: int = Field(ge=0, le=10_000)


class PriorityAnswer(_Model):
    topology: str
    priority: int
    affected: list[str] = Field(description="Topologies whose rate or admission changed: re-place them.")
    evicted: list[Eviction] = Field(default_factory=list, description=(
        "Tenants admitted before the change and refused after it: the plugin evicts them at its next heartbeat."))
    ledger: Ledger


def capacities(records: Iterable[TenantRecord]) -> dict[str, float]:
    """Each machine's limit as the newest registration naming it saw it, plus the worker base load taken off it.

    The caller plans on 100 less one worker's base load; the ledger charges every tenant its
    own worker instead, so that one is given back here (one tenant alone is planned as before).
    """
    out: dict[str, float] = {}
    for r in sorted(records, key=lambda r: r.registered_at):
        out.update({w: m.capacity + m.worker for w, m in r.machines.items()})
    return out


def slots_of(records: Iterable[TenantRecord]) -> dict[str, int]:
    """Each machine's worker slots as the newest registration naming it (and saying them) saw them."""
    out: dict[str, int] = {}
    for r in sorted(records, key=lambda r: r.registered_at):
        out.update({w: m.slots for w, m in r.machines.items() if m.slots is not None})
    return out


def slots_held(records: Iterable[TenantRecord]) -> dict[str, int]:
    """Per machine, the worker slots these registrations hold there: one per topology using it."""
    held: dict[str, int] = {}
    for r in records:
        for w in r.machines:
            held[w] = held.get(w, 0) + 1
    return held


def ledger_version(records: Iterable[TenantRecord]) -> frozenset[tuple]:
    """What admission depends on in these registrations, heartbeats left out: equal versions admit the same newcomers.

    A newcomer is planned on one reading of the ledger and registered after; comparing the
    two readings' versions tells whether another topology came, went or moved meanwhile.
    """
    return frozenset((r.topology, r.plan_id, r.registered_at, r.priority, r.min_rate, r.target_rate, r.rate_cap,
                      tuple(sorted((w, m.slope, m.fixed, m.worker, m.capacity, m.slots)
                                   for w, m in r.machines.items())))
                     for r in records)


def allocation_of(records: Sequence[TenantRecord], mode: ShareMode,
                  capacity: Mapping[str, float] | None = None) -> Allocation:
    """Admission and shares over the registrations: each machine's capacity (``capacities`` where not given) and its
    worker slots as the registrations say (``slots_of``), so one needing a slot those registered before it hold is
    refused."""
    return allocate([r.tenant() for r in records], capacity if capacity is not None else capacities(records), mode,
                    slots_of(records))


def evictions(records: Sequence[TenantRecord], mode: ShareMode, among: Collection[str]) -> list[Eviction]:
    """The tenants named in ``among`` that the ledger refuses, each with why and the min_rate that would fit."""
    refused = allocation_of(records, mode).refused
    return [Eviction(topology=t, reason=f.reason, fits_rate=round(f.fits_rate, 3))
            for t, f in sorted(refused.items()) if t in among]


def ledger_of(records: Sequence[TenantRecord], mode: ShareMode, ttl_s: float, now: float) -> Ledger:
    """The ledger: per machine each admitted tenant's load at its share and the worker slots held, per tenant its share
    or refusal."""
    capacity = capacities(records)
    allocation = allocation_of(records, mode, capacity)
    types = {w: m.type for r in records for w, m in r.machines.items()}
    slots, held = slots_of(records), slots_held(records)
    machines = []
    for w in sorted(capacity):
        loads = {t: round(v, 3) for t, v in sorted(allocation.loads.get(w, {}).items()) if v > 0}
        machines.append(LedgerMachine(id=w, type=types[w], capacity=round(capacity[w], 3), loads=loads,
                                      free=round(capacity[w] - sum(loads.values()), 3), slots=slots.get(w),
                                      slots_used=held.get(w, 0)))
    tenants = []
    for r in sorted(records, key=lambda r: (r.priority, r.registered_at, r.topology)):
        refusal = allocation.refused.get(r.topology)
        tenants.append(LedgerTenant(
            topology=r.topology, plan_id=r.plan_id, priority=r.priority, min_rate=r.min_rate,
            target_rate=r.target_rate, status="refused" if refusal else "admitted",
            rate=0.0 if refusal else _finite_or_none(allocation.rates[r.topology]),
            reason=refusal.reason if refusal else None, fits_rate=refusal.fits_rate if refusal else None,
            heartbeat_age_s=round(max(0.0, now - r.heartbeat_at), 1)))
    return Ledger(mode=mode, ttl_s=ttl_s, machines=machines, tenants=tenants)


def registration_of(problem: Problem, placement: Placement, spec: TenantSpec, plan_id: str | None,
                    worker_load: Mapping[str, float] | None = None) -> TenantRegistration:
    """A placement's load on every machine it uses, as linear functions of R (``planner.simulator.linear_loads``).

    ``worker_load`` (machine type -> percent, the profile set's machine base load) is what the
    topology's own worker costs each machine it uses; that worker holds one of the machine type's ``slots``.
    """
    loads = linear_loads(problem, placement)
    slots = {t.name: t.slots for t in problem.cluster.machine_types}
    worker_load = worker_load or {}
    # every machine with an instance runs a worker of the topology, even one whose instances cost nothing
    # in the model (Storm's __acker without a profile): it pays the worker there too
    hosting = {m for placed in placement.values() for m in placed}
    machines = {}
    for w, machine in enumerate(problem.cluster.machines):
        if loads.a_w[w] > 0 or loads.b_w[w] > 0 or machine.id in hosting:
            machines[machine.id] = MachineShare(slope=float(loads.a_w[w]), fixed=float(loads.b_w[w]),
                                                worker=float(worker_load.get(machine.type, 0.0)),
                                                capacity=float(problem.limit[w]), type=machine.type,
                                                slots=slots[machine.type])
    thread = rate_limits(loads.thread_limit_i, loads.a_i, loads.b_i)
    cap = float(np.min(thread)) if thread.size else math.inf
    return TenantRegistration(**spec.model_dump(), plan_id=plan_id, machines=machines,
                              rate_cap=None if math.isinf(cap) else max(0.0, cap))


def cluster_with_room(cluster: Cluster, entries: Sequence[ProfileEntry], used: Mapping[str, float],
                      max_utilization: float, leave_out: Collection[str] = (),
                      held: Mapping[str, int] | None = None) -> tuple[Cluster, list[ProfileEntry]]:
    """The cluster as a tenant sees it: each machine's capacity less ``used`` (percent of its limit).

    A machine with room left but less than its type's capacity gets a type of its own,
    ``type@machine``, with the type's profile entries; one with under MIN_ROOM_PCT is left out,
    and so is every machine of a type in ``leave_out`` and every machine whose type's ``slots``
    the other tenants hold all of (``held``: machine -> slots they hold; one slot left is enough).
    Raises ValueError when no machine has room.
    """
    types = {t.name: t for t in cluster.machine_types}
    derived: list[MachineType] = []
    machines = []
    extra: list[ProfileEntry] = []
    by_type: dict[str, list[ProfileEntry]] = {}
    for e in entries:
        by_type.setdefault(e.machine_type, []).append(e)
    slots = {m.id: types[m.type].slots for m in cluster.machines}
    for m in cluster.machines:
        if m.type in leave_out or no_free_slot((m.id,), held or {}, slots) is not None:
            continue
        t = types[m.type]
        taken = used.get(m.id, 0.0) / max_utilization
        if taken <= 1e-9:
            machines.append(m)
            continue
        room = t.capacity - taken
        if room < MIN_ROOM_PCT:
            continue
        name = f"{m.type}{DERIVED_TYPE_SEPARATOR}{m.id}"
        derived.append(t.model_copy(update={"name": name, "capacity": room}))
        machines.append(m.model_copy(update={"type": name}))
        extra += [e.model_copy(update={"machine_type": name}) for e in by_type.get(m.type, [])]
    if not machines:
        raise ValueError("no machine has room left: the other tenants fill the whole cluster or hold all its worker "
                         "slots")
    used_types = {m.type for m in machines}
    kept = [t for t in cluster.machine_types if t.name in used_types]
    return Cluster(machine_types=kept + derived, machines=machines), list(entries) + extra


def leave_out_choices(cluster: Cluster, limit: int) -> list[frozenset[str]]:
    """Sets of machine types a newcomer may be planned without: each type, then each pair, never all; at most ``limit``.

    A topology's worker costs every machine it uses its base load (a fifth to a quarter of a small
    machine here), so a tenant that only needs its minimum may hurt the others less on fewer types.
    """
    names = sorted({m.type for m in cluster.machines})
    choices = [frozenset(c) for size in (1, 2) for c in combinations(names, size) if size < len(names)]
    return choices[:max(0, limit)]


def with_own_types(plan: Plan, cluster: Cluster) -> Plan:
    """A plan made on derived types, its machines named with their own types again."""
    own = {m.id: m.type for m in cluster.machines}
    machines = [m.model_copy(update={"type": own.get(m.id, m.type)}) for m in plan.machines]
    return plan.model_copy(update={"machines": machines})


def placement_of_plan(plan: Plan) -> Placement:
    placement: Placement = {}
    for a in sorted(plan.assignments, key=lambda a: (a.component, a.index)):
        placement.setdefault(a.component, []).append(a.machine)
    return placement
