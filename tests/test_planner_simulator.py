"""The simulator's closed form, worked by hand and against a numeric search."""
from __future__ import annotations

import numpy as np
import pytest

from planner.errors import PlanningError
from planner.model import PlanOptions
from planner.profiles import ProfileTable
from planner.simulator import evaluate, loads_at_rate
from tests.fixtures.paper import entries, make_cluster, make_topology, random_request

PIPE = make_topology([("s", "spout", "src"), ("b", "bolt", "work")], [("s", "b")])
PIPE_PROFILES = ProfileTable.from_entries(entries({("src", "t"): (0.001, 0.5), ("work", "t"): (0.02, 1.0)}))


def test_prediction_on_one_machine():
    # U(R) = (100 * 0.001 + 100 * 0.02) R + 0.5 + 1 = 2.1 R + 1.5 <= 100
    cluster = make_cluster({"w": "t"}, [{"name": "t"}])
    ev = evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["w"]})
    rate = 98.5 / 2.1
    assert ev.input_rate == pytest.approx(rate)
    assert ev.total_throughput == pytest.approx(2 * rate)
    assert ev.sink_throughput == pytest.approx(rate)
    assert ev.machines[0].utilization == pytest.approx(100.0)
    assert ev.bottleneck == "w"
    cpu = {a.component: a.cpu for a in ev.assignments}
    assert cpu["b"] == pytest.approx(2.0 * rate + 1.0)
    assert ev.weighted_utilization == pytest.approx(100.0)


def test_thread_cap_limits_one_instance():
    # cores 2: one instance at most 50 %: 2 R + 1 <= 50 -> R = 24.5, before the machine (46.9)
    cluster = make_cluster({"w": "t"}, [{"name": "t", "cores": 2}])
    ev = evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["w"]})
    assert ev.input_rate == pytest.approx(24.5)
    assert ev.bottleneck == "b:0"


def test_more_instances_split_the_input():
    cluster = make_cluster({"w": "t"}, [{"name": "t", "cores": 2}])
    ev = evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["w", "w"]})
    # each b instance: R + 1 <= 50 -> 49; the machine: 2.1 R + 2.5 <= 100 -> 46.43
    assert ev.input_rate == pytest.approx(97.5 / 2.1)
    assert [a.input_rate for a in ev.assignments if a.component == "b"] == pytest.approx([ev.input_rate / 2] * 2)


def test_headroom_scales_machine_and_thread_limits():
    cluster = make_cluster({"w": "t"}, [{"name": "t", "cores": 2}])
    ev = evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["w"]}, PlanOptions(max_utilization=0.5))
    assert ev.input_rate == pytest.approx(min(48.5 / 2.1, 24.0 / 2.0))


def test_global_grouping_loads_instance_zero_only():
    topology = make_topology([("s", "spout", "src"), ("b", "bolt", "work")], [("s", "b", "global")])
    cluster = make_cluster({"w1": "t", "w2": "t"}, [{"name": "t"}])
    ev = evaluate(topology, cluster, PIPE_PROFILES, {"s": ["w2"], "b": ["w1", "w2"]})
    # w1 carries all of b: 2 R + 1 <= 100
    assert ev.input_rate == pytest.approx(99.0 / 2.0)
    assert [a.input_rate for a in ev.assignments if a.component == "b"] == pytest.approx([ev.input_rate, 0.0])


def test_heterogeneous_types_and_weighted_utilisation():
    topology = make_topology([("s", "spout", "src"), ("b", "bolt", "work")], [("s", "b")])
    profiles = ProfileTable.from_entries(entries({
        ("src", "fast"): (0.0,), ("src", "slow"): (0.0,), ("work", "fast"): (0.01,), ("work", "slow"): (0.03,),
    }))
    cluster = make_cluster({"f": "fast", "s": "slow"}, [{"name": "fast"}, {"name": "slow"}])
    ev = evaluate(topology, cluster, profiles, {"s": ["f"], "b": ["f", "s"]})
    # each b instance gets R/2: fast 0.5 R <= 100 (200), slow 1.5 R <= 100 (66.7)
    assert ev.input_rate == pytest.approx(100 / 1.5)
    assert ev.bottleneck == "s"
    util = {m.id: m.utilization for m in ev.machines}
    assert util["s"] == pytest.approx(100.0)
    assert util["f"] == pytest.approx(100 / 3)
    # eq. 7-8 over the kinds with e > 0 (work): x_fast = (1/0.01)/(1/0.01 + 1/0.03) = 0.75, x_slow = 0.25
    assert ev.weighted_utilization == pytest.approx(0.75 * 100 / 3 + 0.25 * 100)


def test_system_component_without_profile_costs_nothing():
    topology = make_topology([("s", "spout", "src"), ("b", "bolt", "work"), ("__acker", "bolt", None)], [("s", "b"), ("b", "__acker")])
    cluster = make_cluster({"w": "t"}, [{"name": "t"}])
    ev = evaluate(topology, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["w"], "__acker": ["w"]})
    assert ev.input_rate == pytest.approx(98.5 / 2.1)
    assert ev.sink_throughput == pytest.approx(ev.input_rate)  # the acker is the sink and sees every tuple


def test_placement_faults_are_named():
    cluster = make_cluster({"w": "t"}, [{"name": "t"}])
    with pytest.raises(PlanningError, match="unknown machine nowhere"):
        evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["nowhere"]})
    with pytest.raises(PlanningError, match="unknown component ghost"):
        evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"], "b": ["w"], "ghost": ["w"]})
    with pytest.raises(PlanningError, match="no instance of component b"):
        evaluate(PIPE, cluster, PIPE_PROFILES, {"s": ["w"]})


def test_unbounded_rate_is_an_error():
    profiles = ProfileTable.from_entries(entries({("src", "t"): (0.0, 1.0), ("work", "t"): (0.0, 1.0)}))
    cluster = make_cluster({"w": "t"}, [{"name": "t"}])
    with pytest.raises(PlanningError, match="the input rate is unbounded"):
        evaluate(PIPE, cluster, profiles, {"s": ["w"], "b": ["w"]})


def test_fixed_costs_alone_overloading_a_machine_sustain_no_rate():
    profiles = ProfileTable.from_entries(entries({("src", "t"): (0.001, 60.0), ("work", "t"): (0.01, 60.0)}))
    cluster = make_cluster({"w": "t"}, [{"name": "t"}])
    ev = evaluate(PIPE, cluster, profiles, {"s": ["w"], "b": ["w"]})
    assert ev.input_rate == 0.0
    assert ev.stats["feasible"] is False
    assert ev.bottleneck == "w"


def test_loads_at_rate_say_what_is_over_and_by_how_much():
    cluster = make_cluster({"w1": "t", "w2": "t"}, [{"name": "t", "cores": 2}])
    loads = loads_at_rate(PIPE, cluster, PIPE_PROFILES, {"s": ["w2"], "b": ["w1"]}, rate=30.0)
    by_id = {m.id: m for m in loads}
    # b on w1: 2 * 30 + 1 = 61 %: within the machine, 11 % over its thread cap of 50 %
    assert by_id["w1"].utilization == pytest.approx(61.0)
    assert by_id["w1"].over_by == 0.0
    assert [(i.component, i.over_by) for i in by_id["w1"].threads_over] == [("b", pytest.approx(11.0))]
    assert by_id["w1"].overloaded and not by_id["w2"].overloaded


@pytest.mark.parametrize("seed", range(40))
def test_closed_form_matches_a_numeric_search(seed):
    topology, cluster, profiles, placement = random_request(np.random.default_rng(seed))
    ev = evaluate(topology, cluster, profiles, placement)

    def overloaded(rate: float) -> bool:
        return any(m.overloaded for m in loads_at_rate(topology, cluster, profiles, placement, rate))

    if ev.input_rate == 0.0:
        assert overloaded(0.0)
        return
    low, high = 0.0, 1.0
    while not overloaded(high):
        low, high = high, high * 2
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if not overloaded(mid) else (low, mid)
    assert ev.input_rate == pytest.approx(low, rel=1e-7)
    assert max(m.utilization - m.limit for m in loads_at_rate(topology, cluster, profiles, placement, ev.input_rate)) <= 1e-6
