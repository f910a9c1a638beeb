"""Dependencies the routes share: the settings, the storage and the planning processes."""
from __future__ import annotations

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
