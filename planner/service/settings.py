"""What an operator sets when starting the service (``hetsched serve`` options)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from planner.storage import Retention, default_db_path

KEEP_PLANS_DAYS_ENV = "HETSCHED_KEEP_PLANS_DAYS"
KEEP_PROFILE_VERSIONS_ENV = "HETSCHED_KEEP_PROFILE_VERSIONS"

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
    ``keep_plans_days`` / ``keep_profile_versions``: what the service deletes on its own
    (:class:`planner.storage.Retention`); None keeps everything.
    ``nimbus``: ``host:port`` of a Nimbus whose cluster the /ui page shows live; None: none.
    """

    db_path: Path = field(default_factory=default_db_path)
    token: str | None = None
    max_body_bytes: int = int(DEFAULT_MAX_BODY_MB * 1_000_000)
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    queue_wait_s: float = DEFAULT_QUEUE_WAIT_S
    nimbus: str | None = None
    keep_plans_days: float | None = None
    keep_profile_versions: int | None = None

    @property
    def retention(self) -> Retention:
        return Retention(keep_plans_days=self.keep_plans_days, keep_profile_versions=self.keep_profile_versions)
