"""Raw records as the aggregation job reads them (docs/profiling-records.md), written as JSON lines.

Besides the documented fields a record carries what the collector knows and the job ignores:
``process_cpu_seconds`` (the task's own Python process, psutil), ``cpu_basis`` (``machine``: the
task was alone on its machine and ``cpu_seconds`` is the machine's whole CPU; ``shared``: the
machine's CPU was shared out, :mod:`.attribution`), ``round`` and ``step``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from planner.durable import open_private_append
from spark_profiling.records import FIELD_NAMES


@dataclass(frozen=True)
class TaskSample:
    """One task's cumulative counters at one moment, with where it ran."""

    ts: float
    topology: str
    component: str
    profile: str
    task_id: int
    pid: int
    worker_id: str | None
    machine: str
    machine_type: str
    machine_cores: float
    rate_step: float
    executed: float
    emitted: float
    cpu_seconds: float
    machine_cpu_seconds: float
    machine_quota_cores: float | None
    process_cpu_seconds: float
    cpu_basis: str
    round: int
    step: int


def record(run_id: str, sample: TaskSample) -> dict[str, Any]:
    """The JSON object of one sample: the documented fields first, then the collector's own."""
    data = {"run_id": run_id, "source": "lab", **sample.__dict__}
    for optional in ("worker_id", "machine_quota_cores"):
        if data[optional] is None:
            del data[optional]
    ordered = {k: data[k] for k in FIELD_NAMES if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    return ordered


class RecordWriter:
    """Appends records to a JSON lines file (0600, its folder 0700 if new), one flushed line per record, so a
    stopped or killed run keeps what it had; fsynced when closed."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.count = 0
        self._file: IO[str] = open_private_append(self.path)

    def write(self, sample: TaskSample) -> None:
        self._file.write(json.dumps(record(self.run_id, sample)) + "\n")
        self._file.flush()
        self.count += 1

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        finally:
            self._file.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
