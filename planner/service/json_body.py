"""Request bodies parsed by pydantic's strict JSON parser instead of the standard library's.

``json.loads`` accepts what the API cannot store or answer (lone UTF-16 surrogates, NaN,
nesting deep enough to exhaust the stack) and reports invalid UTF-8 as a 400; here every
such body is a JSON decode error, which FastAPI answers with 422.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

import pydantic_core
from fastapi import Request, Response
from fastapi.routing import APIRoute

_POSITION = re.compile(r"at line (\d+) column (\d+)")


def _char_offset(doc: str, message: str) -> int:
    """The 0-based character offset of pydantic's "at line L column C" in ``doc``."""
    found = _POSITION.search(message)
    if not found:
        return 0
    line, column = int(found.group(1)), int(found.group(2))
    lines = doc.split("\n")
    return sum(len(text) + 1 for text in lines[: line - 1]) + max(column - 1, 0)


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = pydantic_core.from_json(body, allow_inf_nan=False)
            except ValueError as exc:
                message = _POSITION.sub("", str(exc)).strip()
                doc = body.decode("utf-8", errors="replace")
                raise json.JSONDecodeError(message, doc, _char_offset(doc, str(exc))) from None
        return self._json


class StrictJSONRoute(APIRoute):
    """The route class of every router with a JSON body."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
