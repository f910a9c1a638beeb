"""The topology config keys the components, the submit command and the Nimbus plugin share."""
from __future__ import annotations

CPU_MS_PREFIX = "hetsched.cpu.ms."
"""``hetsched.cpu.ms.<profile>``: CPU milliseconds a compute bolt of that profile spends per tuple."""

DEFAULT_CPU_MS = {"lowCompute": 2.0, "midCompute": 3.6, "highCompute": 6.6}
"""In the ratio of the paper's Table 3 (0.0581 : 0.103 : 0.1915 s, about 1 : 1.8 : 3.3) and large
enough that the work, not the multi-lang overhead, dominates a tuple's cost."""

SPOUT_RATE = "hetsched.spout.rate"
"""Tuples/s each spout component emits in total over its instances; absent or 0: as fast as
``topology.max.spout.pending`` lets it (Storm's flow control)."""

COMPONENT_PROFILES = "hetsched.component.profiles"
"""Map of component id -> profile key (kind of work), for profiling and the Nimbus plugin."""
PLAN_ID = "hetsched.plan.id"
PROFILES = "hetsched.profiles"
"""Name of the profile set the plan was made with."""
TOPOLOGY = "hetsched.topology"
"""The catalog name of the topology (linear, diamond, ...), whatever name it runs under."""

WINDOW_LENGTH_S = "hetsched.window.length.secs"
EMIT_FREQUENCY_S = "hetsched.emit.frequency.secs"
"""Sliding window of RollingCount and UniqueVisitor; emit frequency is also their tick period."""

SINK_LOG_INTERVAL_S = "hetsched.sink.log.secs"
DEFAULT_SINK_LOG_INTERVAL_S = 60.0

STATS_SAMPLE_RATE = "topology.stats.sample.rate"
MAX_SPOUT_PENDING = "topology.max.spout.pending"
TICK_FREQ_S = "topology.tick.tuple.freq.secs"
WORKERS = "topology.workers"

DEFAULT_STATS_SAMPLE_RATE = 1.0
"""Exact counts: profiling divides CPU by tuples executed."""
DEFAULT_MAX_SPOUT_PENDING = 100


def cpu_ms_key(profile: str) -> str:
    return f"{CPU_MS_PREFIX}{profile}"
PLANNER_URL = "hetsched.planner.url"
"""The planner service the plan came from."""
