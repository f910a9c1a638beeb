"""Storing a ProfileSet in the planner (``PUT /v1/profiles/{name}``, docs/api.md) through the planner's client."""
from __future__ import annotations

from planner.client import DEFAULT_URL, TOKEN_ENV, URL_ENV, PlannerClient, PlannerClientError
from planner.model import ProfileSet, StoredProfileSet
from spark_profiling.errors import ProfilingError

__all__ = ["DEFAULT_URL", "TOKEN_ENV", "URL_ENV", "put_profile_set"]


def put_profile_set(profile_set: ProfileSet, name: str, planner_url: str | None = None, token: str | None = None) -> StoredProfileSet:
    """Store the set as the next version of ``name`` and return that version (``created`` False: the
    newest version already held this content, so none was added).

    ``planner_url``/``token`` default to $HETSCHED_PLANNER_URL / $HETSCHED_PLANNER_TOKEN.
    """
    try:
        with PlannerClient(planner_url, token) as client:
            return client.put_profile_set(profile_set.model_copy(update={"name": name}))
    except PlannerClientError as exc:
        raise ProfilingError(f"profile set {name!r} was not stored: {exc}.") from None
