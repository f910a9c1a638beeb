"""/v1/assignments/{topology}: the plan a running topology is placed by (its binding).

Nimbus's hetsched plugin reads the binding whenever the topology needs placing (after a
rebalance, a lost machine, ...) before the ``hetsched.plan.id`` of the topology's conf, so
re-planning a running topology is: store a plan, bind it, rebalance (``hetsched replan``).
The plugin also binds what it did without asking: the repair it placed, and the plan whose
contingency it applied for a lost machine; each bind's events come from its reason
(``planner.service.history.binding_events``).
"""
from __future__ import annotations

import logging

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from planner.model import Name
from planner.service.deps import get_storage
from planner.service.errors import ErrorBody, not_found
from planner.service.history import binding_events, record, record_each
from planner.service.json_body import StrictJSONRoute
from planner.storage import Binding, Storage

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/assignments", tags=["assignments"], route_class=StrictJSONRoute)


class BindingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plan_id: Name = Field(description="A stored plan (POST /v1/plans, POST /v1/repairs).")
    reason: str = Field(default="", max_length=1000, description="Why it was bound, shown to operators.")


class TopologyBinding(BindingRequest):
    topology: Name = Field(description="The topology's name (topology.name), not its Storm id.")
    created_at: str = Field(description="When it was bound, ISO 8601 UTC.")


def _answer(binding: Binding) -> TopologyBinding:
    return TopologyBinding(topology=binding.topology, plan_id=binding.plan_id, reason=binding.reason,
                           created_at=binding.created_at_iso)


@router.put("/{topology}", response_model=TopologyBinding,
            responses={404: {"model": ErrorBody, "description": "No plan has this id."}})
def bind(topology: str, body: BindingRequest, storage: Storage = Depends(get_storage)) -> TopologyBinding:
    """Bind a stored plan to the topology: the plugin places it by this plan the next time it needs placing."""
    binding = storage.bind(topology, body.plan_id, body.reason)
    if binding is None:
        raise not_found(f"plan '{body.plan_id}' does not exist")
    log.info("topology %s bound to plan %s (%s)", topology, body.plan_id, body.reason or "no reason given")
    record_each(storage, binding_events(storage, topology, body.plan_id, body.reason))
    return _answer(binding)


@router.get("/{topology}", response_model=TopologyBinding,
            responses={404: {"model": ErrorBody, "description": "No plan is bound to the topology."}})
def get_binding(topology: str, storage: Storage = Depends(get_storage)) -> TopologyBinding:
    binding = storage.binding(topology)
    if binding is None:
        raise not_found(f"no plan is bound to topology '{topology}'")
    return _answer(binding)


@router.delete("/{topology}", status_code=204,
               responses={404: {"model": ErrorBody, "description": "No plan is bound to the topology."}})
def unbind(topology: str, storage: Storage = Depends(get_storage)) -> Response:
    """Drop the binding: the topology is placed by its conf's plan id or a new plan again."""
    binding = storage.binding(topology)
    if not storage.unbind(topology):
        raise not_found(f"no plan is bound to topology '{topology}'")
    log.info("topology %s unbound", topology)
    record(storage, topology, "unbound", f"Plan {binding.plan_id if binding else '?'} unbound: the topology is placed "
           "by its conf's plan, or a new one, at its next placement.")
    return Response(status_code=204)
