"""/v1/repairs: a placement after a machine is lost, keeping every instance that still runs (planner.repair)."""
from __future__ import annotations

import logging
import time

import anyio
from fastapi import APIRouter, Depends, Response

from planner.errors import PlanningError
from planner.model import Plan
from planner.repair import RepairRequest, repair_json
from planner.service.deps import get_planning_pool, get_settings, get_storage
from planner.service.errors import ErrorBody, ServiceError
from planner.service.history import loss_sentence, plan_before_loss, record, repair_sentence
from planner.service.json_body import StrictJSONRoute
from planner.service.planning import Planner, limited_options, resolve_profiles
from planner.service.routers.plans import json_answer
from planner.service.settings import ServiceSettings
from planner.service.workers import PlanningPool
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/repairs", tags=["plans"], route_class=StrictJSONRoute)


@router.post("", status_code=201, response_model=Plan,
             responses={404: {"model": ErrorBody, "description": "The named profile set does not exist."}})
async def create_repair(
    request: RepairRequest,
    storage: Storage = Depends(get_storage),
    settings: ServiceSettings = Depends(get_settings),
    pool: PlanningPool = Depends(get_planning_pool),
) -> Response:
    """Keep the instances in ``keep`` where they run, place the others for the highest input rate, store the plan.

    Every component needs its instance count (``parallelism``); the plan's strategy is ``repair``
    and its ``stats`` say how many instances were kept and placed and how (exhaustive, greedy).
    """
    started = time.perf_counter()
    await anyio.to_thread.run_sync(_record_loss, storage, request)
    try:
        options = limited_options(request.options, settings.time_limit_s)
        planner = Planner.for_request(pool, settings, request.topology, request.cluster, options)
        profiles = await anyio.to_thread.run_sync(resolve_profiles, request.profiles, storage)
        body = await pool.run(repair_json, request.topology, request.cluster, profiles.entries, request.keep, options,
                              small=planner.small, limit_s=planner.limit_s, queue_wait_s=planner.queue_wait_s)
        plan = Plan.model_validate_json(body).model_copy(update={"profiles": profiles.ref})
        plan = await anyio.to_thread.run_sync(storage.save_plan, plan)
    except (PlanningError, ServiceError) as exc:
        log.info("repair topology=%s machines=%d kept=%d failed elapsed_ms=%.1f: %s", request.topology.name,
                 len(request.cluster.machines), len(request.keep), (time.perf_counter() - started) * 1000, exc)
        raise
    log.info("repair topology=%s machines=%d kept=%d placed=%s elapsed_ms=%.1f id=%s", plan.topology,
             len(request.cluster.machines), len(request.keep), plan.stats.get("placed"),
             (time.perf_counter() - started) * 1000, plan.id)
    await anyio.to_thread.run_sync(record, storage, request.topology.name, "repaired", repair_sentence(plan))
    return json_answer(plan.model_dump_json(), status_code=201)


def _record_loss(storage: Storage, request: RepairRequest) -> None:
    """The loss the repair answers, with the machines where a stored plan tells them (before planning: a repair that
    fails still leaves the loss in the topology's events)."""
    try:
        before = plan_before_loss(storage, request)
    except Exception as exc:  # the plans cannot be read: the loss is still worth its line
        log.warning("the plan topology %s ran before its loss cannot be read: %s", request.topology.name, exc)
        before = None
    record(storage, request.topology.name, "machine-lost", loss_sentence(request, before))
