"""/v1/plans: plan a topology on a cluster and keep the plan under an id."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import Annotated

import anyio
from fastapi import APIRouter, Body, Depends, Response

from planner.errors import PlanningError
from planner.events import EventKind
from planner.ledger import TenantRecord, allocation_of, capacities, ledger_version
from planner.model import Plan, PlanOptions, PlanRequest, ProfileRef, ProfileVersionRef, TenantSpec
from planner.profiles import machine_base_load
from planner.service import examples
from planner.service.deps import get_ledger_lock, get_planning_pool, get_settings, get_storage
from planner.service.errors import ErrorBody, ServiceError, not_found
from planner.service import history
from planner.service.json_body import StrictJSONRoute
from planner.service.planning import (
    Planner,
    ResolvedProfiles,
    limited_options,
    ordered_assignments,
    resolve_profiles,
    stored_plan_fits,
)
from planner.service.settings import ServiceSettings
from planner.service.tenants import (
    JointReplan,
    Replanner,
    SearchBounds,
    current_tenants,
    joint_replans,
    newly_refused,
    placement_label,
    plan_tenant,
    plan_with_room,
    registration_for,
    request_limits,
    weighted_rate,
    with_tenancy_stats,
)
from planner.service.workers import PlanningPool
from planner.storage import Storage
from planner.tenancy import Refusal
from planner.validation import check_profiles
from planner.strategies import DEFAULT_STRATEGY

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/plans", tags=["plans"], route_class=StrictJSONRoute)


@router.post("", status_code=201, response_model=Plan,
             responses={404: {"model": ErrorBody, "description": "The named profile set does not exist."}})
async def create_plan(
    request: Annotated[PlanRequest, Body(openapi_examples={"linear": {"summary": "Linear on two machine types", "value": examples.PLAN_REQUEST}})],
    storage: Storage = Depends(get_storage),
    settings: ServiceSettings = Depends(get_settings),
    pool: PlanningPool = Depends(get_planning_pool),
    ledger_lock: anyio.Lock = Depends(get_ledger_lock),
) -> Response:
    """Plan the topology and store the plan.

    With ``plan_id`` naming a stored plan that fits this request (same topology, components
    and instance counts, machines still there), that plan's placement is re-evaluated on
    this request's cluster and profiles and returned under its own id; otherwise a new plan
    is made and stored. The plan records the stored profile set version it was made with
    (``profiles``); a request naming a set without ``version`` uses its newest version, and a
    reused plan keeps the version it was made with.
    """
    started = time.perf_counter()
    came = anyio.current_time()
    try:
        options = limited_options(request.options, settings.time_limit_s)
        planner = Planner.for_request(pool, settings, request.topology, request.cluster, options)
        profiles = await anyio.to_thread.run_sync(resolve_profiles, request.profiles, storage)
        check_profiles(request.topology, request.cluster, profiles.entries)  # before a tenant's derived clusters
        plan = await _reuse(request, profiles, options, storage, planner)
        if request.tenant is not None:
            plan = await _plan_tenant(request, profiles, plan, options, storage, settings, planner, ledger_lock, came)
        elif plan is None:
            fresh = await planner.plan(request.topology, request.cluster, profiles.entries, request.strategy, options)
            plan = await anyio.to_thread.run_sync(storage.save_plan, fresh.model_copy(update={"profiles": profiles.ref}))
    except (PlanningError, ServiceError) as exc:
        log.info("plan topology=%s strategy=%s machines=%d failed elapsed_ms=%.1f: %s", request.topology.name,
                 request.strategy or DEFAULT_STRATEGY, len(request.cluster.machines),
                 (time.perf_counter() - started) * 1000, exc)
        if isinstance(exc, ServiceError) and exc.error == "admission_refused":
            await anyio.to_thread.run_sync(history.record, storage, request.topology.name, "refused",
                                           _sentence(exc.detail))
        raise
    answer = json_answer(plan.model_dump_json(), status_code=201)
    log.info("plan topology=%s strategy=%s machines=%d instances=%d elapsed_ms=%.1f id=%s%s%s",
             plan.topology, plan.strategy, len(request.cluster.machines), len(plan.assignments),
             (time.perf_counter() - started) * 1000, plan.id,
             f" profiles={plan.profiles.name} version={plan.profiles.version}" if plan.profiles else "",
             " (stored placement reused)" if plan.stats.get("reused_plan") else "")
    return answer


async def _reuse(request: PlanRequest, profiles: ResolvedProfiles, options: PlanOptions, storage: Storage,
                 planner: Planner) -> Plan | None:
    """The stored plan ``request.plan_id``, re-evaluated for this request, if it fits (``stored_plan_fits``).

    System components the stored plan does not cover are placed as a fresh plan of this
    request places them; every other instance stays where the stored plan put it. A plan made
    with a stored profile set version is evaluated with that version, not the newest.
    """
    if request.plan_id is None:
        return None
    stored = await anyio.to_thread.run_sync(storage.get_plan, request.plan_id)
    if stored is None or not stored_plan_fits(request, stored):
        log.info("plan_id %s: %s; planning afresh", request.plan_id,
                 "no such plan" if stored is None else "the stored plan does not fit this request")
        return None
    if stored.profiles is not None and stored.profiles != profiles.ref:
        own = await anyio.to_thread.run_sync(storage.get_profile_set, stored.profiles.name, stored.profiles.version)
        if own is None:
            log.info("plan_id %s: its profile set version is gone; planning afresh", request.plan_id)
            return None
        profiles = ResolvedProfiles(own.entries, stored.profiles)
    entries = profiles.entries
    instances = list(stored.assignments)
    uncovered = {c.id for c in request.topology.components if c.id not in stored.instances}
    if uncovered:
        fresh = await planner.plan(request.topology, request.cluster, entries, request.strategy, options)
        instances += [a for a in fresh.assignments if a.component in uncovered]
    evaluation = await planner.evaluate(request.topology, request.cluster, entries, ordered_assignments(request, instances),
                                        options)
    return Plan(**evaluation.model_dump(exclude={"stats"}), id=stored.id, strategy=stored.strategy, profiles=profiles.ref,
                stats={**evaluation.stats, "reused_plan": True, "placed_afresh": sorted(uncovered)},
                contingencies=stored.contingencies)  # the stored plan's, for the placement it keeps


async def _plan_tenant(request: PlanRequest, profiles: ResolvedProfiles, reused: Plan | None, options: PlanOptions,
                       storage: Storage, settings: ServiceSettings, planner: Planner, ledger_lock: anyio.Lock,
                       started: float) -> Plan:
    """A plan on what the other tenants leave, stored and registered in the ledger (409 when not admitted).

    It is planned on one reading of the ledger (``_choose``, its search beside the running
    tenants bounded by the service's budget from ``started``, anyio's clock) and admitted with the
    ledger held (``_admit``): where another topology registered, moved or left meanwhile, its
    placement is admitted only if it still fits beside them, and otherwise it is planned again with
    the ledger held, without the search. So two newcomers planned at once are never both admitted
    on the same room.
    """
    chosen = await _choose(request, profiles, reused, options, storage, settings, planner,
                           SearchBounds.of(settings, started))
    plan = await _admit(chosen, storage, settings, ledger_lock)
    if plan is not None:
        return plan
    log.info("tenant %s: the ledger changed while it was planned and its choice no longer fits; planning it again "
             "with the ledger held", request.topology.name)
    async with ledger_lock:
        chosen = await _choose(request, profiles, reused, options, storage, settings, planner, SearchBounds(held=True))
        return await _register(chosen, storage, settings)


@dataclass(frozen=True)
class _Chosen:
    """A tenant's placement as planned on one reading of the ledger, not yet registered: the registrations it was
    planned beside (``others``), what it evicts and which running tenants it re-places."""

    plan: Plan
    record: TenantRecord
    others: list[TenantRecord]
    capacity: dict[str, float]
    limits: dict[str, float]
    """Each machine of its request's limit (``request_limits``): the capacity it brings to the ledger."""
    evicted: dict[str, Refusal]
    replaced: list[JointReplan]
    profiles: ProfileVersionRef | None


async def _choose(request: PlanRequest, profiles: ResolvedProfiles, reused: Plan | None, options: PlanOptions,
                  storage: Storage, settings: ServiceSettings, planner: Planner, bounds: SearchBounds) -> _Chosen:
    """The tenant's placement on what the others leave, chosen but not registered (409 when not admitted).

    A newcomer (not a reused placement) may have running tenants planned again beside it
    (``joint_replans``, unless ``settings.joint_min_gain`` is None), for each of its placements up to
    ``settings.joint_placements`` (``_settle``): its best placement beside the others as they run is
    not always best once they move (Diamond off large-1 lets Linear have large-1 to itself, and is
    admitted only then). The placement with the highest weighted rate after the re-plans, under
    which the newcomer is admitted, is kept; one that re-places tenants must beat the newcomer's
    own best by ``joint_min_gain``. A running tenant the newcomer leaves without its minimum is
    evicted (unless ``settings.evict_refused`` is off), so the plugin frees its slots, as Storm's RAS
    evicts. The search (placements without some machine types, joint re-plans) stops within
    ``bounds``; what it left out is said in ``stats.tenancy.bounded``, one sentence.
    """
    async def plan_on(cluster, entries):
        return await planner.plan(request.topology, cluster, entries, request.strategy, options)

    worker_load = await anyio.to_thread.run_sync(_base_load, profiles, storage)
    placed = await plan_tenant(request, profiles.entries, reused, plan_on, storage, settings, worker_load, bounds)
    kept = request.model_copy(update={"plan_id": None, "profiles": ProfileRef(name=profiles.ref.name, version=profiles.ref.version)
                                      if profiles.ref is not None else request.profiles})
    joint = reused is None and settings.joint_min_gain is not None and not bounds.held
    choices = [(placed.plan, placed.record), *(placed.alternatives if joint else ())][:max(1, settings.joint_placements)]
    replan = _replanner(storage, settings, planner.pool)
    settled: list[_Settled] = []
    for p, r in choices:
        if settled and bounds.past():
            break  # the budget is spent: the placements settled so far are the choice
        settled.append(await _settle(p, r.model_copy(update={"request": kept}), placed.others, placed.capacity,
                                     request, settings, replan if joint else None, bounds))
    best = base = settled[0]
    for other in settled[1:]:  # one that re-places tenants must gain what a re-placement must (joint_min_gain)
        if other.admitted and other.weighted > best.weighted * (1 + 1e-6) and other.weighted >= base.weighted * (
                1 + ((settings.joint_min_gain or 0.0) if other.replaced else 0.0)):
            best = other
    if len(settled) > 1:
        log.info("tenant %s: %d placements settled with the running tenants planned again; kept the one %s "
                 "(weighted rate %.3f, %d re-placed)", request.topology.name, len(settled),
                 placement_label(best.plan), best.weighted, len(best.replaced))
    plan, record, capacity, evicted, replaced = best.plan, best.record, placed.capacity, best.evicted, best.replaced
    others = [r for r in placed.others if r.topology not in evicted]
    moved = {j.topology: j.record for j in replaced}
    after = [moved.get(r.topology, r) for r in others]
    if replaced or evicted or best is not settled[0]:
        plan = with_tenancy_stats(plan, record, after, allocation_of(after + [record], settings.share_mode, capacity),
                                  settings.share_mode)
    if (bounded := bounds.sentence()) is not None:
        plan = plan.model_copy(update={"stats": {**plan.stats, "tenancy": {**plan.stats["tenancy"], "bounded": bounded}}})
        log.info("tenant %s: %s", record.topology, bounded)
    return _Chosen(plan, record, placed.others, capacity, request_limits(request.cluster, request.options, worker_load),
                   evicted, replaced, profiles.ref)


async def _admit(chosen: _Chosen, storage: Storage, settings: ServiceSettings, ledger_lock: anyio.Lock) -> Plan | None:
    """Register the chosen placement with the ledger held; None when the ledger changed so that it no longer fits.

    Unchanged (heartbeats aside) since it was read, the choice stands. Changed, a placement that
    re-places running tenants is refused (their new plans were made beside registrations that are
    gone); any other is admitted where the newcomer is admitted beside the registrations now, with
    its evictions and share computed again beside them.
    """
    name = chosen.record.topology
    async with ledger_lock:
        now = await anyio.to_thread.run_sync(current_tenants, storage, settings, time.time())
        others = [r for r in now if r.topology != name]
        if not any(r.topology == name for r in now):  # it arrives now, after those registered while it was planned
            chosen = replace(chosen, record=chosen.record.model_copy(update={"registered_at": time.time()}))
        if ledger_version(others) != ledger_version(chosen.others):
            if chosen.replaced:
                return None
            mode = settings.share_mode
            capacity = {**capacities(others), **chosen.limits}
            evicted = newly_refused(others, others + [chosen.record], capacity, mode) if settings.evict_refused else {}
            staying = [r for r in others if r.topology not in evicted]
            allocation = allocation_of(staying + [chosen.record], mode, capacity)
            if name not in allocation.rates:
                return None
            log.info("tenant %s: the ledger changed while it was planned; admitted beside the %d tenants now there, "
                     "its share computed again", name, len(staying))
            chosen = replace(chosen, plan=with_tenancy_stats(chosen.plan, chosen.record, staying, allocation, mode),
                             others=staying, capacity=capacity, evicted=evicted)
        return await _register(chosen, storage, settings)


async def _register(chosen: _Chosen, storage: Storage, settings: ServiceSettings) -> Plan:
    """Store and register the chosen placement, the re-placed tenants' plans (bound, so the plugin re-places them
    drained) and the evictions; the caller holds the ledger."""
    plan, record = chosen.plan, chosen.record
    summaries = []
    for j in chosen.replaced:
        stored = await anyio.to_thread.run_sync(storage.save_plan, j.plan)
        assert stored.id is not None
        await anyio.to_thread.run_sync(storage.put_tenant, j.record.model_copy(update={"plan_id": stored.id}))
        reason = (f"planned again beside {record.topology}: rate {j.rate_before:.2f} -> {j.rate_after:.2f} tuples/s, "
                  f"tenants' weighted rate {j.weighted_before:.2f} -> {j.weighted_after:.2f}")
        await anyio.to_thread.run_sync(storage.bind, j.topology, stored.id, reason)
        summaries.append({**j.summary(), "plan_id": stored.id})
        log.info("tenant %s: plan %s bound (%s); the plugin re-places it", j.topology, stored.id, reason)
    for name, refusal in chosen.evicted.items():
        await anyio.to_thread.run_sync(storage.delete_tenant, name)
        # its binding would place it again without admission (seen live: evicted, then back by its bound plan a round later)
        await anyio.to_thread.run_sync(storage.unbind, name)
        log.info("tenant %s evicted beside %s: %s", name, record.topology, refusal.reason)
    tenancy = {**plan.stats["tenancy"]}
    if summaries:
        tenancy["replaced"] = summaries
    if chosen.evicted:
        tenancy["evicted"] = [{"topology": name, "reason": f.reason, "fits_rate": round(f.fits_rate, 3)}
                              for name, f in sorted(chosen.evicted.items())]
    plan = plan.model_copy(update={"stats": {**plan.stats, "tenancy": tenancy}})
    plan = await anyio.to_thread.run_sync(storage.save_plan, plan.model_copy(update={"profiles": plan.profiles or chosen.profiles}))
    await anyio.to_thread.run_sync(storage.put_tenant, record.model_copy(update={"plan_id": plan.id}))
    log.info("tenant %s registered: plan %s, rate %s tuples/s, priority %d", record.topology, plan.id,
             plan.stats["tenancy"]["rate"], record.priority)
    await anyio.to_thread.run_sync(history.record_each, storage, _tenancy_events(plan, record, chosen))
    return plan


def _tenancy_events(plan: Plan, record: TenantRecord, chosen: _Chosen) -> list[tuple[str, EventKind, str]]:
    """A newcomer's admission, with the running tenants it re-placed and those it evicted, as each one's event."""
    tenancy = plan.stats["tenancy"]
    beside = f" beside {', '.join(tenancy['others'])}" if tenancy.get("others") else ""
    events: list[tuple[str, EventKind, str]] = [(record.topology, "admitted", (
        f"Admitted{beside} on plan {plan.id}: its share is {tenancy['rate']:.2f} tuples/s (priority {record.priority}, "
        f"minimum {record.min_rate:g} tuples/s)."))]
    for r in tenancy.get("replaced", []):
        events.append((r["topology"], "re-planned", (
            f"Planned again beside {record.topology} on plan {r['plan_id']} (bound; the plugin re-places it): rate "
            f"{r['rate_before']:.2f} -> {r['rate_after']:.2f} tuples/s.")))
    for name, refusal in sorted(chosen.evicted.items()):
        events.append((name, "evicted", f"Evicted beside {record.topology}: {refusal.reason.rstrip('.')}."))
    return events


def _sentence(text: str) -> str:
    """``text`` as a sentence: a capital first, a full stop last."""
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:] + "." if text else text


NEWCOMER_MIN_GAIN = 1e-6
"""The newcomer planned again once the others moved: it is not placed yet, so any gain is worth taking."""


@dataclass(frozen=True)
class _Settled:
    """One placement of a newcomer with what follows from it: the tenants it evicts, the running ones planned
    again beside it, the tenants' weighted rate after both, and whether the newcomer is admitted then."""

    plan: Plan
    record: TenantRecord
    evicted: dict[str, Refusal]
    replaced: list[JointReplan]
    weighted: float
    admitted: bool


async def _settle(plan: Plan, record: TenantRecord, others: list[TenantRecord], capacity: dict[str, float],
                  request: PlanRequest, settings: ServiceSettings, replan: Replanner | None,
                  bounds: SearchBounds) -> _Settled:
    """The newcomer on ``plan``: evictions, then (with ``replan``) the running tenants planned again beside it,
    within ``bounds``."""
    evicted = newly_refused(others, others + [record], capacity, settings.share_mode) if settings.evict_refused else {}
    staying = [r for r in others if r.topology not in evicted]
    replaced: list[JointReplan] = []
    if replan is not None:
        assert settings.joint_min_gain is not None
        replaced = await joint_replans(staying + [record], record.topology, capacity, settings.share_mode,
                                       settings.joint_min_gain, replan, request.cluster, bounds=bounds)
    moved = {j.topology: j.record for j in replaced}
    staying = [moved.get(r.topology, r) for r in staying]
    if replan is not None and replaced:  # the newcomer was planned on the room they left before they moved
        itself = await joint_replans(staying + [record], "", capacity, settings.share_mode, NEWCOMER_MIN_GAIN,
                                     replan, request.cluster, only=record.topology, bounds=bounds)
        if itself:
            plan = itself[0].plan.model_copy(update={"stats": {**itself[0].plan.stats, **{
                k: plan.stats[k] for k in ("left_out_types",) if k in plan.stats}, "planned_again": True}})
            record = itself[0].record
    after = staying + [record]
    priorities = {r.topology: r.priority for r in after}
    allocation = allocation_of(after, settings.share_mode, capacity)
    return _Settled(plan, record, evicted, replaced, weighted_rate(allocation, priorities),
                    record.topology in allocation.rates)


def _replanner(storage: Storage, settings: ServiceSettings, pool: PlanningPool) -> Replanner:
    """Plans a registered tenant again from its stored request, on the room it is given (``joint_replans``).

    A tenant's profile set and base load are read once per replanner (one newcomer's planning), not per plan.
    """
    resolved: dict[str, tuple[ResolvedProfiles, dict[str, float]]] = {}

    async def profiles_of(record: TenantRecord, request: PlanRequest) -> tuple[ResolvedProfiles, dict[str, float]]:
        if record.topology not in resolved:
            profiles = await anyio.to_thread.run_sync(resolve_profiles, request.profiles, storage)
            resolved[record.topology] = (profiles, await anyio.to_thread.run_sync(_base_load, profiles, storage))
        return resolved[record.topology]

    async def replan(record: TenantRecord, used, leave_out, held) -> tuple[Plan, TenantRecord] | None:
        assert record.request is not None
        request = record.request.model_copy(update={"tenant": TenantSpec(
            priority=record.priority, min_rate=record.min_rate, target_rate=record.target_rate)})
        try:
            profiles, worker_load = await profiles_of(record, request)
            options = limited_options(request.options, settings.time_limit_s)
            planner = Planner.for_request(pool, settings, request.topology, request.cluster, options)

            async def plan_on(cluster, entries):
                return await planner.plan(request.topology, cluster, entries, request.strategy, options)

            plan = await plan_with_room(request, profiles.entries, used, plan_on, leave_out, held)
            if plan is None:
                return None
            registration = await anyio.to_thread.run_sync(registration_for, request, profiles.entries, plan, worker_load)
        except (PlanningError, ServiceError) as exc:
            log.info("tenant %s cannot be planned again%s: %s", record.topology,
                     f" without {', '.join(sorted(leave_out))}" if leave_out else "", exc)
            return None
        plan = plan.model_copy(update={"profiles": profiles.ref})
        return plan, TenantRecord(**registration.model_dump(), topology=record.topology,
                                  registered_at=record.registered_at, heartbeat_at=record.heartbeat_at, request=request)

    return replan


def _base_load(profiles: ResolvedProfiles, storage: Storage) -> dict[str, float]:
    """The stored set's machine base load (what each topology's worker costs a machine); none for inline entries."""
    if profiles.ref is None:
        return {}
    stored = storage.get_profile_set(profiles.ref.name, profiles.ref.version)
    return machine_base_load(stored) if stored is not None else {}


@router.get("/{plan_id}", response_model=Plan, responses={404: {"model": ErrorBody, "description": "No plan has this id."}})
def get_plan(plan_id: str, storage: Storage = Depends(get_storage)) -> Response:
    body = storage.plan_json(plan_id)
    log.info("read plan id=%s%s", plan_id, "" if body is not None else " failed: no such plan")
    if body is None:
        raise not_found(f"plan '{plan_id}' does not exist")
    return json_answer(body)


@router.delete("/{plan_id}", status_code=204, responses={404: {"model": ErrorBody, "description": "No plan has this id."}})
def delete_plan(plan_id: str, storage: Storage = Depends(get_storage)) -> Response:
    """Delete the stored plan (a topology submitted with its id is then planned afresh)."""
    if not storage.delete_plan(plan_id):
        raise not_found(f"plan '{plan_id}' does not exist")
    log.info("plan %s deleted", plan_id)
    return Response(status_code=204)


def json_answer(body: str, status_code: int = 200) -> Response:
    """A plan's JSON as the answer, encoded once (FastAPI would re-validate and re-encode a large plan)."""
    return Response(content=body, status_code=status_code, media_type="application/json")
