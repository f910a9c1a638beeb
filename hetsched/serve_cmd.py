"""``hetsched serve``: run the planning service under uvicorn."""
from __future__ import annotations

import ipaddress
import logging
import logging.config
from enum import Enum
from pathlib import Path
from typing import NoReturn, Optional

import typer

from hetsched.errors import fail
from planner.client import TOKEN_ENV
from planner.service.settings import (
    DEFAULT_HOST,
    DEFAULT_JOINT_BUDGET_S,
    DEFAULT_JOINT_MAX_TENANTS,
    DEFAULT_JOINT_MIN_GAIN,
    DEFAULT_JOINT_PLACEMENTS,
    DEFAULT_MAX_BODY_MB,
    DEFAULT_MAX_SIZE,
    DEFAULT_PORT,
    DEFAULT_QUEUE_WAIT_S,
    DEFAULT_TIME_LIMIT_S,
    DEFAULT_TENANT_TTL_S,
    KEEP_PLANS_DAYS_ENV,
    KEEP_PROFILE_VERSIONS_ENV,
    MAX_LP_CELLS_ENV,
    MAX_PLACEMENT_CELLS_ENV,
    SHARE_MODE_ENV,
    ServiceSettings,
    SizeLimit,
    log_config,
)
from planner.records_store import (
    DEFAULT_RECORDS_MAX_MB,
    RECORDS_DIR_ENV,
    RECORDS_KEEP_DAYS_ENV,
    RECORDS_MAX_MB_ENV,
)
from planner.service.scopes import ALL_SCOPES, Scope, TokenFileError, read_token_file
from planner.storage import DB_ENV, StorageError, default_db_path
from planner.tenancy import SHARE_MODES

log = logging.getLogger("hetsched.service")

TOKEN_FILE_ENV = "HETSCHED_PLANNER_TOKEN_FILE"

SHUTDOWN_GRACE_S = 5
"""On SIGINT/SIGTERM, requests in flight get this long to finish before the service exits anyway."""


class LogLevel(str, Enum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


def grants_text(grants: dict[str, frozenset[Scope]]) -> str:
    """For the start line: how many tokens, and each one's scopes (never the tokens)."""
    if not grants:
        return "no token"
    described = sorted("all" if scopes == ALL_SCOPES else "+".join(sorted(s.value for s in scopes)) for scopes in grants.values())
    return f"{len(grants)} token{'s' if len(grants) > 1 else ''} required on /v1 ({', '.join(described)})"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    host: str = typer.Option(DEFAULT_HOST, help="Address to listen on; loopback unless you mean otherwise."),
    port: int = typer.Option(DEFAULT_PORT, min=0, max=65535, help="TCP port (0: any free port, printed at start)."),
    db: Optional[Path] = typer.Option(None, envvar=DB_ENV, help="SQLite file for plans and profile sets (default: $XDG_DATA_HOME/hetsched/hetsched.db, else ~/.local/share/hetsched/hetsched.db)."),
    token: Optional[str] = typer.Option(None, envvar=TOKEN_ENV, help="Require 'Authorization: Bearer TOKEN' on every /v1 call (visible in ps: prefer --token-file)."),
    token_file: Optional[Path] = typer.Option(None, envvar=TOKEN_FILE_ENV, help="Read the tokens from this file (readable by its owner only): one bare token (every scope), or one line 'SCOPES TOKEN' per token, SCOPES from read, plan, bind, profiles, records, all joined by commas."),
    insecure_no_token: bool = typer.Option(False, "--insecure-no-token", help="Listen beyond loopback without a token: anyone who reaches the port may plan and overwrite profile sets."),
    max_body_mb: float = typer.Option(DEFAULT_MAX_BODY_MB, min=0.001, help="Largest request body, MB; larger ones get 413."),
    time_limit_s: float = typer.Option(DEFAULT_TIME_LIMIT_S, min=0.001, help="Longest one plan may compute, seconds."),
    queue_wait_s: float = typer.Option(DEFAULT_QUEUE_WAIT_S, min=0.001, help="Longest a request waits for a planning slot before a 503, seconds."),
    max_components_x_machines: int = typer.Option(
        DEFAULT_MAX_SIZE.placement_cells, min=1, envvar=MAX_PLACEMENT_CELLS_ENV,
        help="Largest request: its components times its machines; larger ones get 413 before planning."),
    max_components2_x_types: int = typer.Option(
        DEFAULT_MAX_SIZE.lp_cells, min=1, envvar=MAX_LP_CELLS_ENV,
        help="Largest request: its components squared times its used machine types; larger ones get 413 before planning."),
    keep_plans_days: Optional[float] = typer.Option(
        None, min=0.0, envvar=KEEP_PLANS_DAYS_ENV,
        help="Delete plans not made, read or reused for this many days (at start and at each write) [default: keep all]."),
    keep_profile_versions: Optional[int] = typer.Option(
        None, min=1, envvar=KEEP_PROFILE_VERSIONS_ENV,
        help="Keep only the newest N versions of each profile set, plus those stored plans name [default: keep all]."),
    records_dir: Optional[Path] = typer.Option(None, "--records-dir", envvar=RECORDS_DIR_ENV, help="Where workers' metrics batches are stored (POST /v1/metrics/batches) [default: records/ next to the database]."),
    records_max_mb: float = typer.Option(DEFAULT_RECORDS_MAX_MB, min=0.0, envvar=RECORDS_MAX_MB_ENV, help="The records store's size limit, MB: past it the oldest batches are deleted and counted (0: no limit)."),
    records_keep_days: Optional[float] = typer.Option(None, min=0.0, envvar=RECORDS_KEEP_DAYS_ENV, help="Delete stored batches received more than this many days ago [default: keep them, within --records-max-mb]."),
    nimbus: Optional[str] = typer.Option(None, "--nimbus", help="Nimbus host:port whose cluster the /ui page shows live (supervisors, topologies, executors)."),
    tenant_ttl_s: float = typer.Option(DEFAULT_TENANT_TTL_S, min=0.001, help="Release a ledger registration without a heartbeat for this long, seconds."),
    share_mode: str = typer.Option("weighted", envvar=SHARE_MODE_ENV, help="How topologies share what their minimums leave: weighted (by priority, nobody starved) or strict (higher priority first)."),
    joint_replans: bool = typer.Option(True, "--joint-replans/--no-joint-replans", help="Plan running topologies again beside a newcomer and have the plugin re-place them drained, where that raises the tenants' weighted rate by --joint-min-gain."),
    joint_min_gain: float = typer.Option(DEFAULT_JOINT_MIN_GAIN, min=0.0, help="The least rise of the tenants' weighted rate (0.05: 5%) worth re-placing a running topology beside a newcomer."),
    joint_placements: int = typer.Option(DEFAULT_JOINT_PLACEMENTS, min=1, max=50, help="How many of a newcomer's placements are tried with the running topologies planned again beside each (more finds better partings of the machines and plans longer)."),
    joint_budget_s: float = typer.Option(DEFAULT_JOINT_BUDGET_S, min=0.0, help="Seconds from a newcomer's plan request after which its search beside the running topologies (its placements without some machine types, the joint re-plans) stops; it keeps the best placement found by then, at worst its plan on what they leave, and its answer says so (0: no search)."),
    joint_max_tenants: int = typer.Option(DEFAULT_JOINT_MAX_TENANTS, min=0, help="The most running topologies one joint re-plan plans again beside a newcomer, the most important on its machines first; the rest keep their placements."),
    evict_refused: bool = typer.Option(True, "--evict-refused/--keep-refused", help="A running topology a more important newcomer leaves without its minimum is released from the ledger and evicted by the plugin (Storm's RAS evicts so too); --keep-refused keeps it running idle, charged."),
    log_level: LogLevel = typer.Option(LogLevel.info, case_sensitive=False, help="How much the service logs."),
) -> None:
    """Run the planning service: the HTTP API of docs/api.md (docs at /docs, schema at /openapi.json) and a page of plans at /ui."""
    import uvicorn

    from planner.service.app import create_app

    if token and token_file:
        _refuse("give --token or --token-file, not both")
    tokens: dict[str, frozenset[Scope]] = {}
    if token_file:
        try:
            tokens = read_token_file(token_file)
        except TokenFileError as fault:
            _refuse(str(fault))
    if not _is_loopback(host) and not token and not tokens and not insecure_no_token:
        _refuse(f"refusing to listen on {host} without a token: anyone who can reach it could plan and overwrite "
                "profile sets; give --token-file (or --token), or --insecure-no-token if you mean it")
    if nimbus is not None:
        nimbus = _nimbus_address(nimbus)
    if share_mode not in SHARE_MODES:
        _refuse(f"--share-mode must be one of {', '.join(SHARE_MODES)}, not {share_mode!r}")
    settings = ServiceSettings(
        db_path=db or default_db_path(), token=token or None, tokens=tokens,
        max_body_bytes=int(max_body_mb * 1_000_000), time_limit_s=time_limit_s, queue_wait_s=queue_wait_s,
        max_size=SizeLimit(placement_cells=max_components_x_machines, lp_cells=max_components2_x_types),
        keep_plans_days=keep_plans_days, keep_profile_versions=keep_profile_versions,
        nimbus=nimbus, records_dir=records_dir, records_max_bytes=int(records_max_mb * 1_000_000) or None,
        records_keep_days=records_keep_days, tenant_ttl_s=tenant_ttl_s, share_mode=share_mode,  # type: ignore[arg-type]  # checked above
        joint_min_gain=joint_min_gain if joint_replans else None, joint_placements=joint_placements,
        joint_budget_s=joint_budget_s, joint_max_tenants=joint_max_tenants,
        evict_refused=evict_refused,
    )
    try:
        service = create_app(settings)
    except StorageError as exc:
        _refuse(str(exc))
    logging.config.dictConfig(log_config(log_level.value))
    log.info("planner: db %s, %s, body limit %g MB, time limit %g s, size limit %s components x machines and %s "
             "components^2 x machine types, keeping %s and %s", settings.db_path,
             grants_text(settings.grants), max_body_mb, time_limit_s,
             f"{max_components_x_machines:,}", f"{max_components2_x_types:,}",
             "every plan" if keep_plans_days is None else f"plans used within {keep_plans_days:g} days",
             "every profile set version" if keep_profile_versions is None else f"the newest {keep_profile_versions} versions of each profile set")
    log.info("page at /ui: plans and profile sets%s", f", and the live cluster of Nimbus {nimbus}" if nimbus else "")
    if not _is_loopback(host) and not settings.grants:
        log.warning("listening on %s without a token (--insecure-no-token): anyone who can reach this address can plan and overwrite profiles", host)
    uvicorn.run(service, host=host, port=port, log_config=log_config(log_level.value), log_level=log_level.value,
                access_log=False, timeout_graceful_shutdown=SHUTDOWN_GRACE_S)


def _nimbus_address(text: str) -> str:
    """``--nimbus`` checked as host:port (port 1-65535), so a typo fails at start rather than on the page."""
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        _refuse(f"--nimbus {text!r} is not host:port")
    return f"{host}:{int(port)}"


def _refuse(sentence: str) -> NoReturn:
    """Refuse to start (exit 2, as for a bad option), before anything is opened or listened on."""
    raise fail(sentence, code=2)
