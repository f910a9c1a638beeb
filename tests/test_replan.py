"""`hetsched replan`'s decisions (hetsched.replan): the running placement, the cluster, task caps, the gain."""
from __future__ import annotations

import math

import pytest

from hetsched.inventory import ExecutorPlace, SupervisorRow
from hetsched.replan import (
    ReplanError,
    RunningPlacement,
    current_evaluation_request,
    gain,
    over_task_counts,
    placement_of_plan,
    plan_request,
    planner_cluster,
)
from planner.api import make_plan
from planner.fixtures import load_scenario


def _place(component, start, end, host, machine):
    return ExecutorPlace(component, start, end, host, 6700, machine, 5)


def _row(host, machine, mtype, cores=2.0, slots=4):
    return SupervisorRow(host, "sup-" + host, machine, mtype, cores, cores, slots, 0, "storm.yaml")


def test_running_placement_reads_executors_in_task_order_and_counts_tasks():
    places = [_place("high", 5, 6, "h2", "m2"), _place("high", 3, 4, "h1", "m1"), _place("__acker", 9, 9, "h1", "m1"),
              _place("spout", 1, 1, "h1", "m1")]
    running = RunningPlacement.of(places)
    assert running.machines == {"high": ["m1", "m2"], "spout": ["m1"]}
    assert running.tasks == {"high": 4, "spout": 1} and running.executors == {"high": 2, "spout": 1}


def test_an_executor_on_an_unknown_machine_is_one_sentence():
    with pytest.raises(ReplanError, match="the machine of h9 is unknown"):
        RunningPlacement.of([_place("spout", 1, 1, "h9", None)])


def test_the_cluster_takes_each_types_base_load_off_its_capacity_as_the_plugin_does():
    cluster = planner_cluster([_row("h1", "m1", "small"), _row("h2", "m2", "big", 4.0), _row("h3", None, None)],
                              {"small": 12.5})
    assert {t.name: t.capacity for t in cluster.machine_types} == {"small": 87.5, "big": 100.0}
    assert [m.id for m in cluster.machines] == ["m1", "m2"]
    with pytest.raises(ReplanError, match="no supervisor declares its machine"):
        planner_cluster([_row("h3", None, None)], {})


def test_a_plan_over_the_task_counts_is_capped_and_evaluations_use_the_running_counts():
    s = load_scenario("linear", 1)
    running = RunningPlacement({"spout": ["m1-01"], "low": ["m1-01"], "mid": ["m2-01"], "high": ["m3-01"]},
                               {"spout": 1, "low": 2, "mid": 2, "high": 2})
    request = current_evaluation_request(s.topology, s.cluster, "paper", running)
    assert {c.id: c.parallelism for c in request.topology.components} == running.executors
    free = make_plan(s.topology, s.cluster, s.profiles.entries, "paper")
    over = over_task_counts(free, running.tasks)
    assert over and all(free.instances[c] > running.tasks[c] == n for c, n in over.items())
    capped = plan_request(s.topology, s.cluster, "paper", over, "paper")
    replanned = make_plan(capped.topology, s.cluster, s.profiles.entries, "paper")
    assert all(replanned.instances[c] == n for c, n in over.items())
    assert sorted(placement_of_plan(replanned)) == sorted(replanned.instances)
    assert all(len(ms) == replanned.instances[c] for c, ms in placement_of_plan(replanned).items())


def test_gain_is_relative_and_infinite_from_nothing():
    assert gain(10.0, 12.5) == pytest.approx(0.25)
    assert gain(0.0, 3.0) == math.inf and gain(0.0, 0.0) == 0.0
