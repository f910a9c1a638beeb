"""The FastAPI application: routers, error handlers and guards put together from the settings."""
from __future__ import annotations

import functools
import logging
import os
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from planner.service.errors import ERROR_RESPONSES, install_error_handlers
from planner.service.guards import PROTECTED_PREFIX, BearerToken, BodySizeLimit
from planner.records_store import RecordsStore, default_records_dir
from planner.service.routers import assignments, evaluations, health, metrics, plans, profiles, repairs, tenants, ui
from planner.service.routers import capacity, topologies
from planner.service.routers.health import service_version
from planner.service.scopes import load_records_secret
from planner.service.settings import ServiceSettings
from planner.service.workers import PlanningPool
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

PLANNING_PROCESSES = max(2, os.cpu_count() or 2)
"""Plans of any size computed at once; more callers wait their turn (planning is CPU-bound)."""
SMALL_LANE_PROCESSES = 1
"""More planning processes for small (plugin-sized) requests only, so they never wait behind large plans."""


def create_app(settings: ServiceSettings | None = None, storage: Storage | None = None) -> FastAPI:
    """The service for ``settings``; opens the database now so a bad path fails at start, not at the first call."""
    settings = settings or ServiceSettings()
    storage = storage or Storage(settings.db_path, settings.retention)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        renewed = storage.renew_all_tenants(time.time())
        if renewed:
            log.info("kept %d tenant registration%s across the restart (heartbeats missed while the service was "
                     "down do not release them; the plugin's next heartbeat does what is gone)",
                     renewed, "s" if renewed > 1 else "")
        dropped = storage.apply_retention()
        if dropped.plans or dropped.profile_versions:
            log.info("retention at start: deleted %d plans and %d profile set versions", dropped.plans, dropped.profile_versions)
        pool = PlanningPool(PLANNING_PROCESSES, SMALL_LANE_PROCESSES)
        await anyio.to_thread.run_sync(pool.start)
        app.state.planning_pool = pool
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(pool.stop)
            storage.close()

    app = FastAPI(
        title="hetsched planner",
        version=service_version(),
        description="Heterogeneity-aware planning for Apache Storm: instance counts and placement of a topology on a heterogeneous cluster.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.storage = storage
    app.state.ledger_lock = anyio.Lock()
    app.state.records_store = RecordsStore(settings.records_dir or default_records_dir(settings.db_path), settings.records_limits)
    app.state.records_secret = functools.cache(lambda: load_records_secret(Path(settings.db_path).parent))

    app.include_router(health.router)
    for module in (plans, evaluations, profiles, assignments, repairs, capacity, tenants, topologies, metrics, ui):
        app.include_router(module.router, responses=_documented_errors(settings))
    install_error_handlers(app)

    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    if settings.grants:
        app.add_middleware(BearerToken, grants=settings.grants, records_secret=app.state.records_secret)
    app.openapi = lambda: _openapi(app, settings)  # type: ignore[method-assign]  # FastAPI's documented override
    return app


def _documented_errors(settings: ServiceSettings) -> dict[int | str, dict[str, Any]]:
    return {code: spec for code, spec in ERROR_RESPONSES.items() if code not in (401, 403) or settings.grants}


def _openapi(app: FastAPI, settings: ServiceSettings) -> dict[str, Any]:
    """The generated schema, plus the bearer scheme on every /v1 operation when a token is set."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    if settings.grants:
        schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        for path, operations in schema["paths"].items():
            if path.startswith(PROTECTED_PREFIX):
                for operation in operations.values():
                    operation["security"] = [{"bearer": []}]
    app.openapi_schema = schema
    return schema
