"""Drained re-placement (observe.replacement) against a scripted Nimbus: the order of the steps, the drain, the counts."""
from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from observe.counts import ExecutorCounts, TopologyCounts
from observe.replacement import ReplacementError, SpoutTally, placement_matches, replace_drained


@dataclass
class Summary:
    id: str
    name: str
    status: str


def _executor(component: str, task: int, host: str, spout: bool = False, emitted=0, acked=0, failed=0, uptime=10):
    return ExecutorCounts(component=component, task_start=task, task_end=task, host=host, port=6700, uptime_s=uptime,
                          is_spout=spout, emitted=emitted, transferred=emitted, executed=0 if spout else emitted,
                          acked=acked, failed=failed)


class ScriptedNimbus:
    """A topology 'lin' (spout, bolt x1) on host-a; the rebalance moves it as ``after`` says; spouts drain over reports."""

    def __init__(self, in_flight_reports: int, after: dict[str, list[str]], status_polls_rebalancing: int = 2):
        self.calls: list[tuple] = []
        self.clock = 0.0
        self.status = "ACTIVE"
        self.reports_left = in_flight_reports
        self.after = after
        self.rebalancing_polls = status_polls_rebalancing
        self.rebalanced_for = 0.0
        self.activated_after = None
        self.counts_now = TopologyCounts("hetsched: placed by planner", {
            1: _executor("spout", 1, "host-a", spout=True, emitted=100, acked=90, failed=2, uptime=10),
            2: _executor("bolt", 2, "host-a", emitted=90)}, {})

    def find(self, name):
        if self.status == "REBALANCING":
            self.rebalancing_polls -= 1
            if self.rebalancing_polls <= 0:
                self.status = "INACTIVE"
        return Summary("lin-1", name, self.status)

    def topology_conf(self, topology_id):
        return {"topology.message.timeout.secs": 30, "executor.metrics.frequency.secs": 1}

    def counts(self, topology_id):
        return self.counts_now

    def deactivate(self, name):
        self.calls.append(("deactivate", name))
        self.status = "INACTIVE"

    def activate(self, name):
        self.calls.append(("activate", name, self.status))
        self.activated_after = self.rebalanced_for
        self.status = "ACTIVE"

    def rebalance(self, name, wait_s=0, num_executors=None, conf_overrides=None):
        self.calls.append(("rebalance", name, wait_s, num_executors) + ((conf_overrides,) if conf_overrides else ()))
        self.status = "REBALANCING"
        executors, task = {}, 1
        for component, machines in self.after.items():
            for machine in machines:
                executors[task] = _executor(component, task, "host-" + machine, spout=component == "spout", uptime=0)
                task += 1
        self.counts_now = TopologyCounts("hetsched: placed by planner (plan p-2)", executors, {})

    def sleep(self, seconds):
        self.clock += seconds
        if any(c[0] == "rebalance" for c in self.calls):  # the new workers run: their executors report uptime
            self.counts_now = replace(self.counts_now, executors={
                k: replace(e, uptime_s=e.uptime_s + int(seconds)) for k, e in self.counts_now.executors.items()})
            self.rebalanced_for += seconds
        if self.status == "INACTIVE" and self.reports_left >= 0 and not any(c[0] == "rebalance" for c in self.calls):
            spout = self.counts_now.executors[1]
            self.reports_left -= 1
            done = self.reports_left < 0
            self.counts_now = replace(self.counts_now, executors={
                **self.counts_now.executors,
                1: replace(spout, uptime_s=spout.uptime_s + 1, acked=98 if done else min(97, spout.acked + 1))})


def test_drained_replacement_waits_for_acks_then_rebalances_with_new_counts_and_activates():
    nimbus = ScriptedNimbus(in_flight_reports=3, after={"spout": ["b"], "bolt": ["a", "b"]})
    result = replace_drained(nimbus, "lin", {"spout": ["b"], "bolt": ["a", "b"]}, {"host-a": "a", "host-b": "b"},
                             clock=lambda: nimbus.clock, sleep=nimbus.sleep)
    assert [c[0] for c in nimbus.calls] == ["deactivate", "rebalance", "activate"]
    assert nimbus.calls[1] == ("rebalance", "lin", 0, {"bolt": 2})
    assert nimbus.calls[2][2] == "INACTIVE"
    assert result.drained and result.in_flight_at_rebalance == 0 and result.failed_during_drain == 0
    assert result.before == SpoutTally(100, 90, 2) and result.at_rebalance == SpoutTally(100, 98, 2)
    assert result.matches_plan and result.executors_before == {"spout": 1, "bolt": 1}
    assert result.executors_after == {"spout": 1, "bolt": 2}
    assert 3 <= result.drain_s < 30


def test_a_topology_that_never_drains_is_rebalanced_after_the_message_timeout():
    nimbus = ScriptedNimbus(in_flight_reports=10_000, after={"spout": ["a"], "bolt": ["a"]})
    result = replace_drained(nimbus, "lin", {"spout": ["a"], "bolt": ["a"]}, {"host-a": "a"},
                             clock=lambda: nimbus.clock, sleep=nimbus.sleep)
    assert not result.drained and result.drain_s == pytest.approx(30, abs=1.01)
    assert nimbus.calls[1] == ("rebalance", "lin", 0, None)
    assert result.in_flight_at_rebalance > 0


def test_conf_overrides_go_with_the_rebalance_and_nowhere_else():
    nimbus = ScriptedNimbus(in_flight_reports=0, after={"spout": ["a"], "bolt": ["a"]})
    replace_drained(nimbus, "lin", {"spout": ["a"], "bolt": ["a"]}, {"host-a": "a"},
                    conf_overrides={"hetsched.profiles": "lin-tuned"}, clock=lambda: nimbus.clock, sleep=nimbus.sleep)
    assert nimbus.calls[1] == ("rebalance", "lin", 0, None, {"hetsched.profiles": "lin-tuned"})
    assert [c[0] for c in nimbus.calls] == ["deactivate", "rebalance", "activate"]


def test_after_a_conf_change_it_stays_inactive_until_every_supervisor_fetched_it():
    """Storm restarts a worker whose supervisor finds a newer topology conf (kill-blob-update, every
    supervisor.localizer.update.blob.interval.secs): that must happen before the activation, not after."""
    nimbus = ScriptedNimbus(in_flight_reports=0, after={"spout": ["a"], "bolt": ["a"]})
    result = replace_drained(nimbus, "lin", {"spout": ["a"], "bolt": ["a"]}, {"host-a": "a"},
                             conf_overrides={"hetsched.profiles": "lin-tuned"}, clock=lambda: nimbus.clock,
                             sleep=nimbus.sleep)
    assert nimbus.activated_after >= 30 + 5
    assert result.conf_wait_s >= 30
    plain = ScriptedNimbus(in_flight_reports=0, after={"spout": ["a"], "bolt": ["a"]})
    assert replace_drained(plain, "lin", {"spout": ["a"], "bolt": ["a"]}, {"host-a": "a"}, clock=lambda: plain.clock,
                           sleep=plain.sleep).conf_wait_s == 0


def test_a_placement_other_than_the_plan_is_reported_not_hidden():
    nimbus = ScriptedNimbus(in_flight_reports=0, after={"spout": ["a"], "bolt": ["a"]})
    result = replace_drained(nimbus, "lin", {"spout": ["b"], "bolt": ["a"]}, {"host-a": "a", "host-b": "b"},
                             placement_timeout_s=5, clock=lambda: nimbus.clock, sleep=nimbus.sleep)
    assert not result.matches_plan and nimbus.calls[-1][0] == "activate"


def test_a_missing_topology_is_one_sentence():
    class Gone(ScriptedNimbus):
        def find(self, name):
            return None
    with pytest.raises(ReplacementError, match="no topology named 'lin' is running"):
        replace_drained(Gone(0, {}), "lin", {}, {})


def test_placement_matches_reads_executors_in_task_order():
    counts = TopologyCounts("", {1: _executor("bolt", 1, "h1"), 2: _executor("bolt", 2, "h2")}, {})
    assert placement_matches(counts, {"bolt": ["m1", "m2"]}, {"h1": "m1", "h2": "m2"})
    assert not placement_matches(counts, {"bolt": ["m2", "m1"]}, {"h1": "m1", "h2": "m2"})
    assert not placement_matches(counts, {"bolt": ["m1"]}, {"h1": "m1", "h2": "m2"})
