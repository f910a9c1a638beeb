"""How the service plans a topology that shares the cluster: on what the others leave, admitted or refused.

The ledger's registrations hold each placement's load as linear functions of its input rate, and
one worker slot on every machine it uses; admission and shares come from :mod:`planner.tenancy`
over every registration and the newcomer. A newcomer is planned only on machines where the others
leave a worker slot free.
"""
from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import anyio

from planner.ledger import (
    TenantRecord,
    TenantRegistration,
    allocation_of,
    capacities,
    cluster_with_room,
    leave_out_choices,
    placement_of_plan,
    registration_of,
    slots_held,
    with_own_types,
)
from planner.errors import PlanningError
from planner.model import Cluster, Plan, PlanOptions, PlanRequest, ProfileEntry
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.service.errors import ServiceError
from planner.service.settings import ServiceSettings
from planner.storage import Storage
from planner.tenancy import Allocation, Refusal, ShareMode, importance_order, priority_weight

log = logging.getLogger("hetsched.service")
T = TypeVar("T")

PlanOn = Callable[[Cluster, list[ProfileEntry]], Awaitable[Plan]]
"""Plans the request's topology on a cluster (the service's worker pool)."""
MAX_LEAVE_OUT_PLANS = 6
"""A newcomer beside others is also planned without some machine types, at most this many plans more
(3 types: each one and each pair); the placement under which the tenants' weighted rate is highest is kept."""


@dataclass
class SearchBounds:
    """How far a newcomer's search beside the running tenants may go, and what it had to leave out.

    The search is what the newcomer's own plan on what they leave does not need: its placements
    without some machine types and the joint re-plans. It stops at ``deadline`` (anyio's clock);
    each joint re-plan plans again at most ``max_tenants`` running tenants, the most important on
    the newcomer's machines; ``held`` skips it (a newcomer planned again with the ledger held).
    """

    deadline: float | None = None
    max_tenants: int | None = None
    budget_s: float | None = None
    held: bool = False
    timed_out: bool = False
    capped: tuple[int, int] | None = None
    """(planned again, on the newcomer's machines) of the largest joint re-plan the cap cut."""

    @classmethod
    def of(cls, settings: ServiceSettings, started: float | None = None) -> SearchBounds:
        """The service's bounds for a request that came at ``started`` (anyio's clock; now when None)."""
        budget = settings.joint_budget_s
        start = anyio.current_time() if started is None else started
        return cls(deadline=None if budget is None else start + budget, max_tenants=settings.joint_max_tenants,
                   budget_s=budget)

    def past(self) -> bool:
        """True once the search must stop (and from then on it counts as cut short)."""
        if self.held:
            return True
        if self.deadline is not None and anyio.current_time() >= self.deadline:
            self.timed_out = True
        return self.timed_out

    async def side_by_side(self, calls: Sequence[Callable[[], Awaitable[T | None]]]) -> list[T | None]:
        """Every call's answer, in order, the calls run concurrently (the planning pool's processes plan side by
        side); one not answered by the deadline is cancelled (its planning process killed), answers None, and the
        search counts as cut short."""
        answers: list[T | None] = [None] * len(calls)

        async def run(i: int) -> None:
            with anyio.move_on_at(math.inf if self.deadline is None else self.deadline) as scope:
                answers[i] = await calls[i]()
            if scope.cancelled_caught:
                self.timed_out = True

        async with anyio.create_task_group() as group:
            for i in range(len(calls)):
                group.start_soon(run, i)
        return answers

    def cap(self, planned: int, near: int) -> None:
        """A joint re-plan the cap cut: ``planned`` of the ``near`` running tenants on the newcomer's machines."""
        if self.capped is None or near > self.capped[1]:
            self.capped = (planned, near)

    def sentence(self) -> str | None:
        """What was left out, in one sentence for the answer and the log; None when the search ran in full."""
        if self.held:
            return ("It was planned again with the ledger held, on what the running topologies leave and without "
                    "searching further, because the ledger changed while it was first planned and that choice no "
                    "longer fitted.")
        cut = []
        if self.timed_out:
            cut.append(f"the search beside the running topologies stopped at the service's budget of "
                       f"{self.budget_s:g} s (hetsched serve --joint-budget-s)")
        if self.capped is not None:
            planned, near = self.capped
            which = f"only the {planned} most important" if planned else "none"
            cut.append(f"{which} of the {near} running topologies on its machines {'were' if planned > 1 else 'was'} "
                       f"planned again beside it (hetsched serve --joint-max-tenants)")
        if not cut:
            return None
        text = f"{' and '.join(cut)}, so its placement is the best found within {'those bounds' if len(cut) > 1 else 'that bound'}."
        return text[0].upper() + text[1:]


def current_tenants(storage: Storage, settings: ServiceSettings, now: float) -> list[TenantRecord]:
    """The registrations still alive (those without a heartbeat for ``tenant_ttl_s`` are released)."""
    return storage.tenants(expire_before=now - settings.tenant_ttl_s)


def request_limits(cluster: Cluster, options: PlanOptions, worker_load: Mapping[str, float]) -> dict[str, float]:
    """Each machine's limit, capacity * max_utilization, plus its worker base load (as ``ledger.capacities``), percent."""
    types = {t.name: t for t in cluster.machine_types}
    return {m.id: types[m.type].capacity * options.max_utilization + worker_load.get(m.type, 0.0)
            for m in cluster.machines}


def used_by(allocation: Allocation, at_minimum: Sequence[TenantRecord] | None = None) -> dict[str, float]:
    """Per machine, the others' load at their shares, or at their minimums where ``at_minimum`` is given."""
    if at_minimum is not None:
        used: dict[str, float] = {}
        for r in at_minimum:
            if r.topology in allocation.rates:
                for w, m in r.machines.items():
                    used[w] = used.get(w, 0.0) + m.fixed + m.worker + m.slope * r.min_rate
        return used
    return {w: sum(loads.values()) for w, loads in allocation.loads.items()}


def weighted_rate(allocation: Allocation, priorities: Mapping[str, int]) -> float:
    """Sum over admitted tenants of ``priority_weight(priority) * rate``: how a newcomer's placement is chosen."""
    return sum(priority_weight(priorities[t]) * min(r, 1e12) for t, r in allocation.rates.items())


def registration_for(request: PlanRequest, entries: list[ProfileEntry], plan: Plan,
                     worker_load: Mapping[str, float]) -> TenantRegistration:
    """The plan's load on every machine of the request's own cluster (not the derived one it was planned on)."""
    assert request.tenant is not None
    problem = compile_problem(request.topology, request.cluster, ProfileTable.from_entries(entries), request.options)
    return registration_of(problem, placement_of_plan(plan), request.tenant, plan.id, worker_load)


@dataclass(frozen=True)
class TenantPlan:
    """A tenant's plan and registration, with the other registrations and the machines' limits it was admitted on.

    ``alternatives`` are its other placements (empty for a reused placement): first those under
    which it is admitted only once the running tenants move (the ones that part the machines),
    then those under which it is admitted, best weighted rate first. The route plans the running tenants again beside each
    (``joint_replans``), since which one is best can change once they move; their
    ``stats.tenancy`` is written once one is kept.
    """

    plan: Plan
    record: TenantRecord
    others: list[TenantRecord]
    capacity: dict[str, float]
    alternatives: tuple[tuple[Plan, TenantRecord], ...] = ()


async def plan_tenant(request: PlanRequest, entries: list[ProfileEntry], reused: Plan | None, plan_on: PlanOn,
                      storage: Storage, settings: ServiceSettings,
                      worker_load: Mapping[str, float] | None = None, bounds: SearchBounds | None = None) -> TenantPlan:
    """Plan (or take the reused placement of) a tenant on what the others leave; 409 when it is not admitted.

    First on what the others use at their shares now; if that cannot hold its minimum, on what
    their minimums leave (their shares then shrink). Either way only on machines where the others
    leave a worker slot free: slots go first come, first served (``planner.tenancy``), so a more
    important newcomer evicts no one for a slot. Beside others it is also planned on that room
    without some machine types (``leave_out_choices``): its worker costs every machine it uses, so
    fewer machines can leave the others more. Of the placements that admit it, the one under which
    the tenants' weighted rate (``weighted_rate``) is highest is kept. ``worker_load`` (machine type -> percent,
    the profile set's base load) is charged for its worker on every machine it uses. The placements
    without some machine types are searched within ``bounds``. The record is not stored here.
    """
    worker_load = worker_load or {}
    bounds = bounds or SearchBounds()
    assert request.tenant is not None
    name = request.topology.name
    now = time.time()
    records = await anyio.to_thread.run_sync(current_tenants, storage, settings, now)
    previous = next((r for r in records if r.topology == name), None)
    others = [r for r in records if r.topology != name]
    capacity = {**capacities(others), **request_limits(request.cluster, request.options, worker_load)}
    now_shared = allocation_of(others, settings.share_mode, capacity)
    plan = reused
    room = used_by(now_shared)
    at_minimums = used_by(now_shared, others)
    at_important = used_by(now_shared, [r for r in others if r.priority <= request.tenant.priority])
    """What the minimums of the tenants at least as important leave: the less important may be evicted."""
    held = slots_held(others)
    """The worker slots the others hold: first come, first served, so never offered, whatever their priority."""
    if plan is None:
        try:
            plan = await plan_with_room(request, entries, room, plan_on, held=held)
        except PlanningError:
            plan = None  # what the others use now cannot host it; what their minimums leave may
        important = "the other" if at_important == at_minimums else "the more important"
        for squeezed_room, whose in ((at_minimums, "the other"), (at_important, important)):
            if plan is not None and plan.input_rate >= request.tenant.min_rate:
                break
            try:
                squeezed = await plan_with_room(request, entries, squeezed_room, plan_on, held=held)
            except PlanningError as exc:
                if squeezed_room is at_important:
                    raise ServiceError(409, "admission_refused", f"topology {name} is not admitted: what {whose} "
                                       f"tenants' minimum rates leave cannot host it ({exc})") from None
                continue
            if squeezed is not None and (plan is None or squeezed.input_rate > plan.input_rate):
                plan, room = squeezed, squeezed_room
        if plan is None:
            raise ServiceError(409, "admission_refused", f"topology {name} is not admitted: the other tenants' "
                               "minimum rates and worker slots leave no machine with room")
    candidates = [plan]
    if reused is None and others and not bounds.past():
        rooms = [room]
        if settings.joint_min_gain is not None:  # the running tenants may be planned again into less, or evicted
            rooms += [r for r in (at_minimums, at_important) if r not in rooms]
        choices = [(r, c) for r in rooms for c in leave_out_choices(request.cluster, MAX_LEAVE_OUT_PLANS)]

        async def plan_without(used: Mapping[str, float], leave_out: frozenset[str]) -> Plan | None:
            try:
                return await plan_with_room(request, entries, used, plan_on, leave_out, held)
            except PlanningError:
                return None  # its components do not fit on the other types

        fewer = await bounds.side_by_side([functools.partial(plan_without, r, c) for r, c in choices])
        seen = {placement_key(plan)}
        for p, (_, c) in zip(fewer, choices):
            if p is not None and placement_key(p) not in seen:
                seen.add(placement_key(p))
                candidates.append(p.model_copy(update={"stats": {**p.stats, "left_out_types": sorted(c)}}))
    priorities = {r.topology: r.priority for r in others} | {name: request.tenant.priority}
    admitted: list[tuple[float, Plan, TenantRecord, Allocation]] = []
    waiting: list[tuple[Plan, TenantRecord]] = []
    """Placements that refuse it beside the others as they run, which may admit it once they are planned again."""
    refusal = None
    for candidate in candidates:
        registration = await anyio.to_thread.run_sync(registration_for, request, entries, candidate, worker_load)
        candidate_record = TenantRecord(**registration.model_dump(), topology=name,
                                        registered_at=previous.registered_at if previous else now, heartbeat_at=now)
        candidate_allocation = allocation_of(others + [candidate_record], settings.share_mode, capacity)
        if name in candidate_allocation.refused:
            refusal = refusal or candidate_allocation.refused[name]
            waiting.append((candidate, candidate_record))
            continue
        admitted.append((weighted_rate(candidate_allocation, priorities), candidate, candidate_record,
                         candidate_allocation))
    if not admitted:
        assert refusal is not None
        fits = "" if refusal.no_slot else f"; a min_rate up to {refusal.fits_rate:g} tuples/s would fit"
        raise ServiceError(409, "admission_refused", f"topology {name} is not admitted: {refusal.reason}{fits}")
    admitted.sort(key=lambda a: -a[0])  # stable: of equal rates, the placement on every machine with room first
    score, plan, record, allocation = admitted[0]
    if len(candidates) > 1:
        log.info("tenant %s: %d placements tried, %d admit it; best %s (weighted rate %.3f)", name, len(candidates),
                 len(admitted), placement_label(plan), score)
    return TenantPlan(with_tenancy_stats(plan, record, others, allocation, settings.share_mode), record, others,
                      capacity, tuple(waiting) + tuple((p, r) for _, p, r, _ in admitted[1:]))


def placement_key(plan: Plan) -> frozenset[tuple[str, int, str]]:
    """Where every instance runs: two plans with the same key are one placement."""
    return frozenset((a.component, a.index, a.machine) for a in plan.assignments)


def placement_label(plan: Plan) -> str:
    """'without large' or 'on every machine with room': which of a newcomer's placements this is."""
    left_out = plan.stats.get("left_out_types")
    return f"without {', '.join(left_out)}" if left_out else "on every machine with room"


def newly_refused(before: Sequence[TenantRecord], after: Sequence[TenantRecord], capacity: Mapping[str, float],
                  mode: ShareMode) -> dict[str, Refusal]:
    """The tenants admitted among ``before`` that are refused among ``after`` (a newcomer's arrival), with why."""
    admitted = allocation_of(before, mode, capacity).rates
    return {t: f for t, f in allocation_of(after, mode, capacity).refused.items() if t in admitted}


def with_tenancy_stats(plan: Plan, record: TenantRecord, others: Sequence[TenantRecord], allocation: Allocation,
                       mode: ShareMode) -> Plan:
    """The plan with ``stats.tenancy``: its share, its loads and every tenant's rate under ``allocation``."""
    name = record.topology
    stats = {**plan.stats, "tenancy": {
        **plan.stats.get("tenancy", {}),
        "rate": round(allocation.rates[name], 3), "mode": mode, "priority": record.priority,
        "min_rate": record.min_rate, "target_rate": record.target_rate,
        "loads": {w: round(loads[name], 3) for w, loads in allocation.loads.items() if name in loads},
        "others": sorted(r.topology for r in others),
        "rates": {t: round(r, 3) for t, r in sorted(allocation.rates.items())},
    }}
    return plan.model_copy(update={"stats": stats})


Replanner = Callable[[TenantRecord, Mapping[str, float], frozenset[str], Mapping[str, int]],
                     Awaitable[tuple[Plan, TenantRecord] | None]]
"""Plans a registered tenant again on what ``used`` (machine -> percent) leaves, without the given machine types, on
machines where the others leave a worker slot (``held``: machine -> slots they hold): its plan and its registration
under it, or None when it cannot be planned there."""


@dataclass(frozen=True)
class JointReplan:
    """A running tenant planned again beside a newcomer: its new plan and registration, and what it changes."""

    topology: str
    plan: Plan
    record: TenantRecord
    rate_before: float
    rate_after: float
    weighted_before: float
    weighted_after: float

    def summary(self) -> dict[str, object]:
        """What the newcomer's plan says of it (``stats.tenancy.replaced``), and the plugin acts on."""
        return {"topology": self.topology, "plan_id": self.plan.id, "rate_before": round(self.rate_before, 3),
                "rate_after": round(self.rate_after, 3), "weighted_before": round(self.weighted_before, 3),
                "weighted_after": round(self.weighted_after, 3)}


async def joint_replans(records: Sequence[TenantRecord], newcomer: str, capacity: Mapping[str, float], mode: ShareMode,
                        min_gain: float, replan: Replanner, cluster: Cluster,
                        only: str | None = None, bounds: SearchBounds | None = None) -> list[JointReplan]:
    """Plan the tenants already running again beside a newcomer, most important first.

    A running tenant keeps the placement it was given when it came, made for what the cluster
    then left. Beside a newcomer, each admitted one (with a stored request) is planned again on
    what every other tenant uses at its minimum rate, on every machine and without each machine
    type or pair of types (``leave_out_choices``); the placement is kept when it raises the
    tenants' weighted rate (``weighted_rate``) by ``min_gain`` or more and refuses no tenant that
    was admitted. The next tenant is planned beside the kept ones. Under strict shares this hands
    the more important tenants what the less important ones' minimums leave, where their old
    placement could not use it; under weighted shares the fair shares often bind first, and
    nothing is re-placed. ``only`` names the one tenant to plan again (the newcomer itself, once
    the others have moved: it was planned on the room they left before). A tenant on no machine the
    newcomer uses is not planned again: the newcomer leaves its room as it was, and at hundreds of
    tenants planning each again (seven plans apiece, for each of the newcomer's placements) is what
    makes a newcomer slow. So within ``bounds`` only the ``max_tenants`` most important are planned
    again, and none once its deadline has passed (those kept by then stay kept: each one raised the
    weighted rate and refused nobody). A new placement that needs a worker slot the others hold
    refuses someone (``allocation_of`` counts slots), so it is never kept.
    """
    bounds = bounds or SearchBounds()
    current = list(records)
    priorities = {r.topology: r.priority for r in records}
    kept: list[JointReplan] = []
    order = [t.topology for t in importance_order([r.tenant() for r in records])]
    near = set(next((r.machines for r in records if r.topology == newcomer), ()))
    planned = skipped = 0
    for name in order:
        record = next(r for r in current if r.topology == name)
        if name == newcomer or record.request is None or (only is not None and name != only):
            continue
        if near and not near & set(record.machines):
            continue  # on no machine of the newcomer's: its room is as it was, so planning it again gains nothing new
        if only is None and bounds.max_tenants is not None and planned >= bounds.max_tenants:
            skipped += 1
            continue
        if bounds.past():
            break
        allocation = allocation_of(current, mode, capacity)
        if name not in allocation.rates:
            continue
        planned += 1
        before = weighted_rate(allocation, priorities)
        others = [r for r in current if r.topology != name]
        room = used_by(allocation_of(others, mode, capacity), others)
        best: tuple[float, Plan, TenantRecord, Allocation] | None = None
        choices = [frozenset[str](), *leave_out_choices(cluster, MAX_LEAVE_OUT_PLANS)]
        held = slots_held(others)
        for got in await bounds.side_by_side([functools.partial(replan, record, room, c, held) for c in choices]):
            if got is None:
                continue
            plan, candidate = got
            trial = allocation_of(others + [candidate], mode, capacity)
            if set(trial.refused) - set(allocation.refused):
                continue
            score = weighted_rate(trial, priorities)
            if score >= before * (1 + min_gain) and (best is None or score > best[0]):
                best = (score, plan, candidate, trial)
        if best is None:
            log.debug("tenant %s keeps its placement beside %s: no new one raises the weighted rate %.3f by %.0f%%",
                     name, newcomer, before, min_gain * 100)
            continue
        score, plan, candidate, trial = best
        kept.append(JointReplan(name, plan, candidate, allocation.rates[name], trial.rates[name], before, score))
        current = others + [candidate]
        log.debug("tenant %s planned again beside %s: rate %.3f -> %.3f tuples/s, weighted rate %.3f -> %.3f", name,
                 newcomer, allocation.rates[name], trial.rates[name], before, score)
    if skipped:
        bounds.cap(planned, planned + skipped)
    return kept


async def plan_with_room(request: PlanRequest, entries: list[ProfileEntry], used: Mapping[str, float],
                          plan_on: PlanOn, leave_out: frozenset[str] = frozenset(),
                          held: Mapping[str, int] | None = None) -> Plan | None:
    """A plan on what ``used`` leaves of each machine (none of the types ``leave_out``, none whose worker slots the
    others hold all of, ``held``); None when none has room."""
    try:
        cluster, derived_entries = cluster_with_room(request.cluster, entries, used, request.options.max_utilization,
                                                     leave_out, held)
    except ValueError:
        return None
    plan = await plan_on(cluster, derived_entries)
    planned = with_own_types(plan, request.cluster)
    stats = {**planned.stats, "planned_on_room": {m.id: round(t.capacity, 3) for m in cluster.machines
                                                  for t in cluster.machine_types if t.name == m.type}}
    return planned.model_copy(update={"stats": stats})
