"""GET /healthz: open to everyone (no token), so a supervisor or the plugin can probe it."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter
from pydantic import BaseModel

router = APIRouter(tags=["health"])


def service_version() -> str:
    try:
        return version("hetsched")
    except PackageNotFoundError:
        return "unknown"


class Health(BaseModel):
    status: str
    version: str


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    return Health(status="ok", version=service_version())
