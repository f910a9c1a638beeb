"""The bolts: compute bolts that spend a set CPU time per tuple, and storm-benchmark's word and page-view bolts.

Every bolt counts the tuples it processed and logs the count now and then; a
bolt nobody subscribes to (a sink) does not emit, since an emit costs a
multi-lang message for nothing.
"""
from __future__ import annotations

import time

from streamparse import Bolt

from topologies import conf
from topologies.context import has_subscribers
from topologies.cpu import burn_cpu
from topologies.inputs import parse_page_view
from topologies.windows import SlidingCounts, SlidingSets, slot_count


class CountingBolt(Bolt):
    """Counts processed tuples; emits only where someone listens."""

    profile = ""

    def initialize(self, storm_conf, context):
        self.is_sink = not has_subscribers(context)
        self.processed = 0
        self.log_interval_s = float(storm_conf.get(conf.SINK_LOG_INTERVAL_S, conf.DEFAULT_SINK_LOG_INTERVAL_S))
        self.last_log = time.monotonic()
        self.setup(storm_conf)

    def setup(self, storm_conf) -> None:
        """Read this bolt's own settings from the topology config."""

    def forward(self, values) -> None:
        if not self.is_sink:
            self.emit(values)

    def counted(self) -> None:
        self.processed += 1
        now = time.monotonic()
        if self.log_interval_s > 0 and now - self.last_log >= self.log_interval_s:
            self.last_log = now
            role = "sink" if self.is_sink else "bolt"
            self.logger.info("%s %s processed %d tuples", role, self.component_name, self.processed)


class ComputeBolt(CountingBolt):
    """Spends ``hetsched.cpu.ms.<profile>`` milliseconds of its thread's CPU on each tuple, then passes it on."""

    outputs = ["seq"]

    def setup(self, storm_conf):
        cpu_ms = float(storm_conf.get(conf.cpu_ms_key(self.profile), conf.DEFAULT_CPU_MS[self.profile]))
        self.cpu_s = max(0.0, cpu_ms) / 1000.0

    def process(self, tup):
        burn_cpu(self.cpu_s)
        self.forward(tup.values)
        self.counted()


class LowCompute(ComputeBolt):
    profile = "lowCompute"


class MidCompute(ComputeBolt):
    profile = "midCompute"


class HighCompute(ComputeBolt):
    profile = "highCompute"


class SplitSentence(CountingBolt):
    """RollingCount's ``split``: one tuple per word of a sentence."""

    profile = "splitSentence"
    outputs = ["word"]

    def process(self, tup):
        for word in tup.values[0].split():
            self.forward([word])
        self.counted()


class WindowedBolt(CountingBolt):
    """Keeps a sliding window, emits its contents on every tick tuple."""

    default_window_length_s = 300
    default_emit_frequency_s = 60

    def setup(self, storm_conf):
        # storm-benchmark's bolts do next to no work per tuple; a bench that needs the counting to be the bottleneck
        # (skewed keys, issue 33) adds CPU per tuple with hetsched.cpu.ms.<profile> (default 0: the original).
        self.cpu_s = max(0.0, float(storm_conf.get(conf.cpu_ms_key(self.profile), 0.0))) / 1000.0
        length = float(storm_conf.get(conf.WINDOW_LENGTH_S, self.default_window_length_s))
        frequency = float(storm_conf.get(conf.EMIT_FREQUENCY_S, self.default_emit_frequency_s))
        self.window_slots = slot_count(length, frequency)
        self.new_window(self.window_slots)

    def new_window(self, slots: int) -> None:
        raise NotImplementedError


class RollingCount(WindowedBolt):
    """RollingCount's ``rolling_count``: each word's count over the sliding window (storm-benchmark: 300 s, every 60 s)."""

    profile = "rollingCount"
    outputs = ["obj", "count"]
    config = {conf.TICK_FREQ_S: WindowedBolt.default_emit_frequency_s}

    def new_window(self, slots):
        self.window = SlidingCounts(slots)

    def process(self, tup):
        burn_cpu(self.cpu_s)
        self.window.add(tup.values[0])
        self.counted()

    def process_tick(self, tup):
        for word, count in self.window.totals_then_advance().items():
            self.forward([word, count])


class PageViewBolt(CountingBolt):
    """UniqueVisitor's ``view``: the (url, user) of each page view."""

    profile = "pageView"
    outputs = ["url", "user_id"]

    def process(self, tup):
        view = parse_page_view(tup.values[0])
        if view is not None:
            self.forward(list(view))
        self.counted()


class UniqueVisitors(WindowedBolt):
    """UniqueVisitor's ``uniquer``: distinct visitors of each URL over the sliding window (storm-benchmark: 9 s, every 3 s)."""

    profile = "uniqueVisitor"
    outputs = ["url", "unique_visitor"]
    default_window_length_s = 9
    default_emit_frequency_s = 3
    config = {conf.TICK_FREQ_S: default_emit_frequency_s}

    def new_window(self, slots):
        self.window = SlidingSets(slots)

    def process(self, tup):
        burn_cpu(self.cpu_s)
        url, user = tup.values[0], tup.values[1]
        self.window.add(url, user)
        self.counted()

    def process_tick(self, tup):
        for url, visitors in self.window.sizes_then_advance().items():
            self.forward([url, visitors])
