"""/v1/tenants and /v1/ledger: the topologies sharing the cluster, their shares and what is left."""
from __future__ import annotations

import logging
import time
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Response

from planner.ledger import (
    AliveAnswer,
    AliveTopologies,
    Ledger,
    PriorityAnswer,
    PriorityChange,
    TenantRecord,
    TenantRegistration,
    allocation_of,
    evictions,
    ledger_of,
)
from planner.model import Name
from planner.service.deps import get_ledger_lock, get_settings, get_storage
from planner.service import history
from planner.service.errors import ErrorBody, not_found
from planner.service.json_body import StrictJSONRoute
from planner.service.settings import ServiceSettings
from planner.service.tenants import current_tenants
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

router = APIRouter(tags=["tenants"], route_class=StrictJSONRoute)
NO_TENANT: dict[int | str, dict[str, Any]] = {404: {"model": ErrorBody, "description": "No topology of this name is registered."}}


def _ledger(storage: Storage, settings: ServiceSettings) -> Ledger:
    now = time.time()
    return ledger_of(current_tenants(storage, settings, now), settings.share_mode, settings.tenant_ttl_s, now)


@router.get("/v1/ledger", response_model=Ledger)
def get_ledger(storage: Storage = Depends(get_storage), settings: ServiceSettings = Depends(get_settings)) -> Ledger:
    """Per machine: its capacity, each tenant's predicted load at its share, what is free; per tenant: its share or refusal."""
    return _ledger(storage, settings)


@router.put("/v1/tenants/{topology}", response_model=Ledger)
async def put_tenant(topology: Name, registration: TenantRegistration, storage: Storage = Depends(get_storage),
                     settings: ServiceSettings = Depends(get_settings),
                     ledger_lock: anyio.Lock = Depends(get_ledger_lock)) -> Ledger:
    """Register a placed topology with its load on every machine (a plan request with ``tenant`` does this itself)."""
    def register() -> Ledger:
        now = time.time()
        previous = next((r for r in storage.tenants() if r.topology == topology), None)
        record = TenantRecord(**registration.model_dump(), topology=topology,
                              registered_at=previous.registered_at if previous else now, heartbeat_at=now)
        storage.put_tenant(record)
        log.info("tenant %s registered by PUT (plan %s, priority %d)", topology, record.plan_id, record.priority)
        ledger = _ledger(storage, settings)
        mine = next((t for t in ledger.tenants if t.topology == topology), None)
        if mine is not None and mine.status == "admitted":
            history.record(storage, topology, "admitted", f"Registered with plan {record.plan_id} (PUT): its share is "
                           f"{_rate(mine.rate)} (priority {record.priority}, minimum {record.min_rate:g} tuples/s).")
        elif mine is not None:
            history.record(storage, topology, "refused", f"Registered with plan {record.plan_id} (PUT) but refused: "
                           f"{mine.reason or 'its minimum does not fit'}.")
        return ledger

    async with ledger_lock:  # not between a newcomer's reading of the ledger and its registration
        return await anyio.to_thread.run_sync(register)


@router.delete("/v1/tenants/{topology}", status_code=204, responses=NO_TENANT)
def delete_tenant(topology: Name, storage: Storage = Depends(get_storage)) -> Response:
    """Release a topology's share (the plugin's heartbeat does this for a killed topology)."""
    if not storage.delete_tenant(topology):
        raise not_found(f"topology '{topology}' is not registered in the ledger")
    log.info("tenant %s released", topology)
    history.record(storage, topology, "released", "Released from the ledger (DELETE): its share is free for the others.")
    return Response(status_code=204)


@router.post("/v1/tenants/alive", response_model=AliveAnswer)
def alive(body: AliveTopologies, storage: Storage = Depends(get_storage),
          settings: ServiceSettings = Depends(get_settings)) -> AliveAnswer:
    """The topologies the cluster runs now: their registrations are renewed, every other one is released; the answer
    names those the ledger refuses, so the plugin evicts them without waiting for another topology's plan."""
    now = time.time()
    renewed, released = storage.alive_tenants(body.topologies, now)
    if released:
        log.info("tenants released (no longer running): %s", ", ".join(released))
    evicted = evictions(current_tenants(storage, settings, now), settings.share_mode, renewed) \
        if settings.evict_refused and renewed else []
    for refusal in evicted:  # its next plan goes through admission, not through the binding it ran by
        storage.unbind(refusal.topology)
    history.record_each(storage, [(name, "released", "Released from the ledger: the plugin's heartbeat no longer lists "
                                   "it as running.") for name in released])
    history.record_each(storage, [(e.topology, "evicted", f"Evicted: the ledger refuses it beside the tenants running now "
                                   f"({e.reason}); the plugin frees its slots.") for e in evicted])
    return AliveAnswer(renewed=renewed, released=released, evicted=evicted)


@router.put("/v1/tenants/{topology}/priority", response_model=PriorityAnswer, responses=NO_TENANT)
async def change_priority(topology: Name, change: PriorityChange, storage: Storage = Depends(get_storage),
                          settings: ServiceSettings = Depends(get_settings),
                          ledger_lock: anyio.Lock = Depends(get_ledger_lock)) -> PriorityAnswer:
    """Change a tenant's priority; the answer names the topologies whose share changed (re-place those)."""
    def change_it() -> PriorityAnswer:
        now = time.time()
        records = current_tenants(storage, settings, now)
        record = next((r for r in records if r.topology == topology), None)
        if record is None:
            raise not_found(f"topology '{topology}' is not registered in the ledger")
        before = allocation_of(records, settings.share_mode)
        changed = record.model_copy(update={"priority": change.priority})
        storage.put_tenant(changed)
        after_records = [changed if r.topology == topology else r for r in records]
        after = allocation_of(after_records, settings.share_mode)
        affected = sorted(r.topology for r in records
                          if abs(before.rates.get(r.topology, -1.0) - after.rates.get(r.topology, -1.0)) > 1e-6)
        evicted = evictions(after_records, settings.share_mode, set(before.rates)) if settings.evict_refused else []
        log.info("tenant %s priority %d -> %d; shares changed: %s%s", topology, record.priority, change.priority,
                 ", ".join(affected) or "none",
                 f"; refused now, evicted at the plugin's next heartbeat: {', '.join(e.topology for e in evicted)}"
                 if evicted else "")
        others = [t for t in affected if t != topology]
        history.record(storage, topology, "priority-changed", (
            f"Priority {record.priority} -> {change.priority}; "
            + (f"the shares of {', '.join(others)} changed too" if others else "no other share changed")
            + (f"; refused now, evicted at the plugin's next heartbeat: {', '.join(e.topology for e in evicted)}"
               if evicted else "") + "."))
        return PriorityAnswer(topology=topology, priority=change.priority, affected=affected, evicted=evicted,
                              ledger=ledger_of(after_records, settings.share_mode, settings.tenant_ttl_s, now))

    async with ledger_lock:  # a newcomer's admission would otherwise write the record this read over
        return await anyio.to_thread.run_sync(change_it)


def _rate(rate: float | None) -> str:
    return "unbounded (no machine's load grows with its rate)" if rate is None else f"{rate:.2f} tuples/s"
