"""The spouts: reliable emits (tuple ids, so ``topology.max.spout.pending`` applies), at a set rate or as fast as allowed."""
from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

from streamparse import ReliableSpout

from topologies import conf, inputs
from topologies.context import own_tasks, task_index
from topologies.pacing import Pacer
from topologies.rate_control import RATE_FILE, UNPACED, RateFile

MAX_IDLE_SLEEP_S = 0.05
"""Longest a paced spout sleeps inside one ``next_tuple`` call, so acks are never held up for long.

Each idle call is a multi-lang round trip (JSON both ways): at 5 ms the idle spout made about 170
a second, 0.04 of a core, a fifth of a 0.2-core machine, and that cost fell as the rate rose, so
the spout's profile had no positive slope. At 50 ms it makes about 20."""


class BenchmarkSpout(ReliableSpout):
    """Emits the values of :meth:`values` with tuple ids.

    ``hetsched.spout.rate`` (tuples/s for the whole component) sets a rate; each
    instance takes its share. Without it the spout emits one tuple per
    ``next_tuple`` call and Storm's flow control sets the pace.
    """

    profile = "spout"
    outputs = ["seq"]

    def initialize(self, storm_conf, context):
        self.task = task_index(context)
        rate = float(storm_conf.get(conf.SPOUT_RATE) or 0.0)
        instances = max(1, len(own_tasks(context)))
        self.pacer = Pacer(rate / instances, time.monotonic()) if rate > 0 else None
        self.rate_file = RateFile(str(storm_conf[RATE_FILE]), instances) if storm_conf.get(RATE_FILE) else None
        self.paused = False
        self.seq = 0
        self.source = self.values()

    def values(self) -> Iterator[list]:
        return ([n] for n in itertools.count())

    def next_tuple(self):
        if self.rate_file is not None:
            self.follow_rate_file()
        if self.paused:
            time.sleep(MAX_IDLE_SLEEP_S)
            return
        if self.pacer is None:
            self.emit_one()
            return
        now = time.monotonic()
        due = self.pacer.due(now)
        if due == 0:
            time.sleep(min(self.pacer.wait(now), MAX_IDLE_SLEEP_S))
            return
        for _ in range(due):
            self.emit_one()
        self.pacer.sent(due)

    def follow_rate_file(self) -> None:
        """Take a new rate from ``hetsched.spout.rate.file`` when it changed (0: pause)."""
        now = time.monotonic()
        rate = self.rate_file.poll(now)
        if rate is not None:
            self.paused = rate == 0
            self.pacer = Pacer(rate, now) if 0 < rate < UNPACED else None

    def emit_one(self) -> None:
        self.seq += 1
        self.emit(next(self.source), tup_id=self.seq)


class NumberSpout(BenchmarkSpout):
    """The micro-benchmarks' source: a sequence number per tuple."""


class SentenceSpout(BenchmarkSpout):
    """RollingCount's source: sentences of the generated text."""

    profile = "sentenceSpout"
    outputs = ["sentence"]

    def values(self):
        return ([sentence] for sentence in inputs.sentences(self.task))


class PageViewSpout(BenchmarkSpout):
    """UniqueVisitor's source: page view lines with Zipf-distributed URLs."""

    profile = "pageViewSpout"
    outputs = ["page_view"]

    def values(self):
        return ([line] for line in inputs.page_views(self.task))
