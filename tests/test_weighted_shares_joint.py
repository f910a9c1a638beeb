"""Weighted shares chosen with counts and placement (issue 33): never below the shares chosen after today's plan,
never above the LP bound, shares that sum to 1, and plans without the option exactly as before."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from benchmarks.weighted_shares_joint import TOPOLOGIES, default_cluster_request
from planner.api import evaluate_assignments, make_plan
from planner.bounds import lp_upper_bound
from planner.fixtures import load_scenario
from planner.model import InstanceAssignment, Plan, PlanOptions
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.random_requests import random_request, with_remote_cost
from planner.simulator import HostedModel
from planner.strategies.base import Deadline
from planner.strategies.fast import plan as fast_plan
from planner.strategies.fast.joint_shares import joint_search
from planner.strategies.fast.polish import Layout
from planner.strategies.fast.tuning import DEFAULT_TUNING

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "plans_without_weighted_shares.json"
"""Plans of ``cases()`` made without ``weighted_shares`` by the planner before the joint search existed (commit
d99af75), by the default strategy: instance 0, 1, ... of each component and the plan's R."""


def cases():
    """Requests of every shape the tests plan: the paper's scenarios 1-2, the default cluster, seeded random ones."""
    for name in ("linear", "diamond", "star"):
        for scenario in (1, 2):
            found = load_scenario(name, scenario)
            yield f"{name}-s{scenario}", found.topology, found.cluster, found.profiles.entries
    for name in TOPOLOGIES:
        yield f"default-{name}", *default_cluster_request(name)
    for seed in range(12):
        request = random_request(seed)
        yield f"random-{seed}", request.topology, request.cluster, request.entries
    for seed in range(3):
        request = with_remote_cost(random_request(seed), seed)
        yield f"random-remote-{seed}", request.topology, request.cluster, request.entries


CASES = list(cases())
WEIGHTED = PlanOptions(weighted_shares=True)


def placement_of(plan: Plan) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for a in sorted(plan.assignments, key=lambda a: (a.component, a.index)):
        found.setdefault(a.component, []).append(a.machine)
    return found


def assignments_of(plan: Plan) -> list[InstanceAssignment]:
    return [InstanceAssignment(component=c, machine=m) for c, machines in placement_of(plan).items() for m in machines]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_a_request_without_weighted_shares_plans_exactly_as_before(case):
    name, topology, cluster, entries = case
    before = json.loads(GOLDEN.read_text())[name]
    plan = make_plan(topology, cluster, entries)
    assert placement_of(plan) == before["placement"]
    assert plan.input_rate == pytest.approx(before["input_rate"], rel=1e-9)
    assert plan.shares is None and "joint_shares" not in plan.stats and "weighted_shares" not in plan.stats


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_the_joint_plan_is_between_todays_weighted_plan_and_the_lp_bound(case):
    name, topology, cluster, entries = case
    today = json.loads(GOLDEN.read_text())[name]["placement"]  # today's plan (the test above: still made so)
    assignments = [InstanceAssignment(component=c, machine=m) for c, machines in today.items() for m in machines]
    post_hoc = evaluate_assignments(topology, cluster, entries, assignments, WEIGHTED)
    joint = make_plan(topology, cluster, entries, options=WEIGHTED)
    bound = lp_upper_bound(topology, cluster, ProfileTable.from_entries(entries))
    assert post_hoc.input_rate * (1 - 1e-9) <= joint.input_rate <= bound * (1 + 1e-6)
    searched = joint.stats["joint_shares"]
    if searched["searched"]:
        assert searched["start_rate"] == pytest.approx(post_hoc.input_rate, rel=1e-9)
        assert searched["rate"] == pytest.approx(joint.input_rate, rel=1e-9)
    counts = joint.instances
    for entry in joint.shares or []:
        assert len(entry.shares) == counts[entry.stream.split("->")[1]]
        assert sum(entry.shares) == pytest.approx(1.0, abs=1e-9) and min(entry.shares) >= 0
    if joint.shares:  # the plan's shares, given back to the simulator, score the plan's rate
        again = evaluate_assignments(topology, cluster, entries, assignments_of(joint), shares=joint.shares)
        assert again.input_rate == pytest.approx(joint.input_rate, rel=1e-9)


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_on_the_default_cluster_every_machine_is_at_its_quota_and_r_within_3_percent_of_the_bound(name):
    """The issue's aim, as the model predicts it: every machine within 5 % of its quota, R within 3 % of the bound."""
    topology, cluster, entries = default_cluster_request(name)
    joint = make_plan(topology, cluster, entries, options=WEIGHTED)
    bound = lp_upper_bound(topology, cluster, ProfileTable.from_entries(entries))
    assert joint.input_rate >= 0.97 * bound
    capacity = {t.name: t.capacity for t in cluster.machine_types}
    assert all(m.utilization >= 0.95 * capacity[m.type] for m in joint.machines)
    assert joint.input_rate > make_plan(topology, cluster, entries).input_rate * 1.02


def test_the_search_stops_at_the_time_limit_and_keeps_the_placement_it_started_from():
    topology, cluster, entries = default_cluster_request("diamond")
    profiles = ProfileTable.from_entries(entries)
    problem = compile_problem(topology, cluster, profiles, WEIGHTED)
    start = Layout.of(problem, fast_plan(compile_problem(topology, cluster, profiles, PlanOptions())).placement)
    deadline = Deadline("fast", 0.001)
    time.sleep(0.01)
    free = problem.fixed == 0
    found = joint_search(HostedModel.of(problem), start, free, deadline, DEFAULT_TUNING)
    assert found.stats["stopped_by"] == "time limit" and found.stats["steps"] == 0
    assert found.layout is start


def test_a_topology_without_a_weightable_stream_keeps_fasts_placement():
    topology, cluster, entries = default_cluster_request("linear")
    streams = [s.model_copy(update={"grouping": "local_or_shuffle"}) for s in topology.streams]
    topology = topology.model_copy(update={"streams": streams})
    joint = make_plan(topology, cluster, entries, options=WEIGHTED)
    assert placement_of(joint) == placement_of(make_plan(topology, cluster, entries))
    assert joint.stats["joint_shares"]["searched"] is False and joint.shares is None
