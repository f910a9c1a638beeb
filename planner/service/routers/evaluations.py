"""/v1/evaluations: the simulator's figures for a placement the caller gives; nothing is stored."""
from __future__ import annotations

import logging
import time
from typing import Annotated

import anyio
from fastapi import APIRouter, Body, Depends

from planner.errors import PlanningError
from planner.model import Evaluation, EvaluationRequest
from planner.service import examples
from planner.service.deps import get_planning_pool, get_settings, get_storage
from planner.service.errors import ErrorBody, ServiceError
from planner.service.json_body import StrictJSONRoute
from planner.service.planning import Planner, limited_options, resolve_profiles
from planner.service.settings import ServiceSettings
from planner.service.workers import PlanningPool
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/evaluations", tags=["evaluations"], route_class=StrictJSONRoute)


@router.post("", response_model=Evaluation,
             responses={404: {"model": ErrorBody, "description": "The named profile set does not exist."}})
async def evaluate(
    request: Annotated[EvaluationRequest, Body(openapi_examples={"linear": {"summary": "A given placement of Linear", "value": examples.EVALUATION_REQUEST}})],
    storage: Storage = Depends(get_storage),
    settings: ServiceSettings = Depends(get_settings),
    pool: PlanningPool = Depends(get_planning_pool),
) -> Evaluation:
    started = time.perf_counter()
    try:
        options = limited_options(request.options, settings.time_limit_s)
        planner = Planner.for_request(pool, settings, request.topology, request.cluster, options)
        profiles = await anyio.to_thread.run_sync(resolve_profiles, request.profiles, storage)
        evaluation = await planner.evaluate(request.topology, request.cluster, profiles.entries, request.assignments,
                                            options, request.shares)
    except (PlanningError, ServiceError) as exc:
        log.info("evaluation topology=%s machines=%d instances=%d failed elapsed_ms=%.1f: %s", request.topology.name,
                 len(request.cluster.machines), len(request.assignments), (time.perf_counter() - started) * 1000, exc)
        raise
    log.info("evaluation topology=%s machines=%d instances=%d elapsed_ms=%.1f", evaluation.topology,
             len(request.cluster.machines), len(request.assignments), (time.perf_counter() - started) * 1000)
    return evaluation
