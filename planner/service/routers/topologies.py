"""/v1/topologies/{name}/events: what happened to a topology and when (planner.events), the newest first."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from planner.events import DEFAULT_LIMIT, KEPT_PER_TOPOLOGY, TopologyEvents
from planner.model import Name
from planner.service.deps import get_storage
from planner.service.json_body import StrictJSONRoute
from planner.storage import Storage

router = APIRouter(prefix="/v1/topologies", tags=["topologies"], route_class=StrictJSONRoute)


@router.get("/{topology}/events", response_model=TopologyEvents)
def events(topology: Name, limit: int = Query(DEFAULT_LIMIT, ge=1, le=KEPT_PER_TOPOLOGY,
                                               description="How many of the newest events to answer."),
           storage: Storage = Depends(get_storage)) -> TopologyEvents:
    """The topology's events (bound, repaired, machine-lost, admitted, evicted, ...), the newest first.

    A topology the service never heard of has none: an empty list, not 404, since a running topology
    placed only by its conf's plan has no events until something happens to it.
    """
    return TopologyEvents(topology=topology, events=storage.events(topology, limit))
