"""What an operator sets when starting the service (``hetsched serve`` options)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from planner.storage import default_db_path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_MB = 10.0
DEFAULT_TIME_LIMIT_S = 10.0
DEFAULT_QUEUE_WAIT_S = 60.0


@dataclass(frozen=True)
class ServiceSettings:
    """The service's limits and where it keeps its data.

    ``token``: where set, every ``/v1`` call needs ``Authorization: Bearer <token>``.
    ``time_limit_s``: the longest one plan or evaluation may compute; a request may ask
    for less (``options.time_limit_s``), never more.
    ``queue_wait_s``: the longest a request waits for a planning slot before a 503.
    ``nimbus``: ``host:port`` of a Nimbus whose cluster the /ui page shows live; None: none.
    """

    db_path: Path = field(default_factory=default_db_path)
    token: str | None = None
    max_body_bytes: int = int(DEFAULT_MAX_BODY_MB * 1_000_000)
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    queue_wait_s: float = DEFAULT_QUEUE_WAIT_S
    nimbus: str | None = None
