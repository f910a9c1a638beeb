"""`hetsched bench`'s planned-weighted (issue 33): its own plan made with weighted shares, submitted with that plan's
counts and shares, predicted with them, and planned's run where nothing can be weighted. No cluster."""
from __future__ import annotations

import pytest

from bench import report
from bench.bounds import compute_bounds_of, fluid_bound, full_quota_bound
from bench.experiment import BenchResult, plan_of
from bench.placement import ActualPlacement, placement_shares
from bench.run import prediction_request
from bench.schedulers import plan_request, run_specs, weightable, weighted_fallback
from cluster.spec import load_spec
from planner.api import evaluate_assignments, make_plan
from planner.model import PlanOptions, ProfileRef
from planner.stream_shares import CONF_KEY as SHARES_KEY, machine_shares
from topologies.catalog import lookup, planner_topology
from tests.test_bench import profile_set, settings

URL = "http://127.0.0.1:1"


@pytest.fixture(scope="module")
def plans():
    """Linear's plan as planned runs it, and the one made with weighted shares (fewer low instances, uneven shares)."""
    topology, cluster, entries = planner_topology(lookup("linear")), load_spec().planner_cluster(), profile_set().entries
    return (make_plan(topology, cluster, entries),
            make_plan(topology, cluster, entries, options=PlanOptions(weighted_shares=True)).model_copy(update={"id": "w1"}))


def _placement(plan) -> ActualPlacement:
    return ActualPlacement({c: [a.machine for a in sorted(plan.assignments, key=lambda a: a.index) if a.component == c]
                            for c in plan.instances})


def test_planned_weighted_asks_for_a_plan_with_weighted_shares_and_planned_does_not():
    cluster = load_spec().planner_cluster()
    weighted = plan_request(lookup("linear"), cluster, "test-profiles", None, weighted_shares=True)
    assert weighted.options.weighted_shares and weighted.profiles.name == "test-profiles"
    assert not plan_request(lookup("linear"), cluster, "test-profiles", "fast").options.weighted_shares


def test_planned_weighted_submits_its_own_plans_counts_and_shares(tmp_path, plans):
    planned, weighted = plans
    assert weighted.instances != planned.instances, "the joint plan chooses its own counts here"
    specs = run_specs(settings(tmp_path, schedulers=("planned", "planned-weighted")), lookup("linear"), planned,
                      profile_set().entries, 3, "small", 0.2, URL, "test-profiles", weighted)
    by = {s.scheduler: s for s in specs}
    run = by["planned-weighted"]
    assert run.plan_id == "w1" and run.parallelism == weighted.instances and run.profiles == "test-profiles"
    assert run.conf[SHARES_KEY] == machine_shares(weighted) and SHARES_KEY not in by["planned"].conf
    assert f"R = {weighted.input_rate:.2f} tuples/s predicted with its shares" in run.note
    result = BenchResult(settings(tmp_path), "now", load_spec(), plans={"linear": planned},
                         weighted_plans={"linear": weighted})
    assert plan_of(result, run) is weighted and plan_of(result, by["planned"]) is planned


@pytest.mark.parametrize("without_shares", [True, False])
def test_a_topology_that_cannot_be_weighted_runs_planneds_plan_saying_why(tmp_path, plans, without_shares):
    planned, weighted = plans
    even = weighted.model_copy(update={"shares": None}) if without_shares else None
    [run] = run_specs(settings(tmp_path, schedulers=("planned-weighted",)), lookup("linear"), planned,
                      profile_set().entries, 3, "small", 0.2, URL, "test-profiles", even)
    assert run.plan_id == planned.id and run.parallelism == planned.instances and SHARES_KEY not in run.conf
    why = weighted_fallback("linear", even)
    assert why is not None and why in run.note and why.count(".") == 0
    assert ("kept every stream even" if without_shares else "no shuffle, fields or none stream") in why
    assert weighted_fallback("linear", weighted) is None
    assert weightable(lookup("linear"))


def test_the_run_is_predicted_with_its_shares_where_storm_placed_it(plans):
    _planned, weighted = plans
    placement, cluster, ref = _placement(weighted), load_spec().planner_cluster(), ProfileRef(name="test-profiles")
    with_shares = prediction_request(lookup("linear"), placement, cluster, ref, shares=machine_shares(weighted))
    even = prediction_request(lookup("linear"), placement, cluster, ref)
    assert even.shares is None and with_shares.shares
    assert {s.stream for s in with_shares.shares} == set(machine_shares(weighted))

    def rate(topology, assignments, options, shares):
        return evaluate_assignments(topology, cluster, profile_set().entries, assignments, options, shares).input_rate

    assert rate(with_shares.topology, with_shares.assignments, with_shares.options, with_shares.shares) > \
        rate(even.topology, even.assignments, even.options, None) * 1.01
    own = rate(planner_topology(lookup("linear")), placement.assignments(), None,
               placement_shares(placement, machine_shares(weighted)))
    assert own == pytest.approx(weighted.input_rate, rel=1e-4), "on the plan's placement its shares are the plan's"


def test_shares_follow_the_executors_as_the_weighted_groupings_split_them():
    placement = ActualPlacement({"spout": ["m1"], "low": ["a", "a", "b", "c"]})
    [stream] = placement_shares(placement, {"spout->low": {"a": 0.6, "b": 0.2, "gone": 0.2}, "low": {"a": 1.0}})
    per_executor = [0.3, 0.3, 0.2, (0.3 + 0.3 + 0.2) / 3]  # a's share split, c unnamed: the others' mean
    assert stream.stream == "spout->low"
    assert stream.shares == pytest.approx([w / sum(per_executor) for w in per_executor])
    assert placement_shares(placement, {"spout->low": {"gone": 1.0}}) == [], "no machine named: Storm's even split"
    assert placement_shares(placement, None) == []


def test_the_report_puts_each_run_against_the_fluid_bound(tmp_path, plans):
    planned, weighted = plans
    bound = fluid_bound(lookup("linear"), load_spec().planner_cluster(), profile_set().entries)
    assert bound is not None and bound >= weighted.input_rate >= planned.input_rate

    def run(scheduler, measured, predicted, conf):
        return {"topology": "linear", "scheduler": scheduler, "status": "ok", "topology_conf": conf,
                "measured": {"input_rate": measured, "sink_throughput": measured},
                "predicted": {"input_rate": predicted, "sink_throughput": predicted}}

    data = {"runs": [run("planned", 30.0, 32.0, {}), run("planned-weighted", 34.0, 35.0, {SHARES_KEY: {"x": {}}})],
            "fluid_bounds": {"linear": 40.0}}
    [line] = report.bounds_lines(data)
    assert line == ("Linear: LP fluid bound R 40.00 tuples/s; measured R: planned 30.00 (75%; predicted 32.00), "
                    "planned-weighted 34.00 (85%; predicted with its shares 35.00)")
    assert report.comparisons(data)[0]["planned-weighted_vs_planned"] == pytest.approx(34 / 30, abs=1e-3)
    assert report.bounds_lines({**data, "fluid_bounds": {}}) == []


def test_the_compute_bound_lies_above_the_fluid_bound_and_is_recomputed_for_an_older_bench_file():
    spec, entries = load_spec(), profile_set().entries
    fluid = fluid_bound(lookup("linear"), spec.planner_cluster(), entries)
    most = full_quota_bound(lookup("linear"), spec, entries)
    assert fluid is not None and most is not None and most > fluid, "no base load, no MET: more rate, never less"

    run = {"topology": "linear", "scheduler": "planned", "status": "ok", "topology_conf": {},
           "measured": {"input_rate": 30.0, "sink_throughput": 30.0}, "predicted": {"input_rate": 32.0}}
    older = {"runs": [run], "fluid_bounds": {"linear": 40.0},
             "cluster": {"spec": spec.model_dump(mode="json")},
             "profile_set": {"entries": [e.model_dump(mode="json", exclude_none=True) for e in entries]}}
    assert compute_bounds_of(older) == {"linear": pytest.approx(most)}
    [line] = report.bounds_lines({**older, "compute_bounds": {"linear": 50.0}})
    assert line == ("Linear: LP fluid bound R 40.00 tuples/s, compute bound 50.00; measured R: planned 30.00 (75%, "
                    "60% of compute; predicted 32.00)")
