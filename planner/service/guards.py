"""ASGI middleware that answers before any route runs: the bearer token and the body size limit.

They sit outside FastAPI so a caller without the token learns nothing about the schema, and
an oversized body is refused whether it declares its length or arrives in chunks.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping

from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from planner.service.errors import error_response
from planner.service.scopes import Grant, Scope, records_grant, refusal, required_scope

PROTECTED_PREFIX = "/v1"
GRANT_STATE = "hetsched_grant"
"""Where the guard leaves the caller's :class:`Grant` for the routes (``request.state``); absent without tokens."""
DRAIN_AT_LEAST_BYTES = 64_000_000


class BearerToken:
    """Every ``/v1`` call must carry ``Authorization: Bearer <token>`` with the scope it needs; /healthz and the docs stay open.

    ``grants`` maps each configured token to its scopes; a topology's records token (:mod:`planner.service.scopes`)
    is checked against ``records_secret`` and may post that topology's records only (the route checks the topology).
    A missing or unknown token is 401; a known one without the scope is 403 with the sentence of what it lacks.
    """

    def __init__(self, app: ASGIApp, grants: Mapping[str, frozenset[Scope]], records_secret: Callable[[], bytes]):
        self.app = app
        self._grants = [(f"Bearer {token}".encode(), Grant(scopes)) for token, scopes in grants.items()]
        self._records_secret = records_secret

    def grant_of(self, given: bytes) -> Grant | None:
        """The grant of an ``Authorization`` header's value, or None where it names no token of this service."""
        found = None
        for expected, grant in self._grants:  # compare with every token, so the time taken does not say which matched
            if secrets.compare_digest(given, expected):
                found = grant
        if found is None and given.startswith(b"Bearer records."):
            found = records_grant(self._records_secret(), given[len(b"Bearer "):].decode("ascii", "replace"))
        return found

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED_PREFIX):
            return await self.app(scope, receive, send)
        given = dict(scope["headers"]).get(b"authorization")
        grant = None if given is None else self.grant_of(given)
        if grant is None:
            detail = ("this planner needs a token: send 'Authorization: Bearer <token>'" if given is None
                      else "the bearer token is wrong")
            response = error_response(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})
            return await response(scope, receive, send)
        refused = refusal(grant, required_scope(scope["method"], scope["path"]))
        if refused is not None:
            return await error_response(403, "forbidden", refused)(scope, receive, send)
        scope.setdefault("state", {})[GRANT_STATE] = grant
        return await self.app(scope, receive, send)


class BodySizeLimit:
    """Refuse bodies over ``max_bytes`` with 413, counting the bytes really received.

    The body is read here (at most ``max_bytes`` kept in memory) and replayed to the app.
    A refused body is read to its end, up to ``drain_bytes`` in all, so the caller, still
    sending, gets the 413 instead of a reset connection; beyond that the connection is closed.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, drain_bytes: int | None = None):
        self.app = app
        self.max_bytes = max_bytes
        self.drain_bytes = drain_bytes if drain_bytes is not None else max(10 * max_bytes, DRAIN_AT_LEAST_BYTES)

    def _sentence(self, size: int | None) -> str:
        limit_mb = self.max_bytes / 1_000_000
        got = f" ({size / 1_000_000:.1f} MB)" if size is not None else ""
        return f"the request body{got} is over this planner's limit of {limit_mb:g} MB"

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            size = int(declared)
            if size <= self.drain_bytes:
                await self._drain(receive, 0)
            return await self._refuse(scope, receive, send, size)

        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            more = message.get("more_body", False)
            if size > self.max_bytes:
                if more:
                    size = await self._drain(receive, size)
                return await self._refuse(scope, receive, send, size)
            chunks.append(body)
            if not more:
                break

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _drain(self, receive: Receive, size: int) -> int:
        """Read and drop the rest of the body; return the bytes seen (stops at ``drain_bytes``)."""
        while size <= self.drain_bytes:
            message = await receive()
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        return size

    async def _refuse(self, scope: ASGIScope, receive: Receive, send: Send, size: int) -> None:
        response = error_response(413, "body_too_large", self._sentence(size), headers={"Connection": "close"})
        await response(scope, receive, send)
