"""Every error answer of the service: one JSON shape, one plain sentence.

The body is always ``{"detail": "<sentence naming the fault>", "error": "<code>"}``;
schema errors add ``"errors": [{"loc": [...], "msg": "...", "type": "..."}]`` with
the field at fault. Codes: ``invalid_request`` (schema, 422), ``planning_error``
(the core's PlanningError, 422), ``profile_missing`` (the profiles lack pairs the request
needs, 422, every pair in ``"missing": [{"component", "profile", "machine_type"}]``), ``time_limit`` (the search stopped at the time
limit, 422), ``not_found`` (404), ``in_use`` (409: a profile set version that
stored plans name cannot be deleted), ``unauthorized`` (401), ``forbidden`` (403: the token lacks the scope), ``body_too_large`` (413),
``method_not_allowed`` (405), ``busy`` and ``storage`` (503), ``internal`` (500, a bug).
"""
from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from planner.errors import PlanningError, PlanningTimeout, ProfilesMissing
from planner.storage import StorageError

log = logging.getLogger("hetsched.service")


class FieldError(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class MissingPair(BaseModel):
    component: str
    profile: str
    machine_type: str


class ErrorBody(BaseModel):
    """The body of every non-2xx answer."""

    detail: str = Field(description="One plain sentence that names the fault.")
    error: str = Field(description="A stable code: invalid_request, planning_error, profile_missing, time_limit, not_found, in_use, unauthorized, body_too_large, ...")
    errors: list[FieldError] | None = Field(default=None, description="Schema errors only: every field at fault.")
    missing: list[MissingPair] | None = Field(default=None, description="profile_missing only: every (profile, machine type) pair the request needs and its profiles lack, with a component that needs it.")


class ServiceError(Exception):
    """An answer other than success, raised anywhere in a request and turned into an ErrorBody."""

    def __init__(self, status_code: int, error: str, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status_code = status_code
        self.error = error
        self.detail = detail
        self.headers = headers


def not_found(detail: str) -> ServiceError:
    return ServiceError(404, "not_found", detail)


def in_use(detail: str) -> ServiceError:
    return ServiceError(409, "in_use", detail)


def error_response(status_code: int, error: str, detail: str, headers: dict[str, str] | None = None,
                   errors: list[dict[str, Any]] | None = None,
                   missing: list[dict[str, str]] | None = None) -> JSONResponse:
    body = ErrorBody(detail=detail, error=error,
                     errors=None if errors is None else [FieldError.model_validate(e) for e in errors],
                     missing=None if missing is None else [MissingPair.model_validate(m) for m in missing],
                     ).model_dump(exclude_none=True)
    return JSONResponse(body, status_code=status_code, headers=headers)


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "A token is configured and the call has none or a wrong one."},
    403: {"model": ErrorBody, "description": "The token lacks the scope this call needs (`forbidden`), or is a topology's records token used for another topology."},
    404: {"model": ErrorBody, "description": "No such plan, profile set, profile set version or path."},
    413: {"model": ErrorBody, "description": "The body is over the service's size limit."},
    422: {"model": ErrorBody, "description": "The body breaks the schema (the field at fault in `errors`), cannot be planned, or its search ran past the time limit (one sentence in `detail`)."},
    503: {"model": ErrorBody, "description": "No planning slot came free in time (busy, with Retry-After), or the database failed."},
}
"""Documented on every /v1 route so the OpenAPI schema lists each answer a caller can get."""


def _field_path(loc: tuple[Any, ...]) -> str:
    parts = [p for p in loc if p != "body"] if loc and loc[0] == "body" else list(loc)
    text = ""
    for p in parts:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text


def validation_sentence(errors: list[dict[str, Any]]) -> str:
    """One sentence for pydantic's errors: the first field at fault and how many more there are."""
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "")
        at = f" at character {loc[1]}" if len(loc) > 1 else ""
        return f"the request body is not valid JSON{at}" + (f" ({reason})" if reason else "")
    if loc == ("body",):
        if first.get("type") == "missing":
            return "the request needs a JSON body"
        return f"the request body must be a JSON object (with Content-Type: application/json): {first.get('msg', '')}"
    where = _field_path(loc)
    msg = str(first.get("msg", "invalid value"))
    sentence = f"{where}: {msg}" if where else msg
    if len(errors) > 1:
        sentence += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''} in `errors`)"
    return sentence


def _plain_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"loc": [p if isinstance(p, (str, int)) else str(p) for p in e.get("loc", ())],
         "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
        for e in errors
    ]


async def _on_service_error(request: Request, exc: ServiceError) -> JSONResponse:
    return error_response(exc.status_code, exc.error, exc.detail, exc.headers)


async def _on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    sentence = validation_sentence(errors) if errors else "the request breaks the schema"
    log.info("%s %s rejected (422): %s", request.method, request.url.path, sentence)
    return error_response(422, "invalid_request", sentence, errors=_plain_errors(errors))


async def _on_planning_error(request: Request, exc: PlanningError) -> JSONResponse:
    code = "time_limit" if isinstance(exc, PlanningTimeout) else "planning_error"
    if isinstance(exc, ProfilesMissing):
        log.debug("%s %s rejected (422, profile_missing): %s", request.method, request.url.path, exc)
        return error_response(422, "profile_missing", str(exc), missing=[m._asdict() for m in exc.missing])
    log.debug("%s %s rejected (422, %s): %s", request.method, request.url.path, code, exc)
    return error_response(422, code, str(exc))


async def _on_http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 413: "body_too_large"}
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"there is no {request.url.path} here: see /docs for the API"
    elif exc.status_code == 405 and detail == "Method Not Allowed":
        detail = f"{request.url.path} does not serve {request.method}: see /docs for the API"
    return error_response(exc.status_code, codes.get(exc.status_code, "http_error"), detail, getattr(exc, "headers", None))


async def _on_storage_error(request: Request, exc: StorageError) -> JSONResponse:
    log.error("%s %s: %s", request.method, request.url.path, exc)
    return error_response(503, "storage", str(exc))


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    """Last resort: a bug in the service or the core. Log the traceback here, answer a sentence."""
    log.exception("%s %s failed unexpectedly", request.method, request.url.path)
    return error_response(500, "internal", f"the planner failed unexpectedly ({type(exc).__name__}); the service log has the details")


def install_error_handlers(app: FastAPI) -> None:
    app.exception_handler(ServiceError)(_on_service_error)
    app.exception_handler(RequestValidationError)(_on_validation_error)
    app.exception_handler(PlanningError)(_on_planning_error)
    app.exception_handler(StarletteHTTPException)(_on_http_exception)
    app.exception_handler(StorageError)(_on_storage_error)
    app.add_exception_handler(Exception, _on_unexpected)
