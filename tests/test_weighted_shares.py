"""Weighted shares (issue 33): the closed form scores any shares, the planner chooses them, bad ones are one sentence."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from planner.api import evaluate_assignments, make_plan
from planner.errors import PlanningError
from planner.fixtures import SCENARIOS, TOPOLOGIES, load_scenario
from planner.model import (
    Cluster,
    InstanceAssignment,
    Plan,
    PlanOptions,
    PlanRequest,
    ProfileEntry,
    StreamShares,
    Topology,
)
from planner.service.app import create_app
from planner.service.settings import ServiceSettings
from planner.stream_shares import instance_shares, machine_shares

REPO = Path(__file__).resolve().parents[1]


def docs_example() -> tuple[Topology, Cluster, list[ProfileEntry]]:
    request = PlanRequest.model_validate_json((REPO / "docs/examples/linear-plan.json").read_text())
    entries = json.loads((REPO / "docs/examples/micro-profiles.json").read_text())["entries"]
    return request.topology, request.cluster, [ProfileEntry.model_validate(e) for e in entries]


def shipped() -> list[tuple[str, Topology, Cluster, list[ProfileEntry]]]:
    cases = [(f"{t}-s{s}", (sc := load_scenario(t, s)).topology, sc.cluster, sc.profiles.entries)
             for t in TOPOLOGIES for s in SCENARIOS]
    return cases + [("docs-linear", *docs_example())]


def with_remote_costs(entries: list[ProfileEntry]) -> list[ProfileEntry]:
    return [e.model_copy(update={"remote_send": e.e / 10, "remote_receive": e.e / 20}) for e in entries]


def assignments_of(plan: Plan) -> list[InstanceAssignment]:
    ordered = sorted(plan.assignments, key=lambda a: (a.component, a.index))
    return [InstanceAssignment(component=a.component, machine=a.machine) for a in ordered]


def even_shares(topology: Topology, plan: Plan) -> list[StreamShares]:
    return [StreamShares(stream=f"{s.source}->{s.target}", shares=[1 / plan.instances[s.target]] * plan.instances[s.target])
            for s in topology.streams if s.grouping not in ("all", "global")]


@pytest.mark.parametrize("remote", [False, True], ids=["no-remote-cost", "remote-cost"])
@pytest.mark.parametrize("case", shipped(), ids=lambda c: c[0])
def test_equal_shares_score_exactly_as_an_even_split(case, remote):
    _, topology, cluster, entries = case
    entries = with_remote_costs(entries) if remote else entries
    plan = make_plan(topology, cluster, entries, "paper")
    today = evaluate_assignments(topology, cluster, entries, assignments_of(plan))
    equal = evaluate_assignments(topology, cluster, entries, assignments_of(plan), shares=even_shares(topology, plan))
    assert equal.input_rate == pytest.approx(today.input_rate, rel=1e-12)
    assert [m.utilization for m in equal.machines] == pytest.approx([m.utilization for m in today.machines], rel=1e-9)
    assert [x for a in equal.assignments for x in (a.input_rate, a.cpu)] == pytest.approx(
        [x for a in today.assignments for x in (a.input_rate, a.cpu)], rel=1e-9)
    assert today.shares is None


@pytest.mark.parametrize("strategy", ["fast", "paper"])
@pytest.mark.parametrize("case", shipped(), ids=lambda c: c[0])
def test_weighted_shares_never_score_below_an_even_split(case, strategy):
    _, topology, cluster, entries = case
    even = make_plan(topology, cluster, entries, strategy)
    weighted = make_plan(topology, cluster, entries, strategy, PlanOptions(weighted_shares=True))
    assert weighted.input_rate >= even.input_rate * (1 - 1e-9)
    assert even.shares is None
    report = weighted.stats["weighted_shares"]  # even_rate: the weighted plan's own placement split evenly
    own_even = evaluate_assignments(topology, cluster, entries, assignments_of(weighted))
    assert report["even_rate"] == pytest.approx(own_even.input_rate, rel=1e-9)
    if strategy == "paper":  # paper keeps its placement; fast chooses one for the shares (test_weighted_shares_joint)
        assert report["even_rate"] == pytest.approx(even.input_rate, rel=1e-9)
    if report["chosen"]:  # the chosen shares, given back to the simulator, score the plan's rate
        again = evaluate_assignments(topology, cluster, entries, assignments_of(weighted), shares=weighted.shares)
        assert again.input_rate == pytest.approx(weighted.input_rate, rel=1e-9)
        assert report["lp_rate"] == pytest.approx(weighted.input_rate, rel=1e-6)  # exact without remote costs
        for entry in weighted.shares or []:
            assert sum(entry.shares) == pytest.approx(1.0)


def test_weighted_shares_raise_the_rate_where_an_even_split_leaves_a_machine_idle():
    _, topology, cluster, entries = shipped()[-1]
    weighted = make_plan(topology, cluster, entries, "paper", PlanOptions(weighted_shares=True))
    even = make_plan(topology, cluster, entries, "paper")
    assert weighted.input_rate > even.input_rate * 1.01
    per_machine = machine_shares(weighted)
    assert per_machine and all(sum(m.values()) == pytest.approx(1.0, abs=1e-5) for m in per_machine.values())
    per_instance = instance_shares(weighted)
    assert {c for c, _ in per_instance} <= {s.target for s in topology.streams}


def test_a_request_without_the_option_is_planned_as_today():
    _, topology, cluster, entries = shipped()[0]
    plan = make_plan(topology, cluster, entries, "fast")
    assert plan.shares is None and "weighted_shares" not in plan.stats


@pytest.mark.parametrize("case,shares,sentence", [
    ("not summing to 1", [{"stream": "spout->low", "shares": [0.5, 0.2]}], "sum to 0.7, not 1"),
    ("unknown instance", [{"stream": "spout->low", "shares": [0.5, 0.3, 0.2]}], "name 3 instances of low, which has 2"),
    ("unknown stream", [{"stream": "spout->high", "shares": [1.0]}], "the topology does not have"),
    ("twice", [{"stream": "spout->low", "shares": [0.5, 0.5]}] * 2, "twice"),
])
def test_bad_shares_are_one_sentence(case, shares, sentence):
    topology, cluster, entries = docs_example()
    placement = [InstanceAssignment(component=c, machine=m) for c, m in
                 [("spout", "small-1"), ("low", "medium-1"), ("low", "large-1"), ("mid", "large-1"), ("high", "large-1")]]
    with pytest.raises(PlanningError) as fault:
        evaluate_assignments(topology, cluster, entries, placement, shares=[StreamShares.model_validate(s) for s in shares])
    assert sentence in str(fault.value) and "\n" not in str(fault.value)


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as c:
        yield c


def evaluation_body(shares: list[dict] | None) -> dict:
    body = json.loads((REPO / "docs/examples/linear-plan.json").read_text())
    del body["strategy"]
    body["profiles"] = {"entries": json.loads((REPO / "docs/examples/micro-profiles.json").read_text())["entries"]}
    body["assignments"] = [{"component": c, "machine": m} for c, m in
                           [("spout", "small-1"), ("low", "medium-1"), ("low", "large-1"), ("mid", "large-1"),
                            ("high", "large-1")]]
    if shares is not None:
        body["shares"] = shares
    return body


@pytest.mark.parametrize("shares,detail", [
    ([{"stream": "spout->low", "shares": [-0.5, 1.5]}], "shares[0].shares[0]: Input should be greater than or equal to 0"),
    ([{"stream": "spout->low", "shares": [0.5, 0.2]}], "the shares of stream spout->low sum to 0.7, not 1"),
    ([{"stream": "spout->low", "shares": [0.4, 0.4, 0.2]}], "the shares of stream spout->low name 3 instances of low, which has 2"),
])
def test_the_service_answers_bad_shares_422_in_one_sentence(client, shares, detail):
    answer = client.post("/v1/evaluations", json=evaluation_body(shares))
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith(detail)
    assert "\n" not in answer.json()["detail"]


def test_the_service_scores_given_shares_and_answers_them(client):
    even = client.post("/v1/evaluations", json=evaluation_body(None)).json()
    tilted = client.post("/v1/evaluations", json=evaluation_body([{"stream": "spout->low", "shares": [0.3, 0.7]}])).json()
    assert tilted["shares"] == [{"stream": "spout->low", "shares": [0.3, 0.7]}]
    low = {a["index"]: a["input_rate"] for a in tilted["assignments"] if a["component"] == "low"}
    assert low[1] / low[0] == pytest.approx(0.7 / 0.3)
    assert tilted["input_rate"] != pytest.approx(even["input_rate"])


def test_a_plans_shares_go_into_the_conf_and_onto_the_weighted_groupings():
    from topologies.submission import SubmitRequest, build_submission
    from topologies.weighted_grouping import WEIGHTED_FIELDS, WEIGHTED_SHUFFLE, shares_conf, weight_flux_document

    _, topology, cluster, entries = shipped()[-1]
    plan = make_plan(topology, cluster, entries, "paper", PlanOptions(weighted_shares=True))
    conf = shares_conf(plan, {"medium-1": "127.0.0.3"})
    assert "spout->low" in conf and all(sum(m.values()) == pytest.approx(1.0, abs=1e-5) for m in conf.values())
    submission = build_submission(SubmitRequest(topology="linear", conf={"hetsched.grouping.shares": conf}))
    inputs = {(g.componentId, target): grouping for target, bolt in submission.topology.bolts.items()
              for g, grouping in bolt.common.inputs.items()}
    weighted = {stream for stream, g in inputs.items() if g.custom_object is not None}
    assert weighted == {tuple(s.split("->")) for s in conf}
    assert all(inputs[s].custom_object.full_class_name == WEIGHTED_SHUFFLE for s in weighted)
    plain = build_submission(SubmitRequest(topology="linear"))
    assert all(g.custom_object is None for bolt in plain.topology.bolts.values() for g in bolt.common.inputs.values())
    flux = {"streams": [{"from": "a", "to": "b", "grouping": {"type": "FIELDS", "args": ["word", "n"]}},
                        {"from": "b", "to": "c", "grouping": {"type": "SHUFFLE"}},
                        {"from": "c", "to": "d", "grouping": {"type": "GLOBAL"}}]}
    rewritten = weight_flux_document(flux, {("a", "b"), ("c", "d")})["streams"]
    assert rewritten[0]["grouping"] == {"type": "CUSTOM", "customClass": {"className": WEIGHTED_FIELDS,
                                                                          "constructorArgs": ["word,n"]}}
    assert rewritten[1:] == flux["streams"][1:]
