"""Stored plans and profile sets in one SQLite file, so both survive a restart of the service.

Rows hold the API's own JSON (the pydantic models of :mod:`planner.model`), so what a caller
reads back is exactly what was stored. One connection guarded by a lock serves every thread
of the service; WAL lets a second process (``hetsched`` on the command line, a backup) read
while the service writes.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from planner.model import Plan, ProfileSet

DB_ENV = "HETSCHED_DB"
DATA_HOME_ENV = "XDG_DATA_HOME"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    id TEXT PRIMARY KEY,
    topology TEXT NOT NULL,
    strategy TEXT NOT NULL,
    created_at REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS profile_sets (
    name TEXT PRIMARY KEY,
    updated_at REAL NOT NULL,
    body TEXT NOT NULL
);
"""


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


def default_db_path() -> Path:
    """``$HETSCHED_DB`` if set, else ``hetsched/hetsched.db`` in the user's data folder (``$XDG_DATA_HOME``, else
    ``~/.local/share``): outside any checkout, so a ``git clean`` or a fresh clone does not lose the plans."""
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV])
    data_home = os.environ.get(DATA_HOME_ENV) or str(Path.home() / ".local" / "share")
    return Path(data_home) / "hetsched" / "hetsched.db"


def new_plan_id() -> str:
    return uuid.uuid4().hex


class Storage:
    """Plans (by id) and profile sets (by name) in SQLite; safe to share between threads."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
            _create_private(self.path)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the plan database {self.path}: {exc}") from exc
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _execute(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"the plan database {self.path} failed: {exc}") from exc

    def save_plan(self, plan: Plan) -> Plan:
        """Store ``plan`` under a new id (or its own, if it has one) and return it with that id."""
        stored = plan if plan.id else plan.model_copy(update={"id": new_plan_id()})
        self._execute(
            "INSERT OR REPLACE INTO plans (id, topology, strategy, created_at, body) VALUES (?, ?, ?, ?, ?)",
            (stored.id, stored.topology, stored.strategy, time.time(), stored.model_dump_json()),
        )
        return stored

    def get_plan(self, plan_id: str) -> Plan | None:
        body = self.plan_json(plan_id)
        return Plan.model_validate_json(body) if body is not None else None

    def plan_json(self, plan_id: str) -> str | None:
        """The stored plan's JSON as it was stored (the service answers it without re-encoding)."""
        rows = self._execute("SELECT body FROM plans WHERE id = ?", (plan_id,))
        return rows[0][0] if rows else None

    def put_profile_set(self, profile_set: ProfileSet) -> ProfileSet:
        """Create or replace the profile set of that name."""
        self._execute(
            "INSERT OR REPLACE INTO profile_sets (name, updated_at, body) VALUES (?, ?, ?)",
            (profile_set.name, time.time(), profile_set.model_dump_json(by_alias=True)),
        )
        return profile_set

    def get_profile_set(self, name: str) -> ProfileSet | None:
        rows = self._execute("SELECT body FROM profile_sets WHERE name = ?", (name,))
        return ProfileSet.model_validate_json(rows[0][0]) if rows else None

    def profile_set_names(self) -> list[str]:
        return [name for (name,) in self._execute("SELECT name FROM profile_sets ORDER BY name")]
