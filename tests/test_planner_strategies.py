"""Each strategy on cases small enough to work by hand, and the paper scenarios."""
from __future__ import annotations

import numpy as np
import pytest

from planner.api import make_plan
from planner.errors import PlanningError, PlanningTimeout
from planner.fixtures import SCENARIOS, TOPOLOGIES
from planner.model import PlanOptions
from planner.profiles import ProfileTable
from planner.strategies import DEFAULT_STRATEGY, STRATEGIES
from planner.strategies.even import even_placement, slot_order
from planner.strategies.resource_aware import executor_order
from tests.fixtures.paper import entries, make_cluster, make_topology, random_request

BUILT_IN = ("paper", "even", "resource_aware", "fast")

# spout -> b on one fast machine (b costs 1 % per tuple/s) and one slow one (2 %)
PAIR = make_topology([("s", "spout", "src"), ("b", "bolt", "work")], [("s", "b")])
PAIR_CLUSTER = make_cluster({"f": "fast", "w": "slow"}, [{"name": "fast"}, {"name": "slow"}])
PAIR_PROFILES = entries({("src", "fast"): (0.0,), ("src", "slow"): (0.0,), ("work", "fast"): (0.01,), ("work", "slow"): (0.02,)})


def instances_by_machine(plan, component):
    return sorted(a.machine for a in plan.assignments if a.component == component)


def test_registry_has_the_built_in_strategies_and_the_default():
    assert set(BUILT_IN) <= set(STRATEGIES)
    assert DEFAULT_STRATEGY in STRATEGIES


def test_paper_on_two_identical_machines(two_machine_request):
    # FirstAssignment puts s and b on w1 (ties: most remaining capacity, then id); the rate doubles
    # to 128, w1 overloads, a second b goes to w2; the step halves until both carry 100 %: R = 200.
    topology, cluster, profile_entries = two_machine_request
    plan = make_plan(topology, cluster, profile_entries, "paper")
    assert plan.instances == {"s": 1, "b": 2}
    assert instances_by_machine(plan, "b") == ["w1", "w2"]
    assert plan.input_rate == pytest.approx(200.0)
    assert 200.0 * (1 - 2e-3) <= plan.stats["strategy_rate"] <= 200.0
    assert plan.stats["stopped_by"] == "tolerance"


def test_paper_stops_where_one_more_instance_fits_nowhere():
    # One b on the fast machine reaches R = 100. A second b (R/2 each) would need R <= 100 on the slow
    # machine, so it never fits while the fast one is over 100 %; three (2 fast + 1 slow) would give 150,
    # but the paper adds one instance at a time at the overloaded rate and stops at 100.
    plan = make_plan(PAIR, PAIR_CLUSTER, PAIR_PROFILES, "paper")
    assert plan.instances["b"] == 1
    assert plan.input_rate == pytest.approx(100.0)


def test_fast_finds_the_split_the_paper_misses():
    plan = make_plan(PAIR, PAIR_CLUSTER, PAIR_PROFILES, "fast")
    assert plan.input_rate >= 150.0 * (1 - 1e-9)
    assert plan.input_rate <= plan.stats["fluid_bound"] * (1 + 1e-9)


def test_paper_iteration_guard_returns_the_last_stable_plan(two_machine_request):
    topology, cluster, profile_entries = two_machine_request
    plan = make_plan(topology, cluster, profile_entries, "paper", PlanOptions(max_iterations=3))
    assert plan.stats["stopped_by"] == "iteration guard"
    assert plan.stats["strategy_rate"] == pytest.approx(4.0)  # R0 = 1 doubled twice
    assert plan.input_rate > 0


@pytest.mark.parametrize("strategy", ["paper", "fast"])
def test_time_limit_stops_with_a_clear_sentence(strategy, paper_scenario):
    scenario = paper_scenario("linear", 2)
    with pytest.raises(PlanningTimeout, match=f"the {strategy} strategy ran past its time limit of 1e-09 s"):
        make_plan(scenario.topology, scenario.cluster, scenario.profiles.entries, strategy, PlanOptions(time_limit_s=1e-9))


@pytest.mark.parametrize("strategy", ["even", "resource_aware"])
def test_a_baseline_time_out_names_the_strategy_asked_for(strategy, paper_scenario):
    scenario = paper_scenario("linear", 2)
    with pytest.raises(PlanningTimeout, match=f"the {strategy} strategy takes its instance counts from the paper's plan, "
                                              "which timed out: the paper strategy ran past"):
        make_plan(scenario.topology, scenario.cluster, scenario.profiles.entries, strategy, PlanOptions(time_limit_s=1e-9))


@pytest.mark.parametrize("strategy", BUILT_IN)
def test_fixed_parallelism_is_kept(strategy, paper_scenario):
    scenario = paper_scenario("linear", 1)
    topology = scenario.topology.model_copy(deep=True)
    topology.component("high").parallelism = 5
    topology.component("low").parallelism = 2
    plan = make_plan(topology, scenario.cluster, scenario.profiles.entries, strategy)
    assert plan.instances["high"] == 5 and plan.instances["low"] == 2
    assert plan.input_rate > 0


@pytest.mark.parametrize("strategy", BUILT_IN)
def test_system_components_are_placed_without_a_profile(strategy, paper_scenario):
    scenario = paper_scenario("diamond", 1)
    topology = scenario.topology.model_copy(deep=True)
    topology.components.append(type(topology.components[0])(id="__acker", kind="bolt"))
    topology.streams.append(type(topology.streams[0])(**{"from": "high", "to": "__acker"}))
    plan = make_plan(topology, scenario.cluster, scenario.profiles.entries, strategy)
    assert plan.instances["__acker"] >= 1
    assert all(a.cpu == 0.0 for a in plan.assignments if a.component == "__acker")


@pytest.mark.parametrize("strategy", BUILT_IN)
def test_global_and_all_groupings_are_planned(strategy):
    topology = make_topology(
        [("s", "spout", "src"), ("a", "bolt", "work"), ("g", "bolt", "work"), ("c", "bolt", "work")],
        [("s", "a"), ("a", "g", "global"), ("a", "c", "all")],
    )
    cluster = make_cluster({"w1": "t", "w2": "t", "w3": "t"}, [{"name": "t", "cores": 2}])
    plan = make_plan(topology, cluster, entries({("src", "t"): (0.001, 0.5), ("work", "t"): (0.01, 1.0)}), strategy)
    assert plan.input_rate > 0
    g = [a for a in plan.assignments if a.component == "g"]
    assert g[0].input_rate == pytest.approx(plan.input_rate)  # instance 0 gets the whole global stream
    assert all(a.input_rate == 0.0 for a in g[1:])


def test_even_deals_executors_in_task_order_over_machines():
    topology = make_topology(
        [("z", "spout", "src"), ("m", "bolt", "work"), ("__acker", "bolt", None)], [("z", "m"), ("m", "__acker")]
    )
    cluster = make_cluster({"c": "small", "a": "small", "b": "big"}, [{"name": "small", "slots": 2}, {"name": "big", "slots": 4}])
    # supervisors with more free slots first, then by id; task ids by sorted component id: __acker, m, z
    assert slot_order(cluster) == ["b", "a", "c"]
    placement = even_placement(topology, cluster, {"z": 2, "m": 3, "__acker": 1})
    assert placement == {"__acker": ["b"], "m": ["a", "c", "b"], "z": ["a", "c"]}


def test_resource_aware_orders_executors_by_connection_count():
    topology = make_topology([("s", "spout", "src"), ("a", "bolt", "work"), ("b", "bolt", "work")], [("s", "a"), ("a", "b")])
    # connections: a (1 + 3) * 2 = 8, b 2 * 3 = 6, s 1 * 2 = 2; a's neighbours fewest first: s, b
    assert executor_order(topology, {"s": 1, "a": 2, "b": 3}) == [
        ("a", 0), ("s", 0), ("b", 0), ("a", 1), ("b", 1), ("b", 2)
    ]


def test_resource_aware_is_blind_to_machine_types():
    # "a" is slow, "b" fast; the paper plan runs b on the fast machine at R = 100, so on the fast reference
    # type b declares 100 CPU points; RAS takes the first supervisor by id where they fit: the slow "a".
    cluster = make_cluster({"a": "slow", "b": "fast"}, [{"name": "fast"}, {"name": "slow"}])
    plan = make_plan(PAIR, cluster, PAIR_PROFILES, "resource_aware")
    assert plan.stats["reference_machine_type"] == "fast"
    assert instances_by_machine(plan, "b") == ["a"]
    assert plan.input_rate == pytest.approx(50.0)


def test_resource_aware_reports_when_storm_could_not_schedule():
    # on the slow reference type b declares 200 points: no supervisor (capacity 100) takes them
    with pytest.raises(PlanningError, match="RAS could not schedule instance 0 of component b: its 200.0 CPU points"):
        make_plan(PAIR, PAIR_CLUSTER, PAIR_PROFILES, "resource_aware", PlanOptions(reference_machine_type="slow"))


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fast_reaches_at_least_the_paper_on_the_paper_scenarios(topology, scenario, paper_scenario):
    s = paper_scenario(topology, scenario)
    paper = make_plan(s.topology, s.cluster, s.profiles.entries, "paper")
    fast = make_plan(s.topology, s.cluster, s.profiles.entries, "fast")
    assert fast.input_rate >= paper.input_rate
    assert fast.input_rate <= fast.stats["fluid_bound"] * (1 + 1e-9)
    table = ProfileTable.from_entries(s.profiles.entries)
    try:
        from planner.bounds import lp_upper_bound
    except ImportError:
        return
    assert fast.input_rate <= lp_upper_bound(s.topology, s.cluster, table) * (1 + 1e-6)


@pytest.mark.parametrize("strategy", BUILT_IN)
def test_every_strategy_places_every_component_within_the_cluster(strategy, paper_scenario):
    s = paper_scenario("star", 2)
    plan = make_plan(s.topology, s.cluster, s.profiles.entries, strategy)
    machines = {m.id for m in s.cluster.machines}
    assert set(plan.instances) == {c.id for c in s.topology.components}
    assert all(a.machine in machines for a in plan.assignments)
    assert all(m.utilization <= 100.0 + 1e-6 for m in plan.machines)


@pytest.mark.parametrize("seed", range(30))
def test_fast_is_never_below_the_paper_on_small_random_requests(seed):
    topology, cluster, profiles, _ = random_request(np.random.default_rng(1000 + seed))
    paper = make_plan(topology, cluster, profiles.entries(), "paper")
    fast = make_plan(topology, cluster, profiles.entries(), "fast")
    assert fast.input_rate >= paper.input_rate * (1 - 1e-9)
    if "fluid_bound" in fast.stats:
        assert fast.input_rate <= fast.stats["fluid_bound"] * (1 + 1e-9)
