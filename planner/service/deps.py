"""Dependencies the routes share: the settings, the storage, the planning processes and the ledger's lock."""
from __future__ import annotations

import anyio
from fastapi import Request

from planner.records_store import RecordsStore
from planner.service.settings import ServiceSettings
from planner.service.workers import PlanningPool
from planner.storage import Storage


def get_settings(request: Request) -> ServiceSettings:
    return request.app.state.settings


def get_storage(request: Request) -> Storage:
    return request.app.state.storage


def get_planning_pool(request: Request) -> PlanningPool:
    return request.app.state.planning_pool


def get_records_store(request: Request) -> RecordsStore:
    return request.app.state.records_store


def get_ledger_lock(request: Request) -> anyio.Lock:
    """Held while a tenant is admitted: two newcomers planned at once are registered one after the other."""
    return request.app.state.ledger_lock
