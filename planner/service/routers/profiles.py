"""/v1/profiles: stored profile sets, by name, that plan requests can refer to."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path
from pydantic import BaseModel

from planner.errors import PlanningError
from planner.model import ProfileSet
from planner.profiles import machine_base_load
from planner.service import examples
from planner.service.deps import get_storage
from planner.service.errors import ErrorBody, ServiceError, not_found
from planner.service.json_body import StrictJSONRoute
from planner.storage import Storage

router = APIRouter(prefix="/v1/profiles", tags=["profiles"], route_class=StrictJSONRoute)

ProfileName = Annotated[str, Path(min_length=1, max_length=200, description="The profile set's name.")]


class ProfileList(BaseModel):
    profiles: list[str]


@router.put("/{name}", response_model=ProfileSet, response_model_by_alias=True)
def put_profile_set(name: ProfileName, profile_set: Annotated[ProfileSet, Body(openapi_examples={"micro": {"summary": "Profiles of three kinds of work on two machine types", "value": examples.PROFILE_SET}})], storage: Storage = Depends(get_storage)) -> ProfileSet:
    """Create or replace the profile set ``name``; the body's ``name`` must be the same."""
    if profile_set.name != name:
        raise ServiceError(422, "invalid_request",
                           f"the body names profile set '{profile_set.name}' but the path names '{name}': they must be the same")
    try:
        machine_base_load(profile_set)  # the Nimbus plugin plans on 100 - base load: refuse a bad one here, not there
    except PlanningError as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None
    return storage.put_profile_set(profile_set)


@router.get("/{name}", response_model=ProfileSet, responses={404: {"model": ErrorBody}})
def get_profile_set(name: ProfileName, storage: Storage = Depends(get_storage)) -> ProfileSet:
    stored = storage.get_profile_set(name)
    if stored is None:
        raise not_found(f"profile set '{name}' does not exist")
    return stored


@router.get("", response_model=ProfileList)
def list_profile_sets(storage: Storage = Depends(get_storage)) -> ProfileList:
    return ProfileList(profiles=storage.profile_set_names())
