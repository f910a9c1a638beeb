"""Rate propagation, worked by hand (docs/concepts/model.md, "Rates")."""
from __future__ import annotations

import pytest

from planner.errors import PlanningError
from planner.model import Component, Topology
from planner.profiles import ProfileTable
from planner.rates import find_cycle, instance_unit_rates, topological_order, unit_rates
from tests.fixtures.paper import entries, make_topology


def diamond(alpha_low: float = 1.0, alpha_mid: float = 1.0) -> tuple[Topology, ProfileTable]:
    topology = make_topology(
        [("s", "spout", "src"), ("low", "bolt", "L"), ("mid", "bolt", "M"), ("high", "bolt", "H")],
        [("s", "low"), ("s", "mid"), ("low", "high"), ("mid", "high")],
    )
    table = ProfileTable.from_entries(entries({
        ("src", "t"): (0.001,), ("L", "t"): (0.01, 0.0, alpha_low), ("M", "t"): (0.01, 0.0, alpha_mid), ("H", "t"): (0.01,),
    }))
    return topology, table


def test_every_subscriber_gets_the_whole_stream_and_parents_add_up():
    topology, table = diamond()
    assert unit_rates(topology, table) == {"s": 1.0, "low": 1.0, "mid": 1.0, "high": 2.0}


def test_alpha_scales_each_parents_output():
    topology, table = diamond(alpha_low=2.0, alpha_mid=0.5)
    assert unit_rates(topology, table)["high"] == pytest.approx(2.0 + 0.5)


def test_alpha_of_a_profile_is_the_mean_over_machine_types():
    table = ProfileTable.from_entries(entries({("k", "a"): (0.01, 0.0, 1.0), ("k", "b"): (0.01, 0.0, 3.0)}))
    assert table.alpha("k") == pytest.approx(2.0)


def test_spout_weights_share_the_input_rate():
    topology = Topology(
        name="star",
        components=[
            Component(id="s1", kind="spout", profile="src", weight=3.0),
            Component(id="s2", kind="spout", profile="src"),
            Component(id="h", kind="bolt", profile="H"),
        ],
        streams=[{"from": "s1", "to": "h"}, {"from": "s2", "to": "h"}],
    )
    table = ProfileTable.from_entries(entries({("src", "t"): (0.0,), ("H", "t"): (0.01, 0.0, 0.5)}))
    assert unit_rates(topology, table) == {"s1": 3.0, "s2": 1.0, "h": 4.0}


def test_shuffle_splits_evenly_and_global_goes_to_instance_zero():
    topology = make_topology(
        [("s", "spout", "src"), ("a", "bolt", "K"), ("b", "bolt", "K"), ("c", "bolt", "K")],
        [("s", "a"), ("s", "b"), ("a", "c", "shuffle"), ("b", "c", "global")],
    )
    table = ProfileTable.from_entries(entries({("src", "t"): (0.0,), ("K", "t"): (0.01, 0.0, 2.0)}))
    rates = instance_unit_rates(topology, table, {"s": 1, "a": 1, "b": 1, "c": 2})
    # a and b each emit 2 per unit R: the shuffled 2 splits over c's two instances, the global 2 all to instance 0
    assert rates["c"] == [pytest.approx(1.0 + 2.0), pytest.approx(1.0)]
    assert unit_rates(topology, table, {"s": 1, "a": 1, "b": 1, "c": 2})["c"] == pytest.approx(4.0)


def test_all_grouping_copies_the_stream_to_every_instance():
    topology = make_topology(
        [("s", "spout", "src"), ("a", "bolt", "K"), ("d", "bolt", "K")],
        [("s", "a", "all"), ("a", "d")],
    )
    table = ProfileTable.from_entries(entries({("src", "t"): (0.0,), ("K", "t"): (0.01,)}))
    counts = {"s": 1, "a": 3, "d": 2}
    assert instance_unit_rates(topology, table, counts)["a"] == [1.0, 1.0, 1.0]
    assert unit_rates(topology, table, counts) == {"s": 1.0, "a": 3.0, "d": 3.0}


def test_system_component_without_profile_passes_tuples_through():
    topology = make_topology([("s", "spout", "src"), ("__acker", "bolt", None)], [("s", "__acker")])
    table = ProfileTable.from_entries(entries({("src", "t"): (0.0,)}))
    assert unit_rates(topology, table) == {"s": 1.0, "__acker": 1.0}


def test_topological_order_keeps_declaration_order_on_ties():
    topology = make_topology(
        [("c", "bolt", "K"), ("s", "spout", "K"), ("b", "bolt", "K"), ("a", "bolt", "K")],
        [("s", "b"), ("s", "a"), ("b", "c"), ("a", "c")],
    )
    assert topological_order(topology) == ["s", "b", "a", "c"]


def test_cycle_is_named_in_order():
    topology = make_topology(
        [("s", "spout", "K"), ("a", "bolt", "K"), ("b", "bolt", "K"), ("c", "bolt", "K")],
        [("s", "a"), ("a", "b"), ("b", "c"), ("c", "a")],
    )
    assert find_cycle(topology) == ["a", "b", "c", "a"]
    with pytest.raises(PlanningError, match="the topology has a cycle: a -> b -> c -> a"):
        topological_order(topology)
