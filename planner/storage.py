"""Stored plans and versioned profile sets in one SQLite file, so both survive a restart of the service.

Rows hold the API's own JSON (the pydantic models of :mod:`planner.model`), so what a caller
reads back is exactly what was stored. One connection guarded by a lock serves every thread
of the service; WAL lets a second process (``hetsched`` on the command line, a backup) read
while the service writes.

A profile set is a series of versions (1, 2, 3, ... per name, never reused): a put adds one
unless its content equals the newest version's. A plan records the version it was made with,
and a version that a stored plan names cannot be deleted. The schema's number is SQLite's
``user_version``; a file of an older schema is migrated when it is opened.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from planner.events import KEPT_PER_TOPOLOGY, REPEAT_QUIET_S, EventKind, TopologyEvent, iso_utc
from planner.ledger import TenantRecord
from planner.model import Plan, ProfileSet, ProfileSetVersion

DB_ENV = "HETSCHED_DB"
DATA_HOME_ENV = "XDG_DATA_HOME"
SCHEMA_VERSION = 1
"""0: one row per profile set name, replaced by every put (before versions). 1: versions."""
SECONDS_PER_DAY = 86_400.0

log = logging.getLogger("hetsched.storage")

_SCHEMA_0_PLANS = """
CREATE TABLE IF NOT EXISTS plans (
    id TEXT PRIMARY KEY,
    topology TEXT NOT NULL,
    strategy TEXT NOT NULL,
    created_at REAL NOT NULL,
    body TEXT NOT NULL
);
"""

_SCHEMA_1_ADDITIONS = """
CREATE TABLE profile_versions (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at REAL NOT NULL,
    digest TEXT NOT NULL,
    entry_count INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE TABLE profile_names (
    name TEXT PRIMARY KEY,
    last_version INTEGER NOT NULL
);
ALTER TABLE plans ADD COLUMN used_at REAL;
ALTER TABLE plans ADD COLUMN profiles_name TEXT;
ALTER TABLE plans ADD COLUMN profiles_version INTEGER;
CREATE INDEX plans_by_profiles ON plans (profiles_name, profiles_version);
CREATE INDEX plans_by_use ON plans (used_at);
"""


_BINDINGS = """
CREATE TABLE IF NOT EXISTS bindings (
    topology TEXT PRIMARY KEY,
    plan_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
"""The plan bound to each running topology by name (``/v1/assignments``); made at open, so no schema change."""


_TENANTS_TABLE = """
CREATE TABLE IF NOT EXISTS tenants (
    topology TEXT PRIMARY KEY,
    heartbeat_at REAL NOT NULL,
    body TEXT NOT NULL
)
"""
"""The ledger's registrations (planner.ledger.TenantRecord as JSON); made at open, so no schema number changes."""


_EVENTS_TABLE = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    topology TEXT NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    sentence TEXT NOT NULL
)
"""
"""Each topology's events (planner.events), in the order recorded; made at open, so no schema number changes."""
_EVENTS_INDEX = "CREATE INDEX IF NOT EXISTS events_by_topology ON events (topology, seq)"


PRIVATE_FILE_MODE = 0o600
"""A new database is readable by the service's user only: profile sets and plans describe the cluster."""
PRIVATE_FOLDER_MODE = 0o700
"""The database's folder, where the service makes it (SQLite puts its -wal and -shm files beside the database)."""


def _create_private(path: Path) -> None:
    """Create an empty ``path`` with :data:`PRIVATE_FILE_MODE` unless it exists; SQLite gives its -wal/-shm the same mode."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    except FileExistsError:
        pass


class StorageError(RuntimeError):
    """The database file cannot be opened or written; the message names the path."""


class VersionInUse(RuntimeError):
    """A profile set version that stored plans name; the message says which plans."""


@dataclass(frozen=True)
class Retention:
    """What the service deletes on its own; None keeps everything.

    ``keep_plans_days``: a plan not made, read or reused for this many days is deleted.
    ``keep_profile_versions``: per profile set, only the newest this many versions are kept,
    plus every older one that a stored plan still names.
    """

    keep_plans_days: float | None = None
    keep_profile_versions: int | None = None


@dataclass(frozen=True)
class PutResult:
    profile_set: ProfileSet
    """As stored, with its ``version``."""
    created: bool
    """False when the content equals the newest version's, which is returned instead."""


@dataclass(frozen=True)
class Binding:
    """The plan a running topology is placed by, why it was bound and when (epoch seconds)."""

    topology: str
    plan_id: str
    reason: str
    created_at: float

    @property
    def created_at_iso(self) -> str:
        return _iso(self.created_at)


@dataclass(frozen=True)
class RetentionResult:
    plans: int = 0
    profile_versions: int = 0


def default_db_path() -> Path:
    """``$HETSCHED_DB`` if set, else ``hetsched/hetsched.db`` in the user's data folder (``$XDG_DATA_HOME``, else
    ``~/.local/share``): outside any checkout, so a ``git clean`` or a fresh clone does not lose the plans."""
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV])
    data_home = os.environ.get(DATA_HOME_ENV) or str(Path.home() / ".local" / "share")
    return Path(data_home) / "hetsched" / "hetsched.db"


def new_plan_id() -> str:
    return uuid.uuid4().hex


OPTIONAL_ENTRY_FIELDS = ("remote_send", "remote_receive")
"""ProfileEntry fields added after digests were first stored: left out of the digest where 0 (their default)."""


def content_digest(profile_set: ProfileSet) -> str:
    """``sha256:<hex>`` of the entries and source (not the name or version), key order normalised."""
    content = profile_set.model_dump(mode="json", by_alias=True, include={"entries", "source"})
    for entry in content["entries"]:  # fields added later count only where set, so stored digests still match
        for key in OPTIONAL_ENTRY_FIELDS:
            if entry.get(key) == 0.0:
                del entry[key]
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


_iso = iso_utc


class Storage:
    """Plans (by id) and profile set versions (by name and number) in SQLite; safe to share between threads."""

    def __init__(self, path: str | os.PathLike[str], retention: Retention | None = None,
                 events_kept: int = KEPT_PER_TOPOLOGY):
        self.path = Path(path)
        self.retention = retention or Retention()
        self.events_kept = events_kept
        try:
            self.path.parent.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
            _create_private(self.path)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the plan database {self.path}: {exc}") from exc
        self._lock = threading.Lock()
        self._migrate()
        with self._transaction() as db:
            db.execute(_BINDINGS)
            db.execute(_TENANTS_TABLE)
            db.execute(_EVENTS_TABLE)
            db.execute(_EVENTS_INDEX)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- schema ----------------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Bring the file to SCHEMA_VERSION in one transaction (a second process opening it waits)."""
        with self._transaction() as db:
            found = db.execute("PRAGMA user_version").fetchone()[0]
            if found > SCHEMA_VERSION:
                raise StorageError(f"the plan database {self.path} has schema {found}, newer than this hetsched "
                                   f"reads (up to {SCHEMA_VERSION}): upgrade hetsched")
            if found == SCHEMA_VERSION:
                return
            db.execute(_SCHEMA_0_PLANS)  # a new file starts as an empty schema-0 one
            for statement in filter(None, (s.strip() for s in _SCHEMA_1_ADDITIONS.split(";"))):  # executescript would commit
                db.execute(statement)
            db.execute("UPDATE plans SET used_at = created_at")
            has_old_sets = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'profile_sets'").fetchone()
            migrated = 0
            if has_old_sets:
                for name, updated_at, body in db.execute("SELECT name, updated_at, body FROM profile_sets").fetchall():
                    profile_set = ProfileSet.model_validate_json(body).model_copy(update={"version": 1})
                    self._insert_version(db, profile_set, updated_at)
                    migrated += 1
                db.execute("DROP TABLE profile_sets")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        if has_old_sets:
            log.info("migrated %s to schema %d: %d profile sets became version 1", self.path, SCHEMA_VERSION, migrated)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE) so reads within it stay true until commit."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StorageError(f"the plan database {self.path} failed: {exc}") from exc

    def _execute(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"the plan database {self.path} failed: {exc}") from exc

    # --- plans -----------------------------------------------------------------------------------

    def save_plan(self, plan: Plan) -> Plan:
        """Store ``plan`` under a new id (or its own, if it has one) and return it with that id."""
        stored = plan if plan.id else plan.model_copy(update={"id": new_plan_id()})
        ref = stored.profiles
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO plans (id, topology, strategy, created_at, used_at, profiles_name, profiles_version, body)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (stored.id, stored.topology, stored.strategy, now, now, ref.name if ref else None,
                 ref.version if ref else None, stored.model_dump_json()),
            )
            self._drop_old_plans(db, now)
        return stored

    def get_plan(self, plan_id: str) -> Plan | None:
        body = self.plan_json(plan_id)
        return Plan.model_validate_json(body) if body is not None else None

    def plan_json(self, plan_id: str) -> str | None:
        """The stored plan's JSON as it was stored (the service answers it without re-encoding).

        Reading a plan counts as using it (``Retention.keep_plans_days`` counts from the last use).
        """
        with self._transaction() as db:
            rows = db.execute("SELECT body FROM plans WHERE id = ?", (plan_id,)).fetchall()
            if rows:
                db.execute("UPDATE plans SET used_at = ? WHERE id = ?", (time.time(), plan_id))
        return rows[0][0] if rows else None

    def delete_plan(self, plan_id: str) -> bool:
        """Whether a plan of that id was there (and is now gone)."""
        with self._transaction() as db:
            return db.execute("DELETE FROM plans WHERE id = ?", (plan_id,)).rowcount > 0

    @staticmethod
    def _plans_naming(db: sqlite3.Connection, name: str, version: int, limit: int) -> tuple[int, list[str]]:
        """How many stored plans were made with that version, and the ids of the first ``limit``."""
        count = db.execute("SELECT COUNT(*) FROM plans WHERE profiles_name = ? AND profiles_version = ?",
                           (name, version)).fetchone()[0]
        ids = [row[0] for row in db.execute(
            "SELECT id FROM plans WHERE profiles_name = ? AND profiles_version = ? ORDER BY created_at, id LIMIT ?",
            (name, version, limit))]
        return count, ids

    # --- bindings: the plan a running topology is placed by --------------------------------------

    def bind(self, topology: str, plan_id: str, reason: str) -> Binding | None:
        """Bind ``plan_id`` to the topology (replacing any earlier binding); None when no such plan is stored."""
        now = time.time()
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM plans WHERE id = ?", (plan_id,)).fetchone() is None:
                return None
            db.execute("INSERT OR REPLACE INTO bindings (topology, plan_id, reason, created_at) VALUES (?, ?, ?, ?)",
                       (topology, plan_id, reason, now))
            db.execute("UPDATE plans SET used_at = ? WHERE id = ?", (now, plan_id))
        return Binding(topology, plan_id, reason, now)

    def binding(self, topology: str) -> Binding | None:
        rows = self._execute("SELECT topology, plan_id, reason, created_at FROM bindings WHERE topology = ?", (topology,))
        return Binding(*rows[0]) if rows else None

    def unbind(self, topology: str) -> bool:
        """Whether the topology had a binding (and now has none)."""
        with self._transaction() as db:
            return db.execute("DELETE FROM bindings WHERE topology = ?", (topology,)).rowcount > 0

    # --- profile sets ----------------------------------------------------------------------------

    def put_profile_set(self, profile_set: ProfileSet) -> PutResult:
        """Add the set as the next version of its name, unless its content equals the newest version's."""
        digest = content_digest(profile_set)
        with self._transaction() as db:
            newest = db.execute(
                "SELECT version, digest, body FROM profile_versions WHERE name = ? ORDER BY version DESC LIMIT 1",
                (profile_set.name,)).fetchone()
            if newest is not None and newest[1] == digest:
                return PutResult(ProfileSet.model_validate_json(newest[2]), created=False)
            last = db.execute("SELECT last_version FROM profile_names WHERE name = ?", (profile_set.name,)).fetchone()
            stored = profile_set.model_copy(update={"version": (last[0] if last else 0) + 1})
            self._insert_version(db, stored, time.time(), digest)
            self._drop_old_versions(db, profile_set.name)
        return PutResult(stored, created=True)

    @staticmethod
    def _insert_version(db: sqlite3.Connection, profile_set: ProfileSet, created_at: float, digest: str | None = None) -> None:
        db.execute(
            "INSERT INTO profile_versions (name, version, created_at, digest, entry_count, body) VALUES (?, ?, ?, ?, ?, ?)",
            (profile_set.name, profile_set.version, created_at, digest or content_digest(profile_set),
             len(profile_set.entries), profile_set.model_dump_json(by_alias=True)),
        )
        db.execute(
            "INSERT INTO profile_names (name, last_version) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET last_version = MAX(last_version, excluded.last_version)",
            (profile_set.name, profile_set.version),
        )

    def get_profile_set(self, name: str, version: int | None = None) -> ProfileSet | None:
        """Version ``version`` of the set, or its newest when None; None when there is no such set or version."""
        if version is None:
            rows = self._execute("SELECT body FROM profile_versions WHERE name = ? ORDER BY version DESC LIMIT 1", (name,))
        else:
            rows = self._execute("SELECT body FROM profile_versions WHERE name = ? AND version = ?", (name, version))
        return ProfileSet.model_validate_json(rows[0][0]) if rows else None

    def profile_set_versions(self, name: str) -> list[ProfileSetVersion]:
        """The stored versions of ``name``, oldest first (empty when there is no such set)."""
        rows = self._execute(
            "SELECT v.version, v.created_at, v.entry_count, v.digest,"
            " (SELECT COUNT(*) FROM plans p WHERE p.profiles_name = v.name AND p.profiles_version = v.version)"
            " FROM profile_versions v WHERE v.name = ? ORDER BY v.version", (name,))
        return [ProfileSetVersion(version=v, created_at=_iso(at), entry_count=n, digest=d, plans=p)
                for v, at, n, d, p in rows]

    def delete_profile_version(self, name: str, version: int) -> bool:
        """Whether that version was there (and is now gone); VersionInUse when a stored plan names it."""
        with self._transaction() as db:
            count, ids = self._plans_naming(db, name, version, 3)
            if count:
                shown = ", ".join(ids) + (", ..." if count > len(ids) else "")
                raise VersionInUse(f"profile set '{name}' version {version} is named by {count} stored "
                                   f"plan{'s' if count > 1 else ''} ({shown}): delete {'them' if count > 1 else 'it'} first")
            return db.execute("DELETE FROM profile_versions WHERE name = ? AND version = ?", (name, version)).rowcount > 0

    def plans_of(self, topology: str, limit: int) -> list[Plan]:
        """The ``limit`` newest stored plans of a topology name, newest first; reading them is not using them."""
        rows = self._execute("SELECT body FROM plans WHERE topology = ? ORDER BY created_at DESC, id LIMIT ?",
                             (topology, limit))
        return [Plan.model_validate_json(body) for (body,) in rows]

    def profile_set_names(self) -> list[str]:
        return [name for (name,) in self._execute("SELECT DISTINCT name FROM profile_versions ORDER BY name")]

    # --- retention -------------------------------------------------------------------------------

    def apply_retention(self) -> RetentionResult:
        """Delete what ``self.retention`` does not keep, over every profile set (done at start)."""
        with self._transaction() as db:
            plans = self._drop_old_plans(db, time.time())
            names = [row[0] for row in db.execute("SELECT DISTINCT name FROM profile_versions")]
            versions = sum(self._drop_old_versions(db, name) for name in names)
        return RetentionResult(plans=plans, profile_versions=versions)

    def _drop_old_plans(self, db: sqlite3.Connection, now: float) -> int:
        days = self.retention.keep_plans_days
        if days is None:
            return 0
        dropped = db.execute("DELETE FROM plans WHERE used_at < ?", (now - days * SECONDS_PER_DAY,)).rowcount
        if dropped:
            log.info("deleted %d plan%s unused for %g days", dropped, "s" if dropped > 1 else "", days)
        return dropped

    def _drop_old_versions(self, db: sqlite3.Connection, name: str) -> int:
        keep = self.retention.keep_profile_versions
        if keep is None:
            return 0
        dropped = db.execute(
            "DELETE FROM profile_versions WHERE name = ? AND version NOT IN"
            " (SELECT version FROM profile_versions WHERE name = ? ORDER BY version DESC LIMIT ?)"
            " AND NOT EXISTS (SELECT 1 FROM plans p WHERE p.profiles_name = profile_versions.name"
            " AND p.profiles_version = profile_versions.version)",
            (name, name, keep)).rowcount
        if dropped:
            log.info("deleted %d old version%s of profile set %s (keeping the newest %d and those plans name)",
                     dropped, "s" if dropped > 1 else "", name, keep)
        return dropped

    # --- the ledger's tenants --------------------------------------------------------------------

    def put_tenant(self, record: TenantRecord) -> None:
        """Register (or replace) a topology's share of the cluster."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO tenants (topology, heartbeat_at, body) VALUES (?, ?, ?)",
                       (record.topology, record.heartbeat_at, record.model_dump_json()))

    def tenants(self, expire_before: float | None = None) -> list[TenantRecord]:
        """Every registration, after deleting those whose last heartbeat is older than ``expire_before`` (epoch s)."""
        with self._transaction() as db:
            if expire_before is not None:
                gone = db.execute("DELETE FROM tenants WHERE heartbeat_at < ?", (expire_before,)).rowcount
                if gone:
                    log.info("released %d tenant%s without a heartbeat", gone, "s" if gone > 1 else "")
            rows = db.execute("SELECT heartbeat_at, body FROM tenants ORDER BY topology").fetchall()
        # the column is the heartbeat's truth: a renewal rewrites only it, not every body (they hold whole requests)
        return [TenantRecord.model_validate_json(body).model_copy(update={"heartbeat_at": at}) for at, body in rows]

    def delete_tenant(self, topology: str) -> bool:
        with self._transaction() as db:
            return db.execute("DELETE FROM tenants WHERE topology = ?", (topology,)).rowcount > 0

    def alive_tenants(self, alive: list[str], now: float) -> tuple[list[str], list[str]]:
        """Renew the heartbeat of the listed registrations and release every other; (renewed, released)."""
        wanted = set(alive)
        renewed, released = [], []
        with self._transaction() as db:
            for (topology,) in db.execute("SELECT topology FROM tenants ORDER BY topology").fetchall():
                if topology in wanted:
                    db.execute("UPDATE tenants SET heartbeat_at = ? WHERE topology = ?", (now, topology))
                    renewed.append(topology)
                else:
                    db.execute("DELETE FROM tenants WHERE topology = ?", (topology,))
                    released.append(topology)
        return renewed, released

    def renew_all_tenants(self, now: float) -> int:
        """Give every registration a heartbeat at ``now``; the number renewed.

        Called at service start: heartbeats missed while the service itself was down say nothing of the tenants,
        so the ledger is not emptied by a restart; the plugin's next heartbeat releases those no longer running.
        """
        with self._transaction() as db:
            return db.execute("UPDATE tenants SET heartbeat_at = ? WHERE heartbeat_at < ?", (now, now)).rowcount

    # --- events: what happened to each topology --------------------------------------------------

    def add_event(self, topology: str, kind: EventKind, sentence: str, at: float | None = None) -> bool:
        """Record an event; False when the same one was recorded for the topology within ``REPEAT_QUIET_S``.

        Only the newest ``events_kept`` of each topology are kept.
        """
        now = time.time() if at is None else at
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM events WHERE topology = ? AND kind = ? AND sentence = ? AND at >= ?",
                          (topology, kind, sentence, now - REPEAT_QUIET_S)).fetchone() is not None:
                return False
            db.execute("INSERT INTO events (topology, at, kind, sentence) VALUES (?, ?, ?, ?)",
                       (topology, now, kind, sentence))
            db.execute("DELETE FROM events WHERE topology = ? AND seq <= (SELECT seq FROM events WHERE topology = ?"
                       " ORDER BY seq DESC LIMIT 1 OFFSET ?)", (topology, topology, self.events_kept))
        return True

    def events(self, topology: str, limit: int) -> list[TopologyEvent]:
        """The topology's ``limit`` newest events, the newest first."""
        rows = self._execute("SELECT at, kind, sentence FROM events WHERE topology = ? ORDER BY seq DESC LIMIT ?",
                             (topology, limit))
        return [TopologyEvent(at=iso_utc(at), kind=kind, sentence=sentence) for at, kind, sentence in rows]
