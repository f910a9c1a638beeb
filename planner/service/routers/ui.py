"""/ui, a page of the cluster and every placement, and /v1/overview, the JSON it polls.

The page itself is static and holds no data, so it is served without the token: a browser cannot
send a bearer header when it navigates. It takes the token from the URL fragment (``#token=...``,
never sent to the server nor written to its log) or a form, keeps it in the tab's sessionStorage,
and calls /v1/overview with ``Authorization: Bearer``, which the token guard checks like any /v1
call. No cookie carries the token, so another site cannot make the browser call the API with it.
"""
from __future__ import annotations

import time
from pathlib import Path

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse

from planner.service.deps import get_settings, get_storage
from planner.service.errors import ServiceError
from planner.service.overview import (
    LiveCluster,
    Overview,
    ProfileSetView,
    profile_set_view,
    read_live_cluster,
    recent_plans,
    topology_statuses,
)
from planner.service.settings import ServiceSettings
from planner.storage import Storage

UI_FILES = Path(__file__).resolve().parents[1] / "ui"
LIVE_CLUSTER_MAX_AGE_S = 2.0
"""A Nimbus reading younger than this is answered again: several open pages cost Nimbus one reading."""

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
"""The page runs only its own script and talks only to this service; names from the database are text, never markup."""

ASSETS = {"ui.js": "text/javascript", "ui.css": "text/css"}

router = APIRouter(tags=["ui"])


@router.get("/ui", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(UI_FILES / "index.html", media_type="text/html", headers=PAGE_HEADERS)


@router.get("/ui/{asset}", include_in_schema=False)
def asset(asset: str) -> FileResponse:
    if asset not in ASSETS:
        raise ServiceError(404, "not_found", f"the page has no file '{asset}'")
    return FileResponse(UI_FILES / asset, media_type=ASSETS[asset], headers=PAGE_HEADERS)


@router.get("/v1/overview", response_model=Overview)
async def overview(request: Request, storage: Storage = Depends(get_storage),
                   settings: ServiceSettings = Depends(get_settings)) -> Overview:
    """Each topology's rates, contingencies and events; the newest stored plans drawn as machines, every profile set
    with its fit, and the live cluster (with --nimbus)."""
    plans, stored = await anyio.to_thread.run_sync(recent_plans, storage.path)
    sets = await anyio.to_thread.run_sync(_profile_sets, storage)
    cluster = await _live_cluster(request, settings.nimbus)
    topologies = await anyio.to_thread.run_sync(topology_statuses, storage.path, cluster)
    return Overview(topologies=topologies, plans=plans, plans_stored=stored, profile_sets=sets, cluster=cluster)


def _profile_sets(storage: Storage) -> list[ProfileSetView]:
    found = (storage.get_profile_set(name) for name in storage.profile_set_names())
    return [profile_set_view(s) for s in found if s is not None]


async def _live_cluster(request: Request, nimbus: str | None) -> LiveCluster:
    """The latest Nimbus reading, read again when older than LIVE_CLUSTER_MAX_AGE_S (one reading at a time)."""
    state = request.app.state
    if not hasattr(state, "live_cluster_lock"):
        state.live_cluster_lock = anyio.Lock()
        state.live_cluster = (float("-inf"), None)
    async with state.live_cluster_lock:
        read_at, cluster = state.live_cluster
        if cluster is None or time.monotonic() - read_at > LIVE_CLUSTER_MAX_AGE_S:
            cluster = await anyio.to_thread.run_sync(read_live_cluster, nimbus)
            state.live_cluster = (time.monotonic(), cluster)
    return cluster
