"""Dependencies the routes share: the settings, the storage and the planning thread limiter."""
from __future__ import annotations

from anyio import CapacityLimiter
from fastapi import Request

from planner.service.settings import ServiceSettings
from planner.storage import Storage


def get_settings(request: Request) -> ServiceSettings:
    return request.app.state.settings


def get_storage(request: Request) -> Storage:
    return request.app.state.storage


def get_planning_limiter(request: Request) -> CapacityLimiter:
    return request.app.state.planning_limiter
