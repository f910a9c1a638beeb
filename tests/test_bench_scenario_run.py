"""The plumbing the live bench scenarios share (bench.scenario_run), with a stand-in cluster (no Storm)."""
from __future__ import annotations

import pytest

from bench import scenario_run
from bench.errors import BenchError
from bench.experiment import _Terminated
from cluster.errors import ClusterError


class FakeCluster:
    def __init__(self, running: bool, fails: bool = False) -> None:
        self.running, self.fails, self.downs = running, fails, 0

    def is_running(self) -> bool:
        return self.running

    def down(self) -> None:
        self.downs += 1
        if self.fails:
            raise ClusterError("cannot stop nimbus")


def test_a_bench_failure_ends_as_the_results_error_and_everything_is_stopped():
    data: dict = {"error": None}
    cluster, stopped = FakeCluster(running=True), []
    with scenario_run.recorded_errors(data, cluster, lambda: stopped.append(True)):
        raise BenchError("no profile set")
    assert (data["error"], cluster.downs, stopped) == ("no profile set", 1, [True])


def test_a_signal_is_recorded_as_an_interrupt_and_a_failed_shutdown_is_added_to_the_error():
    data: dict = {"error": None}
    cluster = FakeCluster(running=True, fails=True)
    with scenario_run.recorded_errors(data, cluster, lambda: None):
        raise _Terminated("signal SIGTERM")
    assert data["error"] == "interrupted (signal SIGTERM); cannot stop nimbus"


def test_a_plain_ctrl_c_is_recorded_as_one():
    data: dict = {"error": None}
    with scenario_run.recorded_errors(data, FakeCluster(running=False), lambda: None):
        raise KeyboardInterrupt
    assert data["error"] == "interrupted (Ctrl-C)"


def test_the_planner_stopped_is_the_one_the_body_last_started():
    data: dict = {"error": None}
    planners = ["first"]
    stopped: list[str] = []
    with scenario_run.recorded_errors(data, FakeCluster(running=False), lambda: stopped.append(planners[-1])):
        planners.append("strict")
    assert (stopped, data["error"]) == (["strict"], None)


def test_other_exceptions_still_raise_after_the_clean_up():
    cluster, stopped = FakeCluster(running=True), []
    with pytest.raises(ValueError):
        with scenario_run.recorded_errors({"error": None}, cluster, lambda: stopped.append(True)):
            raise ValueError("a bug")
    assert (cluster.downs, stopped) == (1, [True])


def test_unknown_or_no_schedulers_are_one_sentence_naming_the_known_ones():
    scenario_run.check_schedulers("machine-loss", ("planned",), ("planned", "default"))
    with pytest.raises(BenchError, match=r"^the machine-loss scenario runs planned, default; not sps$"):
        scenario_run.check_schedulers("machine-loss", ("sps",), ("planned", "default"))
    with pytest.raises(BenchError, match="; not none$"):
        scenario_run.check_schedulers("machine-loss", (), ("planned", "default"))
