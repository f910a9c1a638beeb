"""Storing a ProfileSet in the planner: ``PUT /v1/profiles/{name}`` (API.md)."""
from __future__ import annotations

from urllib.parse import quote

import httpx

from planner.model import ProfileSet
from spark_profiling.errors import ProfilingError

DEFAULT_PLANNER = "http://127.0.0.1:8765"
"""Where ``hetsched serve`` listens by default."""


def put_profile_set(
    planner_url: str, name: str, profile_set: ProfileSet, token: str | None = None, timeout_s: float = 30.0
) -> ProfileSet:
    """Store the set under ``name`` and return what the planner stored; every failure is one sentence."""
    body = profile_set.model_copy(update={"name": name}).model_dump(mode="json")
    url = f"{planner_url.rstrip('/')}/v1/profiles/{quote(name, safe='')}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.put(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.InvalidURL as exc:
        raise ProfilingError(f"planner URL {planner_url!r} is not valid: {exc}.") from None
    except httpx.TimeoutException:
        raise ProfilingError(f"the planner at {planner_url} did not answer within {timeout_s:g} s.") from None
    except httpx.HTTPError as exc:
        raise ProfilingError(f"cannot reach the planner at {planner_url}: {exc}.") from None
    if response.status_code == 401:
        raise ProfilingError(f"the planner at {planner_url} refused the call (401): give the right --token.")
    if response.status_code != 200:
        raise ProfilingError(
            f"the planner at {planner_url} did not store profile set {name!r}: "
            f"HTTP {response.status_code}: {_detail(response)}"
        )
    try:
        return ProfileSet.model_validate(response.json())
    except ValueError as exc:
        raise ProfilingError(f"the planner at {planner_url} answered 200 with a body that is not a ProfileSet: {exc}") from None


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail", response.text))[:500]
    except ValueError:
        return response.text[:500] or "(empty body)"
