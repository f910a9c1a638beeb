"""/v1/capacity: the cheapest machines that sustain the topologies' rates, the next to add, each loss (planner.capacity)."""
from __future__ import annotations

import logging
import time

import anyio
from fastapi import APIRouter, Depends

from planner.capacity import capacity_json, combined_topology, probe_cluster
from planner.capacity_model import CapacityAnswer, CapacityRequest
from planner.errors import PlanningError
from planner.service.deps import get_planning_pool, get_settings, get_storage
from planner.service.errors import ErrorBody, ServiceError
from planner.service.json_body import StrictJSONRoute
from planner.service.planning import Planner, limited_options, resolve_profiles
from planner.service.settings import ServiceSettings
from planner.service.workers import PlanningPool
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/capacity", tags=["capacity"], route_class=StrictJSONRoute)


@router.post("", response_model=CapacityAnswer,
             responses={404: {"model": ErrorBody, "description": "The named profile set does not exist."}})
async def plan_capacity(
    request: CapacityRequest,
    storage: Storage = Depends(get_storage),
    settings: ServiceSettings = Depends(get_settings),
    pool: PlanningPool = Depends(get_planning_pool),
) -> CapacityAnswer:
    """What to buy so that every topology sustains its rate, which machine to add next, and what each loss costs.

    Nothing is stored. The search stops at the service's time limit: the best set verified by then is answered
    with ``purchase.proven`` false; where none was verified yet, 422 ``time_limit``.
    """
    started = time.perf_counter()
    names = ",".join(t.topology.name for t in request.topologies)
    try:
        options = limited_options(request.options, settings.time_limit_s)
        request = request.model_copy(update={"options": options})
        owned = request.owned or probe_cluster(request.machine_types).machines
        planner = Planner.for_request(pool, settings, combined_topology(request.topologies),
                                      probe_cluster(request.machine_types).model_copy(update={"machines": owned}), options)
        profiles = await anyio.to_thread.run_sync(resolve_profiles, request.profiles, storage)
        # the search stops itself at the limit and answers what it found; the pool's kill is the backstop
        body = await pool.run(capacity_json, request, profiles.entries, small=planner.small, limit_s=planner.limit_s,
                              queue_wait_s=planner.queue_wait_s)
    except (PlanningError, ServiceError) as exc:
        log.info("capacity topologies=%s types=%d owned=%d failed elapsed_ms=%.1f: %s", names,
                 len(request.machine_types), len(request.owned), (time.perf_counter() - started) * 1000, exc)
        raise
    answer = CapacityAnswer.model_validate_json(body)
    log.info("capacity topologies=%s types=%d owned=%d buy=%s cost=%g proven=%s elapsed_ms=%.1f", names,
             len(request.machine_types), len(request.owned), answer.purchase.buy, answer.purchase.cost,
             answer.purchase.proven, (time.perf_counter() - started) * 1000)
    return answer
