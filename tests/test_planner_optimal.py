"""The exact strategy, the brute force that checks it, and the LP upper bound (planner.strategies.optimal, planner.bounds)."""
from __future__ import annotations

import pytest

from planner.api import make_plan
from planner.bounds import lp_upper_bound
from planner.brute_force import brute_force
from planner.errors import PlanningError, PlanningTimeout
from planner.model import Cluster, Component, Machine, MachineType, PlanOptions, ProfileEntry, Stream, Topology
from planner.problem import Problem
from planner.profiles import ProfileTable
from planner.random_requests import RandomRequest, random_request
from planner.strategies import STRATEGIES
from planner.strategies.optimal import DEFAULT_TUNING, OptimalTuning, solve
from planner.validation import validate

OPTIMALITY_GAP = DEFAULT_TUNING.optimality_gap
MAX_PLACED_COMPONENTS = DEFAULT_TUNING.max_placed_components
MAX_MACHINES = DEFAULT_TUNING.max_machines

RELATIVE = 1e-9
"""Rounding slack for comparisons that hold exactly."""


def assert_optimal(found: float, exact: float) -> None:
    """``found`` is within the search's gap below the exhaustive optimum, and never above it."""
    assert exact * (1 - 1.01 * OPTIMALITY_GAP) <= found <= exact * (1 + RELATIVE)


def _problem(rq: RandomRequest) -> Problem | None:
    """The compiled request, or None where the random draw is not a valid request (too small a cluster)."""
    profiles = ProfileTable.from_entries(rq.entries)
    try:
        validate(rq.topology, rq.cluster, profiles, rq.options)
    except PlanningError:
        return None
    return Problem.build(rq.topology, rq.cluster, profiles, rq.options)


TINY = dict(components=(2, 3), machine_types=(1, 2), machines=(2, 3), fixed_parallelism_share=0.3)


@pytest.mark.parametrize("seed", range(16))
def test_milp_optimum_equals_brute_force_on_tiny_random_requests(seed):
    problem = _problem(random_request(1000 + seed, **TINY))
    if problem is None:
        pytest.skip("this random draw cannot host its topology")
    cap = 3 if problem.n_machines == 2 else 2
    exact = brute_force(problem, max_instances=cap)
    milp = solve(problem, OptimalTuning(max_instances_per_component=cap))
    assert exact.placements_tried > 1
    assert_optimal(milp.input_rate, exact.input_rate)
    assert milp.upper_bound >= exact.input_rate * (1 - RELATIVE)
    assert milp.lp_bound >= exact.input_rate * (1 - RELATIVE)
    for component, machines in milp.placement.items():
        fixed = problem.components[problem.component_index[component]].parallelism
        assert len(machines) == (fixed or len(machines))
        assert 1 <= len(machines) <= (fixed or cap)


@pytest.mark.parametrize("seed", range(6))
def test_all_and_global_groupings_match_brute_force(seed):
    """An 'all' grouping into a bolt that feeds others makes its descendants' rates depend on its count."""
    rq = random_request(2000 + seed, groupings=("all", "global", "shuffle"), **TINY)
    problem = _problem(rq)
    if problem is None:
        pytest.skip("this random draw cannot host its topology")
    exact = brute_force(problem, max_instances=2)
    assert_optimal(solve(problem, OptimalTuning(max_instances_per_component=2)).input_rate, exact.input_rate)


def _all_grouping_request(split_input: bool) -> Problem:
    """spout -all-> b1 (and spout2 -shuffle-> b1 where ``split_input``), b1 -> b2: b1's count sets b2's rate."""
    components = [
        Component(id="spout", kind="spout", profile="s"),
        Component(id="b1", kind="bolt", profile="b"),
        Component(id="b2", kind="bolt", profile="b"),
    ]
    streams = [Stream(source="spout", target="b1", grouping="all"), Stream(source="b1", target="b2")]
    if split_input:
        components.append(Component(id="spout2", kind="spout", profile="s"))
        streams.append(Stream(source="spout2", target="b1"))
    topology = Topology(name="all", components=components, streams=streams)
    cluster = Cluster(
        machine_types=[MachineType(name="a", capacity=100, cores=4), MachineType(name="b", capacity=100)],
        machines=[Machine(id="m0", type="a"), Machine(id="m1", type="b")],
    )
    entries = [
        ProfileEntry(profile=p, machine_type=t, e=e * f, met=1.0)
        for p, e in (("s", 0.001), ("b", 0.004)) for t, f in (("a", 1.0), ("b", 1.6))
    ]
    return Problem.build(topology, cluster, ProfileTable.from_entries(entries), PlanOptions())


@pytest.mark.parametrize("split_input", [False, True])
def test_all_grouped_component_feeding_others_matches_brute_force(split_input):
    problem = _all_grouping_request(split_input)
    exact = brute_force(problem, max_instances=3)
    milp = solve(problem, OptimalTuning(max_instances_per_component=3))
    assert_optimal(milp.input_rate, exact.input_rate)
    if not split_input:
        assert len(milp.placement["b1"]) == 1


SMALL = dict(components=(2, 4), machine_types=(2, 3), machines=(2, 4))


@pytest.mark.slow  # the exact MILP search on six requests
@pytest.mark.parametrize("seed", range(6))
def test_bound_at_least_optimal_at_least_every_strategy(seed):
    rq = random_request(3000 + seed, **SMALL)
    if _problem(rq) is None:
        pytest.skip("this random draw cannot host its topology")
    optimal = make_plan(rq.topology, rq.cluster, rq.entries, "optimal", rq.options)
    bound = lp_upper_bound(rq.topology, rq.cluster, ProfileTable.from_entries(rq.entries), rq.options)
    assert optimal.stats["proven_optimal"] is True
    assert optimal.input_rate == pytest.approx(optimal.stats["optimal_input_rate"], rel=1e-9)
    assert bound >= optimal.input_rate * (1 - 1e-7)
    for name in STRATEGIES:
        if name == "optimal":
            continue
        other = make_plan(rq.topology, rq.cluster, rq.entries, name, rq.options)
        assert other.input_rate <= optimal.stats["upper_bound"] * (1 + RELATIVE), name


def test_optimal_is_at_least_the_paper_on_a_small_cluster_of_the_papers_machine_types(paper_scenario):
    """The paper's Linear topology and profiles, one machine of each of its types.

    The paper's strategy may use many instances; the search is capped at its
    largest count, so the paper's plan is one of the plans searched.
    """
    scenario = paper_scenario("linear", 1)
    cluster = Cluster(
        machine_types=scenario.cluster.machine_types,
        machines=[Machine(id=t.name, type=t.name) for t in scenario.cluster.machine_types],
    )
    entries = scenario.profiles.entries
    paper = make_plan(scenario.topology, cluster, entries, "paper")
    profiles = ProfileTable.from_entries(entries)
    optimal = solve(Problem.build(scenario.topology, cluster, profiles, PlanOptions()), OptimalTuning(max_instances_per_component=max(paper.instances.values())))
    bound = lp_upper_bound(scenario.topology, cluster, profiles)
    assert paper.input_rate <= optimal.input_rate * (1 + RELATIVE)
    assert optimal.input_rate <= bound * (1 + RELATIVE)


def _chain(n_components: int, n_machines: int, parallelism: dict[str, int] | None = None) -> tuple[Topology, Cluster, list[ProfileEntry]]:
    parallelism = parallelism or {}
    ids = [f"c{i}" for i in range(n_components)]
    topology = Topology(
        name="chain",
        components=[
            Component(id=c, kind="spout" if i == 0 else "bolt", profile="work", parallelism=parallelism.get(c))
            for i, c in enumerate(ids)
        ],
        streams=[Stream(source=a, target=b) for a, b in zip(ids, ids[1:])],
    )
    cluster = Cluster(
        machine_types=[MachineType(name="small", capacity=100, cores=2), MachineType(name="big", capacity=200)],
        machines=[Machine(id=f"m{w}", type="small" if w % 2 else "big") for w in range(n_machines)],
    )
    entries = [
        ProfileEntry(profile="work", machine_type="small", e=0.004, met=2.0),
        ProfileEntry(profile="work", machine_type="big", e=0.002, met=1.0),
    ]
    return topology, cluster, entries


def test_refuses_too_many_components_with_a_sentence_that_says_what_to_do():
    topology, cluster, entries = _chain(MAX_PLACED_COMPONENTS + 1, 2)
    with pytest.raises(PlanningError) as err:
        make_plan(topology, cluster, entries, "optimal")
    message = str(err.value)
    assert f"limited to {MAX_PLACED_COMPONENTS} components" in message
    assert f"this request has {MAX_PLACED_COMPONENTS + 1} components" in message
    assert "use strategy" in message


def test_refuses_too_many_machines():
    topology, cluster, entries = _chain(2, MAX_MACHINES + 1)
    with pytest.raises(PlanningError, match=f"{MAX_MACHINES + 1} machines"):
        make_plan(topology, cluster, entries, "optimal")


def test_bound_still_answers_where_optimal_refuses():
    small = _chain(3, 50)
    large = _chain(3, 2000)
    bound_small = lp_upper_bound(small[0], small[1], ProfileTable.from_entries(small[2]))
    bound_large = lp_upper_bound(large[0], large[1], ProfileTable.from_entries(large[2]))
    assert 0 < bound_small < bound_large


def test_fixed_parallelism_is_kept():
    topology, cluster, entries = _chain(3, 3, parallelism={"c1": 3, "c2": 2})
    plan = make_plan(topology, cluster, entries, "optimal")
    assert plan.instances["c1"] == 3
    assert plan.instances["c2"] == 2
    assert len([a for a in plan.assignments if a.component == "c1"]) == 3
    problem = Problem.build(topology, cluster, ProfileTable.from_entries(entries), PlanOptions())
    capped = solve(problem, OptimalTuning(max_instances_per_component=3))
    assert [len(capped.placement[c]) for c in ("c1", "c2")] == [3, 2]
    assert_optimal(capped.input_rate, brute_force(problem, max_instances=3).input_rate)


def test_more_instances_than_the_fixed_count_would_not_be_searched():
    """With c1 free the optimum may use any count; with it fixed at 1 it cannot beat the free optimum."""
    free = make_plan(*_chain(3, 3), "optimal")
    fixed = make_plan(*_chain(3, 3, parallelism={"c1": 1}), "optimal")
    assert fixed.instances["c1"] == 1
    assert fixed.input_rate <= free.stats["upper_bound"] * (1 + RELATIVE)


def test_time_limit_stops_the_search_with_a_sentence():
    rq = random_request(7, components=(5, 5), machines=(6, 6))
    options = PlanOptions(time_limit_s=1e-6)
    with pytest.raises(PlanningTimeout, match="time limit of 1e-06 s"):
        make_plan(rq.topology, rq.cluster, rq.entries, "optimal", options)


def test_system_components_without_profile_are_placed_on_machines_the_plan_uses():
    topology, cluster, entries = _chain(3, 3)
    topology.components.append(Component(id="__acker", kind="bolt"))
    topology.streams.append(Stream(source="c2", target="__acker"))
    plan = make_plan(topology, cluster, entries, "optimal")
    ackers = [a for a in plan.assignments if a.component == "__acker"]
    used = {a.machine for a in plan.assignments if a.component != "__acker"}
    assert len(ackers) == 1
    assert ackers[0].machine in used
    assert ackers[0].cpu == 0


def test_unbounded_rate_is_an_error_not_a_number():
    topology, cluster, _ = _chain(2, 2)
    free_entries = [
        ProfileEntry(profile="work", machine_type="small", e=0.0, met=1.0),
        ProfileEntry(profile="work", machine_type="big", e=0.0, met=1.0),
    ]
    with pytest.raises(PlanningError, match="unbounded"):
        make_plan(topology, cluster, free_entries, "optimal")


def test_fast_moves_the_instance_a_global_stream_feeds_off_its_thread_cap():
    """Seed 39 of the quality suite: c2 takes c1's stream through ``global`` (all of it to instance 0) and c0's
    through ``fields``. Before fast could move instance 0, it stopped at 99 tuples/s against an optimum of 312:
    the instance sat on a 4-core type, held to a quarter of its machine, and more instances never relieve it."""
    rq = random_request(39)
    optimal = make_plan(rq.topology, rq.cluster, rq.entries, "optimal", PlanOptions(time_limit_s=120))
    fast = make_plan(rq.topology, rq.cluster, rq.entries, "fast", rq.options)
    assert optimal.stats["proven_optimal"] is True
    assert fast.input_rate >= 0.999 * optimal.input_rate, (fast.input_rate, optimal.input_rate)


# fast's worst requests of benchmarks/planner_quality.py before the count jumps (planner.strategies.fast.resize),
# with their optimum as the ``optimal`` strategy proved it (0.4 to 41 s each, so written down here)
WORST_BEFORE_RESIZE = {
    42: (315.87, 386.720),  # c0 needs 5 instances before it fits the slow type's thread cap; 3 or 4 lower R
    26: (41.93, 51.293),  # 2 instances of c3, c4, c5 pack three 50 % machines; the polish had 5 of c2 on one
    78: (204.23, 247.244),  # instance 0 of c4 (fed by global) belongs on the 1-core type, with 6 instances, not 73
    173: (82.65, 125.388),  # c3's instance 0 sheds its part of the shuffled input only with dozens of instances
    73: (186.55, 204.630),  # c3 whole on the one 1-core machine, c0 split over both types: a two-component size switch
    35: (1092.20, 1163.048),  # found from the sizes of the type carrying most of each component's flow
    184: (462.82, 496.310),
}


@pytest.mark.parametrize("seed", sorted(WORST_BEFORE_RESIZE))
def test_fast_within_five_percent_of_the_optimum_on_its_former_worst_requests(seed):
    before, optimum = WORST_BEFORE_RESIZE[seed]
    rq = random_request(seed)
    fast = make_plan(rq.topology, rq.cluster, rq.entries, "fast", rq.options)
    assert fast.input_rate >= 0.95 * optimum, (fast.input_rate, before, optimum)
    assert fast.input_rate <= optimum * (1 + 1e-3)


def test_the_optimum_of_a_former_worst_request_is_what_the_test_says():
    """The one optimum of WORST_BEFORE_RESIZE cheap enough to prove here (seed 42, under a second)."""
    rq = random_request(42)
    optimal = make_plan(rq.topology, rq.cluster, rq.entries, "optimal", PlanOptions(time_limit_s=120))
    assert optimal.stats["proven_optimal"] is True
    assert optimal.input_rate == pytest.approx(WORST_BEFORE_RESIZE[42][1], rel=1e-4)


def test_fast_swaps_an_instance_off_the_bottleneck_with_the_instance_0_a_global_stream_feeds():
    """Seed 19 of the quality suite (fast 873.17 against 953.17, 0.916): c3 takes c2's whole stream through
    ``global``. From fast's plan the optimum is a count jump (one c2 fewer) and a swap: c3's instance 0 onto
    the 2-core machine that holds R after the jump (beside its two c2), that machine's c0 to where c3 was. The
    polish scored swaps by per-instance shares, in which c3's instance 0 (fed only by ``global``) looks idle, so
    it never offered that swap. (The exact solver's plan also has a second c3 instance: it takes no tuples, and
    R is the same without it.)"""
    rq = random_request(19)
    optimal = make_plan(rq.topology, rq.cluster, rq.entries, "optimal", PlanOptions(time_limit_s=120))
    fast = make_plan(rq.topology, rq.cluster, rq.entries, "fast", rq.options)
    assert optimal.stats["proven_optimal"] is True
    assert fast.input_rate >= 0.95 * optimal.input_rate, (fast.input_rate, optimal.input_rate)
    assert fast.input_rate <= optimal.input_rate * (1 + 1e-3)


WORST_AT_1000_MACHINES = {
    3: 0.221,  # c5's instance 0, fed whole by a global stream, sat alone on the slowest type: the machine, not its thread
    76: 0.311,  # the same on a 1-core machine
    198: 0.409,
    153: 0.565,  # c4's instance 0 sheds its part of the shuffled input only with hundreds more instances
    4: 0.750,
}


@pytest.mark.parametrize("seed", sorted(WORST_AT_1000_MACHINES))
def test_fast_within_five_percent_of_the_lp_bound_on_its_former_worst_requests_of_1000_machines(seed):
    """Beyond the exact search: against the fluid LP bound (an upper bound on the optimum)."""
    rq = random_request(seed, machines=(1000, 1000))
    fast = make_plan(rq.topology, rq.cluster, rq.entries, "fast", rq.options)
    bound = lp_upper_bound(rq.topology, rq.cluster, ProfileTable.from_entries(rq.entries), rq.options)
    assert fast.input_rate >= 0.95 * bound, (fast.input_rate / bound, WORST_AT_1000_MACHINES[seed])
    assert fast.input_rate <= bound * (1 + 1e-6)
