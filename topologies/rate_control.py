"""A spout's rate changed while it runs, through a small JSON file the spout re-reads.

Profiling steps the input rate of one running topology up (``hetsched profile``):
resubmitting it for every step would cost a worker start each time. With
``hetsched.spout.rate.file`` in the topology config, a paced spout checks the
file's modification time about twice a second and, when it changed, takes
``{"rate": R}`` (tuples/s for the whole component, R >= 0; 0 pauses it) as its
new rate; ``{"rate": null}`` leaves it unpaced (Storm's ``topology.max.spout.pending``
sets its pace). The file must be on the machine the spout runs on (a local cluster).
"""
from __future__ import annotations

import json
import math
import os

from topologies.conf import SPOUT_RATE_FILE

RATE_FILE = SPOUT_RATE_FILE
"""Topology config key: path of the rate file."""

CHECK_EVERY_S = 0.5


UNPACED = math.inf
"""What ``RateFile.poll`` gives for ``{"rate": null}``, and what ``write_rate`` takes to write it."""


def write_rate(path: str | os.PathLike, rate: float) -> None:
    """Set the rate (tuples/s, whole component; UNPACED for none) atomically, so a spout never reads half a file."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w") as f:
        json.dump({"rate": None if rate == UNPACED else float(rate)}, f)
    os.replace(tmp, path)


class RateFile:
    """What one spout instance reads: its share of the component's rate, when the file changes."""

    def __init__(self, path: str, instances: int) -> None:
        self.path = path
        self.instances = max(1, instances)
        self._mtime: int | None = None
        self._next_check = 0.0

    def poll(self, now: float) -> float | None:
        """This instance's new rate (tuples/s) if the file changed since the last look, else None."""
        if now < self._next_check:
            return None
        self._next_check = now + CHECK_EVERY_S
        try:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime == self._mtime:
                return None
            with open(self.path) as f:
                value = json.load(f)["rate"]
            rate = UNPACED if value is None else float(value)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self._mtime = mtime
        return max(0.0, rate) / self.instances
