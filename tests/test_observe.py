"""The observation layer: counts parsed from Thrift, rates between each executor's own stats steps,
Nimbus failures as one sentence, reporters, and the local cluster's handle."""
from __future__ import annotations

import logging
import socket

import pytest
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from streamparse.thrift import storm_thrift as st

from cluster.handle import LocalClusterHandle
from cluster.local import LocalCluster
from cluster.spec import load_spec
from observe.counts import ALL_TIME, parse_topology_info
from observe.machines import ClusterHandle, machine_of_host
from observe.nimbus import Nimbus, NimbusAddress, NimbusError, cluster_summary, parse_address, try_summary
from observe.progress import QuietReporter, Reporter, RichReporter
from observe.rates import CountSample, component_rates, executor_rates, executor_windows, interpolate, unmeasured
from topologies.errors import TopologyError

SPOUT_STREAM = st.GlobalStreamId(componentId="spout", streamId="default")
TICK = st.GlobalStreamId(componentId="__system", streamId="__tick")


def spout(task: int, emitted: int, acked: int = 0, failed: int = 0, host: str = "127.0.0.2", uptime: int = 10):
    stats = st.ExecutorStats(
        emitted={ALL_TIME: {"default": emitted, "__ack_init": emitted}},
        transferred={ALL_TIME: {"default": emitted, "__ack_init": emitted}},
        specific=st.ExecutorSpecificStats(spout=st.SpoutStats(
            acked={ALL_TIME: {"default": acked}}, failed={ALL_TIME: {"default": failed}}, complete_ms_avg={})),
        rate=1.0,
    )
    return st.ExecutorSummary(executor_info=st.ExecutorInfo(task, task), component_id="spout", host=host, port=6700,
                              uptime_secs=uptime, stats=stats)


def bolt(component: str, task: int, executed: int, acked: int | None = None, host: str = "127.0.0.3", uptime: int = 10):
    stats = st.ExecutorStats(
        emitted={ALL_TIME: {"default": executed}}, transferred={ALL_TIME: {"default": 2 * executed}},
        specific=st.ExecutorSpecificStats(bolt=st.BoltStats(
            acked={ALL_TIME: {SPOUT_STREAM: executed if acked is None else acked}}, failed={},
            process_ms_avg={}, executed={ALL_TIME: {SPOUT_STREAM: executed, TICK: 7}}, execute_ms_avg={})),
        rate=1.0,
    )
    return st.ExecutorSummary(executor_info=st.ExecutorInfo(task, task), component_id=component, host=host, port=6701,
                              uptime_secs=uptime, stats=stats)


def info(*executors, status: str = "hetsched: placed"):
    acker = st.ExecutorSummary(executor_info=st.ExecutorInfo(99, 99), component_id="__acker", host="127.0.0.2",
                               port=6700, uptime_secs=10, stats=None)
    return st.TopologyInfo(id="t-1", name="t", uptime_secs=10, executors=[*executors, acker], status="ACTIVE",
                           errors={}, sched_status=status)


# ---- counts -------------------------------------------------------------------------------------


def test_counts_leave_storms_own_streams_and_components_out():
    counts = parse_topology_info(info(spout(1, 50, acked=45, failed=2), bolt("low", 2, 40, acked=38)))
    first, low = counts.executors[1], counts.executors[2]
    assert (first.is_spout, first.emitted, first.transferred, first.acked, first.failed) == (True, 50, 50, 45, 2)
    assert (low.is_spout, low.executed, low.acked, low.emitted, low.transferred) == (False, 40, 38, 40, 80)
    assert (low.handled, low.processed, first.handled, first.processed) == (40, 38, 50, 50)
    assert counts.system == {"__acker": ["127.0.0.2"]} and counts.scheduler_status == "hetsched: placed"
    assert counts.totals() == {"spout": 50, "low": 40} and counts.placed


def test_an_executor_without_stats_or_host_counts_zero_and_is_not_placed():
    unplaced = st.ExecutorSummary(executor_info=st.ExecutorInfo(3, 4), component_id="mid", host="", port=0,
                                  uptime_secs=0, stats=None)
    counts = parse_topology_info(info(unplaced))
    assert counts.executors[3].handled == 0 and counts.executors[3].task_end == 4
    assert not counts.placed


# ---- rates --------------------------------------------------------------------------------------


def phased_samples(seconds: float = 40.0, every_s: float = 0.5) -> list[CountSample]:
    """Two executors of one bolt at 3 and 1 tuples/s whose workers report every 10 s, at different phases."""
    samples = []
    for tick in range(int(seconds / every_s) + 1):
        t = tick * every_s
        a = 30 * int(t // 10)           # reports at 10, 20, 30, 40
        b = 10 * int((t + 3) // 10)     # reports at 7, 17, 27, 37
        samples.append(CountSample(t, parse_topology_info(info(bolt("low", 1, a), bolt("low", 2, b)))))
    return samples


def test_each_executor_is_measured_between_its_own_steps():
    [low] = component_rates(phased_samples(), {"low": "sink"})
    assert low.per_second == pytest.approx(3.0 + 1.0)
    assert (low.executors, low.measured_executors, low.tuples) == (2, 2, 90 + 30)
    assert low.window_s == pytest.approx(30.0)


def test_summed_counts_over_a_fixed_window_are_biased_where_executors_report_out_of_phase():
    """Why per-executor steps: differencing the component's summed counts over 25 s sees 2 of executor 1's
    reports and 2 of executor 2's, yet divides by the whole window."""
    samples = [s for s in phased_samples() if s.at <= 25.0]
    summed = (samples[-1].counts.totals()["low"] - samples[0].counts.totals()["low"]) / (samples[-1].at - samples[0].at)
    [low] = component_rates(samples, {"low": "sink"})
    assert summed == pytest.approx(3.2), "the naive estimate is 20 % low"
    assert low.per_second == pytest.approx(4.0)


def test_each_executor_keeps_its_own_rate_and_host_which_the_component_sums():
    """A bolt whose queue grows on a throttled machine handles less than its even share: the component's sum hides
    it, the executor's own rate shows it."""
    samples = [CountSample(t * 0.5, parse_topology_info(info(
        bolt("low", 1, 30 * int(t * 0.5 // 10), host="127.0.0.3"), bolt("low", 2, 10 * int((t * 0.5 + 3) // 10),
                                                                       host="127.0.0.4"),
        bolt("other", 5, 10 * int(t * 0.5 // 10))))) for t in range(81)]
    slow_first = [(r.component, r.task_start, r.host, r.tuples, r.per_second)
                  for r in executor_rates(samples, {"low": "sink"})]
    assert slow_first == [("low", 1, "127.0.0.3", 90, pytest.approx(3.0)), ("low", 2, "127.0.0.4", 30, pytest.approx(1.0))]
    [low] = component_rates(samples, {"low": "sink"})
    assert low.per_second == pytest.approx(sum(r[4] for r in slow_first))


def test_a_step_is_dated_midway_between_the_samples_around_it():
    windows = executor_windows(phased_samples())
    assert windows[1].first.at == pytest.approx(9.75) and windows[1].last.at == pytest.approx(39.75)
    assert windows[2].first.at == pytest.approx(6.75)


def test_an_executor_that_never_steps_twice_counts_nothing_and_is_named():
    samples = [CountSample(float(t), parse_topology_info(info(bolt("high", 1, 5 if t > 3 else 0))))
               for t in range(10)]
    rates = component_rates(samples, {"high": "sink", "absent": "bolt"})
    assert [(r.component, r.executors, r.measured_executors, r.per_second) for r in rates] == [
        ("high", 1, 0, 0.0), ("absent", 0, 0, 0.0)]
    assert unmeasured(rates) == ["high", "absent"]


def test_a_chosen_count_is_measured_and_acks_and_failures_follow_the_same_steps():
    samples = [CountSample(float(t), parse_topology_info(info(spout(1, 10 * (t // 5), acked=9 * (t // 5)),
                                                              bolt("low", 2, 10 * (t // 5), acked=8 * (t // 5)))))
               for t in range(21)]
    spout_rate, low = component_rates(samples, {"spout": "spout", "low": "sink"}, lambda e: e.processed)
    assert (spout_rate.tuples, spout_rate.acked) == (30, 27)
    assert (low.tuples, low.per_second) == (24, pytest.approx(24 / 15))


def test_cumulative_readings_are_interpolated_between_samples():
    readings = [(0.0, 1.0), (1.0, 3.0), (3.0, 4.0)]
    assert [interpolate(readings, t) for t in (-1.0, 0.5, 2.0, 9.0)] == [1.0, 2.0, 3.5, 4.0]
    with pytest.raises(ValueError):
        interpolate([], 1.0)


# ---- Nimbus ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_nimbus_is_one_sentence_naming_where_it_was_looked_for():
    port = free_port()
    with pytest.raises(NimbusError) as fault:
        Nimbus(NimbusAddress("127.0.0.1", port, "$HETSCHED_NIMBUS"))
    assert str(fault.value).startswith(f"cannot reach Nimbus at 127.0.0.1:{port} (from $HETSCHED_NIMBUS): ")
    assert "\n" not in str(fault.value)
    assert try_summary(NimbusAddress("127.0.0.1", port)) is None
    assert TopologyError is NimbusError, "the topologies' error is the Nimbus client's"


def test_a_connection_dropped_mid_call_is_retried_then_named():
    """A server that accepts and hangs up at once: every attempt fails, the last one is reported."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = NimbusAddress("127.0.0.1", server.getsockname()[1], "the test")
        nimbus = Nimbus(address, timeout_ms=2000, retries=1)
        try:
            with pytest.raises(NimbusError, match=r"^lost the connection to Nimbus at 127\.0\.0\.1:\d+ \(from the test\) "
                                                  r"while trying to read the cluster summary"):
                nimbus.summary()
        finally:
            nimbus.close()


@pytest.mark.parametrize("text, fault", [("nimbus:x", "is not host:port"), ("nimbus:0", "is not host:port"), (":6627", "is not host:port")])
def test_bad_addresses_are_refused(text, fault):
    with pytest.raises(NimbusError, match=fault):
        parse_address(text)
    assert parse_address("nimbus").port == 6627


def test_a_blacklisted_supervisor_is_read_from_storm_2s_field_12():
    """Seen live: medium-1, back after a kill, was blacklisted for 30 min; plans that named it were not used."""
    from thriftpy2.utils import deserialize, serialize

    sent = st.SupervisorSummary(host="127.0.0.3", uptime_secs=5, num_workers=2, num_used_workers=0, supervisor_id="s2")
    sent.blacklisted = True
    got = deserialize(st.ClusterSummary(), serialize(st.ClusterSummary(supervisors=[sent], topologies=[], nimbuses=[])))
    assert [s.blacklisted for s in cluster_summary(got).supervisors] == [True]
    sent.blacklisted = None  # an older Nimbus leaves it out
    got = deserialize(st.ClusterSummary(), serialize(st.ClusterSummary(supervisors=[sent], topologies=[], nimbuses=[])))
    assert [s.blacklisted for s in cluster_summary(got).supervisors] == [False]


def test_a_cluster_summary_is_plain_data():
    summary = cluster_summary(st.ClusterSummary(
        supervisors=[st.SupervisorSummary(host="127.0.0.2", uptime_secs=5, num_workers=2, num_used_workers=1,
                                          supervisor_id="s1", total_resources={"cpu.pcore.percent": 20.0})],
        topologies=[st.TopologySummary(id="t-1", name="t", num_tasks=4, num_executors=4, num_workers=1,
                                       uptime_secs=3, status="ACTIVE", sched_status="hetsched: placed")],
        nimbuses=[st.NimbusSummary(host="127.0.0.1", port=6627, uptime_secs=9, isLeader=True, version="2.8.3")],
    ))
    assert summary.leader == "127.0.0.1:6627"
    assert summary.supervisors[0].cpu_capacity == 20.0 and summary.supervisors[0].memory_capacity_mb is None
    assert summary.topologies[0].scheduler_status == "hetsched: placed"


# ---- reporters ------------------------------------------------------------------------------------


def test_the_quiet_reporter_logs_and_the_rich_one_fills_its_bar(caplog):
    quiet: Reporter = QuietReporter()
    with caplog.at_level(logging.INFO, logger="observe.progress"):
        quiet.status("hidden")
        quiet.log("kept")
        quiet.progress(1.0, 2.0)
    assert [r.getMessage() for r in caplog.records] == ["kept"]

    console = Console(record=True, width=80, force_terminal=False)
    with Progress(TextColumn("{task.description}"), BarColumn(), console=console, transient=True) as bar:
        rich: Reporter = RichReporter(bar)
        rich.status("round 1")
        rich.progress(30.0, 120.0)
        task = bar.tasks[0]
        assert (task.description, task.completed, task.total) == ("round 1", 30.0, 120.0)
        rich.progress(200.0, 120.0)
        assert bar.tasks[0].total == 200.0, "an estimate passed is never below what is done"
        rich.log("a line that stays")
    assert "a line that stays" in console.export_text()


# ---- the local cluster's handle ------------------------------------------------------------------------


def test_the_local_handle_names_its_machines_and_nimbus(tmp_path):
    cluster = LocalCluster(load_spec(), home=tmp_path / "home", port_base=23000)
    handle: ClusterHandle = LocalClusterHandle(cluster)
    machines = handle.machines()
    assert [(m.id, m.type, m.cores) for m in machines] == [(m.id, m.type, m.cpu_cores) for m in cluster.layout.machines]
    assert machine_of_host(handle) == {m.host: m.id for m in cluster.layout.machines}
    assert (handle.nimbus.host, handle.nimbus.port) == (cluster.layout.nimbus_host, cluster.layout.nimbus_port)
    assert str(tmp_path / "home") in handle.name and handle.nimbus.source == handle.name
    assert handle.processes(machines[0].id) == [], "a cluster that is not running has no worker processes"
    assert handle.task_processes(machines[0].id, "t-1") == {}
    assert handle.cpu_quota_cores(machines[0].id) is None, "not running: no quota is enforced"
