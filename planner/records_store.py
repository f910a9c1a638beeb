"""The records store: worker metrics batches as JSON lines, partitioned by topology and day.

Workers post batches of per-executor samples (``POST /v1/metrics/batches``); each accepted batch
becomes one file ``<root>/topology=<name>/day=<YYYY-MM-DD>/<batch_id>.jsonl`` (Hive-style folders, so
Spark's partition discovery reads the root as one table). One file per batch makes a batch atomic
(:func:`planner.durable.write_atomic`: temp name, fsync, rename; 0600 in 0700 folders) and idempotent:
a batch id already on disk is a retry, answered as a duplicate and not written twice. The day is that
of the batch's earliest sample (UTC), so a retry after midnight lands on the same path.

The store is bounded (:class:`RecordsLimits`): past its size, or its retention, the oldest batches are deleted
and counted, so a full store costs old samples, never a refused or waiting worker.
"""
from __future__ import annotations

import heapq
import json
import logging
import math
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from planner.durable import private_folder, write_atomic

RECORDS_DIR_ENV = "HETSCHED_RECORDS_DIR"
RECORDS_FOLDER = "records"
MAX_RECORDS_PER_BATCH = 5_000
"""A worker ships at most a few hundred records at a time; more is a fault of the sender."""
DEFAULT_MAX_BATCH_BYTES = 4_000_000
DEFAULT_RECORDS_MAX_MB = 2_000.0
"""The store's default bound: days of samples of tens of topologies at the hook's 5 s interval (a record is ~0.6 kB)."""
RECORDS_MAX_MB_ENV = "HETSCHED_RECORDS_MAX_MB"
RECORDS_KEEP_DAYS_ENV = "HETSCHED_RECORDS_KEEP_DAYS"
RETENTION_CHECK_S = 60.0
"""How often an append also deletes batches past their retention (a whole walk is not needed per batch)."""

log = logging.getLogger("hetsched.service")

TOPOLOGY_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,199}$")
"""Names that are safe as one folder name; Storm's own rule already forbids / . : and \\ in them."""

Name = Field(min_length=1, max_length=200)


class WorkerIdentity(BaseModel):
    """The worker process that sent a batch."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(min_length=1, max_length=255)
    port: int = Field(ge=0, le=65535)
    pid: int = Field(gt=0, le=2**62)
    topology_id: str = Name


class WorkerRecord(BaseModel):
    """One executor's sample (docs/reference/profiling-records.md); counters are cumulative since the executor started.

    Fields the page does not name are kept as sent, so workers may add their own.
    """

    model_config = ConfigDict(extra="allow")

    source: Literal["worker", "lab"] = "worker"
    run_id: str = Name
    ts: float = Field(gt=0, allow_inf_nan=False, description="Sample time, unix seconds.")
    topology: str = Name
    component: str = Name
    profile: str = Name
    task_id: int = Field(ge=-(2**31), le=2**62)
    executor: list[int] | None = Field(default=None, min_length=2, max_length=2)
    pid: int = Field(gt=0, le=2**62)
    worker_id: str | None = Field(default=None, max_length=300)
    machine: str | None = Field(default=None, max_length=300)
    machine_type: str | None = Field(default=None, max_length=200)
    machine_cores: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    executed: float = Field(ge=0, allow_inf_nan=False)
    emitted: float = Field(ge=0, allow_inf_nan=False)
    executed_by_stream: dict[str, float] | None = None
    emitted_by_stream: dict[str, float] | None = None
    acked: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    failed: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cpu_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False, description=(
        "Absent where it cannot be measured whole (a shell executor whose subprocess is unknown): "
        "the aggregation then counts the record as missing:cpu_seconds instead of fitting too little CPU."))
    thread_cpu_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    subprocess_cpu_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    worker_cpu_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cpu_basis: Literal["thread", "machine", "shared"] | None = None

    @field_validator("executed_by_stream", "emitted_by_stream")
    @classmethod
    def _counts(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is not None:
            for stream, count in value.items():
                if not math.isfinite(count) or count < 0:
                    raise ValueError(f"stream '{stream}' has count {count}; counts are finite and at least 0")
        return value


class MetricsBatch(BaseModel):
    """The body of ``POST /v1/metrics/batches``."""

    model_config = ConfigDict(extra="forbid")

    batch_id: uuid.UUID
    worker: WorkerIdentity
    dropped: int = Field(ge=0, le=2**62, description="Records the worker's bounded buffer dropped so far (since it started).")
    records: list[WorkerRecord] = Field(min_length=1, max_length=MAX_RECORDS_PER_BATCH)


class BatchRefused(ValueError):
    """A batch that passes the schema but cannot be stored; the message is one sentence naming the fault."""


@dataclass(frozen=True)
class StoredBatch:
    batch_id: str
    path: Path
    records: int
    duplicate: bool


@dataclass
class WorkerTally:
    """What one worker process (host, port, pid) has sent since the service started."""

    topology_id: str
    batches: int = 0
    records: int = 0
    duplicates: int = 0
    dropped: int = 0
    last_batch_at: float = 0.0


@dataclass
class StoreTally:
    batches: int = 0
    records: int = 0
    duplicates: int = 0
    workers: dict[str, WorkerTally] = field(default_factory=dict)
    dropped_batches: int = 0
    """Stored batches deleted since the service started, the oldest first, to keep the store within its limits."""
    dropped_records: int = 0
    dropped_bytes: int = 0
    bytes: int = 0
    """What the store holds now (its batch files), bytes; known once the first batch since the start arrived."""


@dataclass(frozen=True)
class RecordsLimits:
    """How much the store keeps: ``max_bytes`` in all, and batches received within ``keep_days``; None: no bound."""

    max_bytes: int | None = int(DEFAULT_RECORDS_MAX_MB * 1_000_000)
    keep_days: float | None = None


@dataclass(order=True, frozen=True)
class StoredFile:
    received_at: float
    path: str
    size: int


def past_limits(oldest: StoredFile, files: int, total_bytes: int, limits: RecordsLimits, now: float) -> bool:
    """Whether the store's oldest file goes: it is past ``keep_days``, or the store is over ``max_bytes``.

    The last file is always kept, so a store smaller than one batch still holds the newest.
    """
    if files <= 1:
        return False
    expired = limits.keep_days is not None and oldest.received_at < now - limits.keep_days * 86_400
    return expired or (limits.max_bytes is not None and total_bytes > limits.max_bytes)


def default_records_dir(db_path: Path) -> Path:
    """``$HETSCHED_RECORDS_DIR`` if set, else ``records/`` next to the service's database."""
    configured = os.environ.get(RECORDS_DIR_ENV)
    return Path(configured) if configured else Path(db_path).parent / RECORDS_FOLDER


def batch_topology(batch: MetricsBatch) -> str:
    """The one topology name every record of ``batch`` carries (a worker runs one topology)."""
    names = sorted({r.topology for r in batch.records})
    if len(names) > 1:
        raise BatchRefused(f"the batch mixes records of topologies {', '.join(names)}; a worker runs one topology")
    name = names[0]
    if not TOPOLOGY_NAME.match(name):
        raise BatchRefused(f"topology name '{name}' cannot name a folder: use letters, digits, '_' and '-'")
    return name


def batch_day(batch: MetricsBatch) -> str:
    """The UTC day (YYYY-MM-DD) of the batch's earliest sample."""
    earliest = min(r.ts for r in batch.records)
    try:
        return datetime.fromtimestamp(earliest, tz=timezone.utc).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        raise BatchRefused(f"ts {earliest} is not a time a sample can have been taken") from None


def batch_lines(batch: MetricsBatch, received_at: float) -> str:
    """The batch's records as JSON lines, each with ``batch_id``, ``received_at`` and the worker's ``worker_dropped``."""
    extra = {"batch_id": str(batch.batch_id), "received_at": round(received_at, 3), "worker_dropped": batch.dropped}
    return "".join(
        json.dumps({**record.model_dump(exclude_none=True), **extra}, separators=(",", ":")) + "\n"
        for record in batch.records
    )


class RecordsStore:
    """Batches on disk under ``root``; safe to call from several threads of one process."""

    def __init__(self, root: Path, limits: RecordsLimits = RecordsLimits()):
        self.root = Path(root)
        self.limits = limits
        self.tally = StoreTally()
        self._lock = threading.Lock()
        self._files: list[StoredFile] | None = None  # a heap, oldest first; read from disk at the first append
        self._retention_checked = float("-inf")
        self._warned_at = float("-inf")

    def path_of(self, topology: str, day: str, batch_id: str) -> Path:
        return self.root / f"topology={topology}" / f"day={day}" / f"{batch_id}.jsonl"

    def find(self, topology: str, batch_id: str) -> Path | None:
        """The stored file of ``batch_id`` under ``topology``, whatever its day, or None."""
        folder = self.root / f"topology={topology}"
        if not folder.is_dir():
            return None
        return next(iter(folder.glob(f"day=*/{batch_id}.jsonl")), None)

    def append(self, batch: MetricsBatch, now: float | None = None) -> StoredBatch:
        """Store ``batch`` once: a batch id already stored is answered as a duplicate and left as it was."""
        topology = batch_topology(batch)
        day = batch_day(batch)
        batch_id = str(batch.batch_id)
        received_at = time.time() if now is None else now
        with self._lock:
            worker = self._worker(batch)
            worker.dropped = max(worker.dropped, batch.dropped)
            worker.last_batch_at = received_at
            existing = self.find(topology, batch_id)
            if existing is not None:
                worker.duplicates += 1
                self.tally.duplicates += 1
                return StoredBatch(batch_id, existing, len(batch.records), duplicate=True)
            private_folder(self.root)
            files = self._stored_files()
            path = write_atomic(self.path_of(topology, day, batch_id), batch_lines(batch, received_at))
            os.utime(path, (received_at, received_at))  # the file's time is its receipt: a restarted store orders by it
            size = path.stat().st_size
            heapq.heappush(files, StoredFile(received_at, str(path), size))
            self.tally.bytes += size
            worker.batches += 1
            worker.records += len(batch.records)
            self.tally.batches += 1
            self.tally.records += len(batch.records)
            self._keep_within_limits(received_at)
            return StoredBatch(batch_id, path, len(batch.records), duplicate=False)

    def _stored_files(self) -> list[StoredFile]:
        """The store's batch files as a heap, oldest first, read from disk once (a restarted service keeps its bound)."""
        if self._files is None:
            found = []
            for path in self.root.glob("topology=*/day=*/*.jsonl"):
                try:
                    info = path.stat()
                except FileNotFoundError:
                    continue
                found.append(StoredFile(info.st_mtime, str(path), info.st_size))
            heapq.heapify(found)
            self._files = found
            self.tally.bytes = sum(f.size for f in found)
        return self._files

    def _keep_within_limits(self, now: float) -> None:
        """Delete the oldest batches past the limits and count them; called with the lock held, after a write."""
        files = self._files or []
        over_size = self.limits.max_bytes is not None and self.tally.bytes > self.limits.max_bytes
        retention_due = self.limits.keep_days is not None and now - self._retention_checked >= RETENTION_CHECK_S
        if not (over_size or retention_due):
            return
        if retention_due:
            self._retention_checked = now
        batches_before, records_before = self.tally.dropped_batches, self.tally.dropped_records
        while files and past_limits(files[0], len(files), self.tally.bytes, self.limits, now):
            oldest = heapq.heappop(files)
            self._delete(Path(oldest.path), oldest.size)
        if self.tally.dropped_batches > batches_before and now - self._warned_at >= RETENTION_CHECK_S:
            self._warned_at = now  # a full store drops a batch per batch: say so once a minute, not each time
            log.warning("records store %s: deleted its %d oldest batches (%d records) to stay within %s; %d batches "
                        "deleted since the start", self.root, self.tally.dropped_batches - batches_before,
                        self.tally.dropped_records - records_before, self._limits_text(), self.tally.dropped_batches)

    def _delete(self, path: Path, size: int) -> None:
        try:
            records = path.read_bytes().count(b"\n")
            path.unlink()
        except FileNotFoundError:
            records = 0  # deleted by hand meanwhile
        self.tally.dropped_batches += 1
        self.tally.dropped_records += records
        self.tally.dropped_bytes += size
        self.tally.bytes -= size
        for folder in (path.parent, path.parent.parent):  # the day's and the topology's folder, once empty
            try:
                folder.rmdir()
            except OSError:
                break

    def _limits_text(self) -> str:
        parts = []
        if self.limits.max_bytes is not None:
            parts.append(f"{self.limits.max_bytes / 1_000_000:g} MB")
        if self.limits.keep_days is not None:
            parts.append(f"{self.limits.keep_days:g} days")
        return " and ".join(parts)

    def _worker(self, batch: MetricsBatch) -> WorkerTally:
        w = batch.worker
        key = f"{w.host}:{w.port}:{w.pid}"
        if key not in self.tally.workers:
            self.tally.workers[key] = WorkerTally(topology_id=w.topology_id)
        return self.tally.workers[key]

    def read(self, topology: str) -> list[dict[str, Any]]:
        """Every stored record of ``topology``, in file order (for tests and small checks; Spark reads the folder)."""
        folder = self.root / f"topology={topology}"
        out: list[dict[str, Any]] = []
        for path in sorted(folder.glob("day=*/*.jsonl")):
            out.extend(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
        return out
