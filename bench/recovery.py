"""Where the seconds of a recovery go: the steps after a machine is killed, read from Storm's own logs. Pure.

The machine-loss bench sees from outside when the rate came back (``recovered_s``); this says what took the time in
between, each step in seconds after the kill, from the timestamped lines Storm 2.8's daemons write anyway:

- ``dead_s``: Nimbus declares the lost executors dead (``Executor <id>:[..] not alive``: its task timeout);
- ``assigned_s``: Nimbus stores the topology's new assignment (``Setting new assignment for topology id``), which
  the scheduler made in that round (the plugin's contingency or repair, Storm's own placement);
- ``launched_s``: the last surviving machine's supervisor has created the worker it was assigned (``Created Worker
  ID``);
- ``jvm_up_s``: the last new worker's JVM writes its first line;
- ``ready_s``: the last executor of the new workers is ready (``Prepared bolt``, ``Opened spout``: a shell
  component's subprocess is started and has answered).

Each is ``None`` where no such line came between the kill and the return (a scheduler that placed nothing, a worker
that never started). The lines are read in the host's local time, as Storm writes them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}) ")
NOT_ALIVE = re.compile(r"Executor (\S+):\[[^\]]*\] not alive")
NEW_ASSIGNMENT = re.compile(r"Setting new assignment for topology id (\S+?):?\s")
WORKER_CREATED = re.compile(r"Created Worker ID")
JVM_UP = re.compile(r"ConfigValidation .*Will use|Launching worker for ")
READY = re.compile(r"Prepared bolt|Opened spout|Activating spout")
STEPS = ("dead_s", "assigned_s", "launched_s", "jvm_up_s", "ready_s")


@dataclass(frozen=True)
class Logs:
    """The log texts the steps are read from (``workers``: the topology's worker logs on the surviving machines)."""

    nimbus: str
    supervisors: tuple[str, ...]
    workers: tuple[str, ...]


def stamp(line: str) -> float | None:
    """The POSIX time of a Storm log line (local time), or None for a line without one (a stack trace's)."""
    found = STAMP.match(line)
    if found is None:
        return None
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()


def _stamped(text: str, start: float, end: float) -> Iterable[tuple[float, str]]:
    for line in text.splitlines():
        at = stamp(line)
        if at is not None and start <= at <= end:
            yield at, line


def _first(text: str, pattern: re.Pattern, start: float, end: float, topology_id: str | None = None) -> float | None:
    for at, line in _stamped(text, start, end):
        found = pattern.search(line)
        if found and (topology_id is None or not found.groups() or found.group(1).startswith(topology_id)):
            return at
    return None


def _last_first(texts: Iterable[str], pattern: re.Pattern, start: float, end: float) -> float | None:
    """The latest over the texts of each one's first matching line (when the last of them got there)."""
    firsts = [at for at in (_first(t, pattern, start, end) for t in texts) if at is not None]
    return max(firsts, default=None)


def _last(texts: Iterable[str], pattern: re.Pattern, start: float, end: float) -> float | None:
    return max((at for t in texts for at, line in _stamped(t, start, end) if pattern.search(line)), default=None)


def steps(logs: Logs, topology_id: str, killed_at: float, returned_at: float) -> dict[str, float | None]:
    """Each step's seconds after the kill (``killed_at``, ``returned_at``: POSIX times), rounded to 0.1 s."""
    found = {
        "dead_s": _first(logs.nimbus, NOT_ALIVE, killed_at, returned_at, topology_id),
        "assigned_s": _first(logs.nimbus, NEW_ASSIGNMENT, killed_at, returned_at, topology_id),
        "launched_s": _last_first(logs.supervisors, WORKER_CREATED, killed_at, returned_at),
        "jvm_up_s": _last_first(logs.workers, JVM_UP, killed_at, returned_at),
        "ready_s": _last(logs.workers, READY, killed_at, returned_at),
    }
    return {k: None if at is None else round(at - killed_at, 1) for k, at in found.items()}
