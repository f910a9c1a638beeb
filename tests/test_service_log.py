"""The service's own log: every line dated, and no line per request for a protocol upgrade it does not make."""
from __future__ import annotations

import re

import httpx

from tests.fixtures.service import LiveService

DATED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (INFO|WARNING|ERROR|DEBUG|CRITICAL):")


def test_upgrade_requests_are_served_without_a_warning_and_every_line_is_dated(start_planner_service):
    service: LiveService = start_planner_service()
    # What Java's HttpClient (the workers' metrics hook) sends by default: a request to switch to HTTP/2.
    h2c = {"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABkAAQCAAAAAAIAAAAA"}
    for _ in range(3):
        assert httpx.get(f"{service.url}/healthz", headers=h2c, timeout=10).status_code == 200
    websocket = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                 "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    httpx.get(f"{service.url}/ui", headers=websocket, timeout=10)
    service.stop()
    lines = service.log().splitlines()
    assert not [line for line in lines if "Unsupported upgrade" in line or "WebSocket" in line], service.log()
    assert any("planner: db" in line for line in lines)
    assert all(DATED.match(line) for line in lines), service.log()
