"""The topology config keys the components, the submit command and the Nimbus plugin share."""
from __future__ import annotations

CPU_MS_PREFIX = "hetsched.cpu.ms."
"""``hetsched.cpu.ms.<profile>``: CPU milliseconds a compute bolt of that profile spends per tuple."""

DEFAULT_CPU_MS = {"lowCompute": 5.0, "midCompute": 9.0, "highCompute": 16.5}
"""In the ratio of the paper's Table 3 (0.0581 : 0.103 : 0.1915 s, about 1 : 1.8 : 3.3) and large
enough that the work, not the multi-lang overhead, dominates a tuple's cost. The overhead (JSON in
and out, emit, ack) is about 0.05 ms per tuple on an idle core but 0.25-0.35 ms on a busy host,
where a bolt is preempted during its work and finds its caches cold afterwards
(benchmarks/topology_cpu_per_tuple.py): under 10% of 5 ms even then."""

SPOUT_RATE = "hetsched.spout.rate"
"""Tuples/s each spout component emits in total over its instances; absent or 0: as fast as
``topology.max.spout.pending`` lets it (Storm's flow control)."""
SPOUT_RATE_FILE = "hetsched.spout.rate.file"
"""A JSON file ``{"rate": R}`` the paced spout re-reads for a new rate while it runs (topologies/rate_control.py)."""

COMPONENT_PROFILES = "hetsched.component.profiles"
"""Map of component id -> profile key (kind of work), for profiling and the Nimbus plugin."""
PLAN_ID = "hetsched.plan.id"
SPARE_TASKS = "hetsched.spare.tasks"
"""Tasks per executor at submit (a factor, at least 1): Storm fixes a component's task count at submit and a rebalance
can raise its executor count only up to it, so spare tasks let ``hetsched replan`` add executors later. Each task of a
Python component is its own subprocess, so the default is 1 (no spare tasks)."""
TASKS = "topology.tasks"
PROFILES = "hetsched.profiles"
"""Name of the profile set the plan was made with."""
MIN_RATE = "hetsched.min.rate"
"""A tenant's guaranteed minimum input rate, tuples/s (issue 16)."""
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

IDLE_WAIT = {
    "topology.bolt.wait.progressive.level2.count": 0,
    "topology.backpressure.wait.progressive.level2.count": 0,
}
"""An idle executor sleeps 1 ms at a time instead of first parking 1000 times for 100 us: with
Storm's default the parking alone cost the worker JVM about 10 ms of CPU per tuple of a slow
Linear topology (2 ms with this), which a machine of a fraction of a core cannot spare."""

DEFAULT_STATS_SAMPLE_RATE = 1.0
"""Exact counts: profiling divides CPU by tuples executed."""
DEFAULT_MAX_SPOUT_PENDING = 100


def cpu_ms_key(profile: str) -> str:
    return f"{CPU_MS_PREFIX}{profile}"
PLANNER_URL = "hetsched.planner.url"
"""The planner service the plan came from."""

METRICS_URL = "hetsched.metrics.url"
"""The planning service the workers' task hook (org.hetsched.storm.metrics.MetricsHook) posts its records to;
absent: ``hetsched.planner.url``."""
METRICS_INTERVAL_S = "hetsched.metrics.interval.secs"
"""Seconds between two samples of every executor by the task hook (default 5)."""
METRICS_TOKEN = "hetsched.metrics.token"
"""The topology's own records token (``POST /v1/metrics/tokens``): its workers post this topology's records with it
and can do nothing else with the planner; set by ``hetsched submit`` where the planner hands one out."""
METRICS_BUFFER_RECORDS = "hetsched.metrics.buffer.records"
"""Records a worker keeps while the service cannot be reached; beyond it the oldest are dropped and counted."""
TASK_HOOKS = "topology.auto.task.hooks"
METRICS_HOOK_CLASS = "org.hetsched.storm.metrics.MetricsHook"
MULTILANG_LOG_HANDLER = "topology.multilang.log.handler"
PID_LOG_HANDLER_CLASS = "org.hetsched.storm.metrics.PidRecordingLogHandler"
"""Storm's default multilang log handler that also tells the metrics hook each shell subprocess's pid."""
