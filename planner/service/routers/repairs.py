"""/v1/repairs: a placement after a machine is lost, keeping every instance that still runs (planner.repair).

A topology planned to survive a loss keeps that through its repair: where the request names no ``survive_loss``,
the rule comes from the plan the topology ran by before the loss, as the service stored it (:func:`plan_ran_by`),
so the repair plan stores contingencies again. The service, not the plugin, finds it: it holds the stored plans and
bindings, while the plugin knows only its topology's conf (a topology placed by a stored or bound plan made with the
option has none there) and forgets a plan's contingencies once it applied one.
"""
from __future__ import annotations

import logging
import time

import anyio
from fastapi import APIRouter, Depends, Response

from planner.errors import PlanningError
from planner.model import Plan
from planner.repair import RepairRequest, repair_json, repair_options
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
    before = await anyio.to_thread.run_sync(_record_loss, storage, request)
    try:
        options, rule_from = repair_options(request.options, before)
        options = limited_options(options, settings.time_limit_s)
        planner = Planner.for_request(pool, settings, request.topology, request.cluster, options)
        profiles = await anyio.to_thread.run_sync(resolve_profiles, request.profiles, storage)
        body = await pool.run(repair_json, request.topology, request.cluster, profiles.entries, request.keep, options,
                              rule_from, small=planner.small, limit_s=planner.limit_s,
                              queue_wait_s=planner.queue_wait_s)
        plan = Plan.model_validate_json(body).model_copy(update={"profiles": profiles.ref})
        plan = await anyio.to_thread.run_sync(storage.save_plan, plan)
    except (PlanningError, ServiceError) as exc:
        log.info("repair topology=%s machines=%d kept=%d failed elapsed_ms=%.1f: %s", request.topology.name,
                 len(request.cluster.machines), len(request.keep), (time.perf_counter() - started) * 1000, exc)
        raise
    log.info("repair topology=%s machines=%d kept=%d placed=%s contingencies=%s elapsed_ms=%.1f id=%s", plan.topology,
             len(request.cluster.machines), len(request.keep), plan.stats.get("placed"),
             "none" if plan.contingencies is None else f"{len(plan.contingencies)} (survive_loss from {rule_from})",
             (time.perf_counter() - started) * 1000, plan.id)
    await anyio.to_thread.run_sync(record, storage, request.topology.name, "repaired", repair_sentence(plan))
    return json_answer(plan.model_dump_json(), status_code=201)


def _record_loss(storage: Storage, request: RepairRequest) -> Plan | None:
    """The loss the repair answers, with the machines where a stored plan tells them (before planning: a repair that
    fails still leaves the loss in the topology's events); returns the plan it ran by (:func:`plan_ran_by`)."""
    try:
        before = plan_before_loss(storage, request)
    except Exception as exc:  # the plans cannot be read: the loss is still worth its line
        log.warning("the plan topology %s ran before its loss cannot be read: %s", request.topology.name, exc)
        before = None
    record(storage, request.topology.name, "machine-lost", loss_sentence(request, before))
    return plan_ran_by(storage, request.topology.name, before)


def plan_ran_by(storage: Storage, topology: str, before: Plan | None) -> Plan | None:
    """The plan the topology ran by before the loss: ``before`` (the stored plan that placed the surviving instances
    where they run), else the plan bound to it (after a contingency the plugin applied, the plan whose contingency
    runs; after a repair, the repair); None where neither is stored. Never raises: a repair does not wait on it."""
    if before is not None:
        return before
    try:
        binding = storage.binding(topology)
        return storage.get_plan(binding.plan_id) if binding is not None else None
    except Exception as exc:  # the repair goes on without the plan's options
        log.warning("the plan bound to topology %s cannot be read for its options: %s", topology, exc)
        return None
