"""heldout-streamparse's components: sensor readings through a very cheap gate, an allocation-heavy window and a
compression bolt whose cost per tuple doubles at a known time.

Self-contained (streamparse and the standard library only): the topology jar carries this module alone, as
``resources/benchmarks/heldout/sensor_components.py``, and each worker runs
``streamparse_run benchmarks.heldout.sensor_components.<Class>``. Costs are real work, not a CPU-time target as
the catalog's compute bolts spin to, so their CPU per tuple depends on the machine.
"""
from __future__ import annotations

import random
import re
import time
import zlib
from collections import deque
from collections.abc import Mapping
from typing import Any

from streamparse import Bolt, ReliableSpout

SENSORS = 200
LOG_EVERY_S = 10.0

DOUBLE_AT = "heldout.double.at"
"""Topology conf: epoch seconds (UTC) from which the drift bolt's work per tuple doubles."""
DOUBLE_AFTER_S = "heldout.double.after.secs"
"""Topology conf: seconds after the topology's launch (the time in its Storm id, which a rebalance or a worker
restart keeps) from which the drift bolt's work per tuple doubles. :data:`DOUBLE_AT` wins where both are set;
neither: never (the default)."""
DRIFT_ROUNDS = "heldout.drift.rounds"
"""Topology conf: compression rounds per tuple of the drift bolt before the switch (default :data:`DEFAULT_DRIFT_ROUNDS`)."""
DEFAULT_DRIFT_ROUNDS = 16
WINDOW_SAMPLES = "heldout.window.samples"
"""Topology conf: readings per sensor the window bolt keeps and copies and sorts on every tuple."""
DEFAULT_WINDOW_SAMPLES = 4096
WINDOW_SCRATCH_BYTES = "heldout.window.scratch.bytes"
"""Topology conf: bytes of a fresh buffer the window bolt allocates and writes in full on every tuple."""
DEFAULT_WINDOW_SCRATCH_BYTES = 1 << 20

_LAUNCH_SECS = re.compile(r"-(\d{9,})$")


def launch_time(storm_id: str | None) -> float | None:
    """The launch time, epoch seconds, in a Storm topology id (``name-<n>-<launch secs>``), or None."""
    match = _LAUNCH_SECS.search(storm_id or "")
    return float(match.group(1)) if match else None


def switch_time(storm_conf: Mapping[str, Any]) -> float | None:
    """When the drift bolt's cost doubles, epoch seconds: ``heldout.double.at``, else the topology's launch plus
    ``heldout.double.after.secs``, else None (never). A setting that is not a number is an error, not "never"."""
    at = storm_conf.get(DOUBLE_AT)
    if at is not None:
        return float(at)
    after = storm_conf.get(DOUBLE_AFTER_S)
    if after is None:
        return None
    launched = launch_time(storm_conf.get("storm.id"))
    if launched is None:
        raise ValueError(f"{DOUBLE_AFTER_S} is set but the topology id {storm_conf.get('storm.id')!r} has no launch "
                         f"time; set {DOUBLE_AT} (epoch seconds) instead")
    return launched + float(after)


def cost_factor(now: float, switch_at: float | None) -> int:
    """1 before the switch, 2 from it on."""
    return 2 if switch_at is not None and now >= switch_at else 1


def compress_rounds(payload: bytes, rounds: int) -> int:
    """CRC of ``payload`` compressed ``rounds`` times (each round's input depends on the last round's output, so
    no round can be skipped): the drift bolt's work, linear in ``rounds``."""
    crc = 0
    for i in range(rounds):
        crc = zlib.crc32(zlib.compress(payload + crc.to_bytes(4, "little") + bytes([i & 0xFF]), 6), crc)
    return crc


def window_summary(history: deque, scratch_bytes: int) -> tuple[float, float, int]:
    """(median, p95) of a sensor's history, from a sorted copy, and a checksum of a fresh scratch buffer the size of
    ``scratch_bytes`` filled with the median: the allocation-heavy bolt's work (two list copies and a buffer a
    tuple, written in full, all garbage by the next)."""
    ordered = sorted(list(history))
    median = ordered[len(ordered) // 2]
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    stamp = int(median * 1000).to_bytes(8, "little", signed=True)
    scratch = bytearray(stamp * (scratch_bytes // 8))  # allocated and written in full
    return median, p95, sum(scratch[::4096])


class ReadingSpout(ReliableSpout):
    """Emits (sensor, value) readings with tuple ids as fast as Storm asks: ``topology.max.spout.pending`` is the
    only brake. Failed readings are replayed (up to three times); counts go to the worker log every ten seconds."""

    profile = "heldoutSensorSpout"
    outputs = ["sensor", "value"]

    def initialize(self, storm_conf, context):
        self.rng = random.Random(int(context.get("taskid", 0)))
        self.seq = 0
        self.acked = 0
        self.failed = 0
        self.next_log = time.monotonic() + LOG_EVERY_S

    def next_tuple(self):
        self.seq += 1
        sensor = f"s{int(self.rng.random() ** 2 * SENSORS)}"
        # mostly around 20, now and then a reading out of any sensor's range for the gate to drop
        value = self.rng.gauss(20.0, 5.0) if self.rng.random() > 0.05 else 1e6
        self.emit([sensor, value], tup_id=self.seq)
        self.report()

    def ack(self, tup_id):
        super().ack(tup_id)
        self.acked += 1
        self.report()

    def fail(self, tup_id):
        self.failed += 1
        super().fail(tup_id)

    def report(self):
        now = time.monotonic()
        if now >= self.next_log:
            self.next_log = now + LOG_EVERY_S
            self.log(f"heldout spout {self.component_name}:{self.task_id}: emitted {self.seq} acked {self.acked} "
                     f"failed {self.failed} pending {len(self.unacked_tuples)}")


class GateBolt(Bolt):
    """Very cheap: drops readings outside a plausible range (about one in twenty), passes the rest on."""

    profile = "heldoutGate"
    outputs = ["sensor", "value"]

    def process(self, tup):
        sensor, value = tup.values
        if -50.0 <= value <= 150.0:
            self.emit([sensor, value])


class WindowBolt(Bolt):
    """Fields-grouped on the sensor: keeps its last readings and, on every tuple, sorts a copy of them and fills a
    fresh scratch buffer (``heldout.window.samples``, ``heldout.window.scratch.bytes``): its cost is allocation and
    copying, and its memory grows with the sensors it has seen."""

    profile = "heldoutWindow"
    outputs = ["sensor", "median", "p95"]

    def initialize(self, storm_conf, context):
        self.samples = int(storm_conf.get(WINDOW_SAMPLES, DEFAULT_WINDOW_SAMPLES))
        self.scratch_bytes = int(storm_conf.get(WINDOW_SCRATCH_BYTES, DEFAULT_WINDOW_SCRATCH_BYTES))
        self.history: dict[str, deque] = {}

    def process(self, tup):
        sensor, value = tup.values
        history = self.history.get(sensor)
        if history is None:
            # a new sensor starts with a full window of its first reading, so every tuple costs the same
            history = self.history[sensor] = deque([value] * self.samples, maxlen=self.samples)
        history.append(value)
        median, p95, _ = window_summary(history, self.scratch_bytes)
        self.emit([sensor, median, p95])


class DriftBolt(Bolt):
    """The sink: compresses a record of each summary ``heldout.drift.rounds`` times, and twice as many times from
    the switch on (:func:`switch_time`), so its CPU per tuple doubles at a time the operator knows. It logs the
    switch when it happens and, every ten seconds, the tuples it processed at each cost."""

    profile = "heldoutDrift"
    outputs: list[str] = []

    def initialize(self, storm_conf, context):
        self.rounds = int(storm_conf.get(DRIFT_ROUNDS, DEFAULT_DRIFT_ROUNDS))
        self.switch_at = switch_time(storm_conf)
        self.factor = 1
        self.processed = [0, 0]
        self.next_log = time.monotonic() + LOG_EVERY_S
        if self.switch_at is not None:
            self.log(f"heldout drift {self.component_name}:{self.task_id}: {self.rounds} rounds a tuple, doubling at "
                     f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(self.switch_at))}")

    def process(self, tup):
        factor = cost_factor(time.time(), self.switch_at)
        if factor != self.factor:
            self.factor = factor
            self.log(f"heldout drift {self.component_name}:{self.task_id}: cost per tuple doubled "
                     f"({self.rounds} -> {self.rounds * factor} rounds)")
        sensor, median, p95 = tup.values
        record = f"{sensor}:{median:.4f}:{p95:.4f};".encode() * 512
        compress_rounds(record, self.rounds * factor)
        self.processed[factor - 1] += 1
        now = time.monotonic()
        if now >= self.next_log:
            self.next_log = now + LOG_EVERY_S
            self.log(f"heldout drift {self.component_name}:{self.task_id}: processed {self.processed[0]} at base cost, "
                     f"{self.processed[1]} at double cost")
