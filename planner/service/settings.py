"""What an operator sets when starting the service (``hetsched serve`` options)."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from collections.abc import Mapping
from pathlib import Path

from planner.records_store import DEFAULT_MAX_BATCH_BYTES, RecordsLimits
from planner.service.scopes import ALL_SCOPES, Scope
from planner.storage import Retention, default_db_path
from planner.tenancy import SHARE_MODES, ShareMode

KEEP_PLANS_DAYS_ENV = "HETSCHED_KEEP_PLANS_DAYS"
KEEP_PROFILE_VERSIONS_ENV = "HETSCHED_KEEP_PROFILE_VERSIONS"

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_MB = 10.0
DEFAULT_TIME_LIMIT_S = 10.0
DEFAULT_QUEUE_WAIT_S = 60.0
DEFAULT_JOINT_MIN_GAIN = 0.05
"""Re-place a running tenant beside a newcomer when the tenants' weighted rate rises by 5% or more."""
DEFAULT_JOINT_PLACEMENTS = 4
"""A newcomer's placements settled with the running tenants planned again beside each (its best first)."""
DEFAULT_JOINT_BUDGET_S = 8.0
"""A newcomer's search beside the running tenants stops this long after its request came: the plugin waits 30 s
(``hetsched.planner.timeout.ms``) and counts an answer slower than half of that as a failure, so the answer, its own
plan included, must come well before 15 s."""
DEFAULT_JOINT_MAX_TENANTS = 8
"""Running tenants a joint re-plan plans again beside a newcomer (the most important on its machines): each costs up
to 7 plans, and at a hundred tenants planning them all took a minute."""
DEFAULT_TENANT_TTL_S = 60.0
"""Six of Nimbus's default 10 s scheduling rounds: the plugin renews every registration each round."""
MAX_PLACEMENT_CELLS_ENV = "HETSCHED_MAX_COMPONENTS_X_MACHINES"
MAX_LP_CELLS_ENV = "HETSCHED_MAX_COMPONENTS2_X_TYPES"
SHARE_MODE_ENV = "HETSCHED_SHARE_MODE"


def default_share_mode() -> ShareMode:
    """``$HETSCHED_SHARE_MODE`` if set (so a service started by ``uvicorn --factory`` can be strict), else weighted."""
    mode = os.environ.get(SHARE_MODE_ENV, "").strip() or "weighted"
    if mode not in SHARE_MODES:
        raise ValueError(f"{SHARE_MODE_ENV} must be one of {', '.join(SHARE_MODES)}, not {mode!r}")
    return mode  # type: ignore[return-value]  # checked above


@dataclass(frozen=True)
class SizeLimit:
    """Largest request sizes: components x machines, and components^2 x used machine types."""

    placement_cells: int
    lp_cells: int


DEFAULT_MAX_SIZE = SizeLimit(placement_cells=2_000_000, lp_cells=12_000_000)
"""2,000 components on 1,000 machines of 3 types; planning it peaks near 0.5 GB (docs/reference/api.md#limits)."""
SMALL_SIZE = SizeLimit(placement_cells=10_000, lp_cells=100_000)
"""Plugin-sized requests (tens of components on tens to hundreds of machines): they have a planning lane of their own."""


@dataclass(frozen=True)
class ServiceSettings:
    """The service's limits and where it keeps its data.

    ``token``: where set, every ``/v1`` call needs ``Authorization: Bearer <token>``; this token has every scope.
    ``tokens``: more tokens, each with its scopes (planner.service.scopes; ``hetsched serve --token-file``).
    ``time_limit_s``: the longest one plan or evaluation may compute; a request may ask
    for less (``options.time_limit_s``), never more.
    ``queue_wait_s``: the longest a request waits for a planning slot before a 503.
    ``max_size``: larger requests are refused (413) before planning.
    ``small_size``: requests up to it plan in their own lane, never behind large ones.
    ``keep_plans_days`` / ``keep_profile_versions``: what the service deletes on its own
    (:class:`planner.storage.Retention`); None keeps everything.
    ``tenant_ttl_s``: a ledger registration without a heartbeat (``POST /v1/tenants/alive``) for this long is released.
    ``share_mode``: how tenants share what their minimums leave, ``weighted`` or ``strict`` (planner.tenancy).
    ``joint_min_gain``: a running tenant is planned again and re-placed beside a newcomer when that raises the
    tenants' weighted rate by this fraction (planner.service.tenants.joint_replans); None: never.
    ``joint_placements``: how many (at least 1) of a newcomer's placements are settled so (each costs a re-plan of every
    running tenant and of the newcomer on up to 7 sets of machine types; docs/concepts/model.md, "Parting the machines").
    ``joint_budget_s``: seconds from a newcomer's request after which its search beside the running tenants (its
    placements without some machine types, the joint re-plans) stops; it keeps the best placement found by then, at
    worst its plan on what they leave. None: no limit.
    ``joint_max_tenants``: the most running tenants one joint re-plan plans again, the most important on the
    newcomer's machines first; None: every one.
    ``evict_refused``: a running tenant a more important newcomer leaves without its minimum is released from the
    ledger and named to the plugin, which frees its slots (Storm's RAS evicts so too); off: it stays, idle and charged.
    ``nimbus``: ``host:port`` of a Nimbus whose cluster the /ui page shows live; None: none.
    ``records_dir``: the workers' metrics records store; None: ``records/`` next to the database
    (or ``$HETSCHED_RECORDS_DIR``). ``max_batch_bytes``: the largest metrics batch, bytes.
    ``records_max_bytes`` / ``records_keep_days``: the records store's bound; past it the oldest batches are deleted
    and counted (planner.records_store.RecordsLimits); None: no bound.
    """

    db_path: Path = field(default_factory=default_db_path)
    token: str | None = None
    tokens: Mapping[str, frozenset[Scope]] = field(default_factory=dict)
    max_body_bytes: int = int(DEFAULT_MAX_BODY_MB * 1_000_000)
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    queue_wait_s: float = DEFAULT_QUEUE_WAIT_S
    nimbus: str | None = None
    max_size: SizeLimit = DEFAULT_MAX_SIZE
    small_size: SizeLimit = SMALL_SIZE
    keep_plans_days: float | None = None
    keep_profile_versions: int | None = None
    tenant_ttl_s: float = DEFAULT_TENANT_TTL_S
    share_mode: ShareMode = field(default_factory=default_share_mode)
    joint_min_gain: float | None = DEFAULT_JOINT_MIN_GAIN
    joint_placements: int = DEFAULT_JOINT_PLACEMENTS
    joint_budget_s: float | None = DEFAULT_JOINT_BUDGET_S
    joint_max_tenants: int | None = DEFAULT_JOINT_MAX_TENANTS
    evict_refused: bool = True
    records_dir: Path | None = None
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    records_max_bytes: int | None = RecordsLimits().max_bytes
    records_keep_days: float | None = None

    @property
    def grants(self) -> dict[str, frozenset[Scope]]:
        """Every token the service accepts, with its scopes; empty: ``/v1`` is open."""
        return {**self.tokens, **({self.token: ALL_SCOPES} if self.token else {})}

    @property
    def records_limits(self) -> RecordsLimits:
        return RecordsLimits(max_bytes=self.records_max_bytes, keep_days=self.records_keep_days)

    @property
    def retention(self) -> Retention:
        return Retention(keep_plans_days=self.keep_plans_days, keep_profile_versions=self.keep_profile_versions)


LOG_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"
"""Every line of the service's log starts with its local time and UTC offset, so it can be set beside Storm's logs."""

UPGRADE_NOISE = ("Unsupported upgrade request.", "No supported WebSocket library detected.")
"""What uvicorn logs for each request that asks to switch protocol: Java's HttpClient (the workers' metrics hook)
asks for HTTP/2 (``Upgrade: h2c``) on every call. The service has no WebSocket and answers over HTTP/1.1, which
those clients accept; the two lines said nothing else and were most of the log."""


class DropUpgradeNoise(logging.Filter):
    """Drops uvicorn's two warnings about a protocol upgrade it did not make (:data:`UPGRADE_NOISE`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name.startswith("uvicorn") and isinstance(record.msg, str) and record.msg.startswith(UPGRADE_NOISE))


def log_config(level: str = "info") -> dict:
    """uvicorn's own logging, with the service's logger (``hetsched.*``) printed the same way, each line dated."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    for formatter in config["formatters"].values():
        formatter["fmt"] = "%(asctime)s " + formatter["fmt"]
        formatter["datefmt"] = LOG_TIME_FORMAT
    config.setdefault("filters", {})["drop_upgrade_noise"] = {"()": f"{__name__}.{DropUpgradeNoise.__name__}"}  # plain data: callers write it as JSON
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("drop_upgrade_noise")
    config["loggers"]["hetsched"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    return config
