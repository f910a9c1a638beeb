"""/v1/profiles: stored profile sets, by name and version, that plan requests can refer to."""
from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path, Response
from pydantic import BaseModel

from planner.errors import PlanningError
from planner.model import ProfileSet, ProfileSetVersions, StoredProfileSet
from planner.profiles import machine_base_load
from planner.service import examples
from planner.service.deps import get_storage
from planner.service.errors import ErrorBody, ServiceError, in_use, not_found
from planner.service.json_body import StrictJSONRoute
from planner.service.planning import unknown_version_sentence
from planner.storage import Storage, VersionInUse

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/profiles", tags=["profiles"], route_class=StrictJSONRoute)

ProfileName = Annotated[str, Path(min_length=1, max_length=200, description="The profile set's name.")]
VersionPath = Annotated[int, Path(ge=1, le=2**62, description="The version's number (1, 2, 3, ...).")]


class ProfileList(BaseModel):
    profiles: list[str]


@router.put("/{name}", response_model=StoredProfileSet, response_model_by_alias=True)
def put_profile_set(name: ProfileName, profile_set: Annotated[ProfileSet, Body(openapi_examples={"micro": {"summary": "Profiles of three kinds of work on two machine types", "value": examples.PROFILE_SET}})], storage: Storage = Depends(get_storage)) -> StoredProfileSet:
    """Store the body as the next version of profile set ``name``; the body's ``name`` must be the same.

    A body whose entries and source equal the newest version's adds no version: the answer
    is that version with ``created: false``. A ``version`` in the body is ignored.
    """
    if profile_set.name != name:
        raise ServiceError(422, "invalid_request",
                           f"the body names profile set '{profile_set.name}' but the path names '{name}': they must be the same")
    try:
        machine_base_load(profile_set)  # the Nimbus plugin plans on 100 - base load: refuse a bad one here, not there
    except PlanningError as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None
    result = storage.put_profile_set(profile_set.model_copy(update={"version": None}))
    stored = result.profile_set
    log.info("profile set %s version %d %s (%d entries)", stored.name, stored.version,
             "stored" if result.created else "unchanged", len(stored.entries))
    return StoredProfileSet(**stored.model_dump(), created=result.created)


@router.get("/{name}", response_model=ProfileSet, response_model_by_alias=True, responses={404: {"model": ErrorBody}})
def get_profile_set(name: ProfileName, storage: Storage = Depends(get_storage)) -> ProfileSet:
    """The newest version of profile set ``name`` (what a plan request naming it without a version uses)."""
    stored = storage.get_profile_set(name)
    if stored is None:
        raise not_found(f"profile set '{name}' does not exist")
    return stored


@router.get("/{name}/versions", response_model=ProfileSetVersions, responses={404: {"model": ErrorBody}})
def list_versions(name: ProfileName, storage: Storage = Depends(get_storage)) -> ProfileSetVersions:
    """Every stored version of profile set ``name``, oldest first."""
    versions = storage.profile_set_versions(name)
    if not versions:
        raise not_found(f"profile set '{name}' does not exist")
    return ProfileSetVersions(name=name, versions=versions)


@router.get("/{name}/versions/{version}", response_model=ProfileSet, response_model_by_alias=True,
            responses={404: {"model": ErrorBody}})
def get_version(name: ProfileName, version: VersionPath, storage: Storage = Depends(get_storage)) -> ProfileSet:
    stored = storage.get_profile_set(name, version)
    if stored is None:
        raise _missing(name, version, storage)
    return stored


@router.delete("/{name}/versions/{version}", status_code=204, responses={
    404: {"model": ErrorBody, "description": "No such profile set or version."},
    409: {"model": ErrorBody, "description": "Stored plans were made with this version: delete them first."},
})
def delete_version(name: ProfileName, version: VersionPath, storage: Storage = Depends(get_storage)) -> Response:
    """Delete one version; deleting the newest makes the one before it the newest."""
    try:
        deleted = storage.delete_profile_version(name, version)
    except VersionInUse as exc:
        raise in_use(str(exc)) from None
    if not deleted:
        raise _missing(name, version, storage)
    log.info("profile set %s version %d deleted", name, version)
    return Response(status_code=204)


def _missing(name: str, version: int, storage: Storage) -> ServiceError:
    if storage.get_profile_set(name) is None:
        return not_found(f"profile set '{name}' does not exist")
    return not_found(unknown_version_sentence(name, version, storage))


@router.get("", response_model=ProfileList)
def list_profile_sets(storage: Storage = Depends(get_storage)) -> ProfileList:
    """The names of the stored profile sets (those with at least one version)."""
    return ProfileList(profiles=storage.profile_set_names())
