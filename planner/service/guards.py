"""ASGI middleware that answers before any route runs: the bearer token and the body size limit.

They sit outside FastAPI so a caller without the token learns nothing about the schema, and
an oversized body is refused whether it declares its length or arrives in chunks.
"""
from __future__ import annotations

import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner.service.errors import error_response

PROTECTED_PREFIX = "/v1"
DRAIN_AT_LEAST_BYTES = 64_000_000


class BearerToken:
    """Every ``/v1`` call must carry ``Authorization: Bearer <token>``; /healthz and the docs stay open."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED_PREFIX):
            return await self.app(scope, receive, send)
        given = dict(scope["headers"]).get(b"authorization")
        if given is not None and secrets.compare_digest(given, self._expected):
            return await self.app(scope, receive, send)
        detail = ("this planner needs a token: send 'Authorization: Bearer <token>'" if given is None
                  else "the bearer token is wrong")
        response = error_response(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, size: int) -> None:
        response = error_response(413, "body_too_large", self._sentence(size), headers={"Connection": "close"})
        await response(scope, receive, send)
