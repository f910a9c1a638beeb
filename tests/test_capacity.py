"""Capacity planning (planner.capacity) against brute force on tiny requests, and its refusals, one sentence each."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner.brute_force import brute_force
from planner.capacity import (
    SCALE_TOLERANCE,
    Offer,
    bought_cluster,
    combined_topology,
    plan_capacity,
)
from planner.capacity_model import CapacityAnswer, CapacityRequest
from planner.errors import PlanningError, PlanningTimeout
from planner.fixtures import load_cluster, load_profiles, load_topology
from planner.model import Cluster, Machine, PlanOptions, ProfileEntry
from planner.problem import compile_problem
from planner.profiles import ProfileTable
from planner.simulator import evaluate_problem

BRUTE_MAX_PER_TYPE = 2
"""Candidate sets buy at most this many machines of a type: with 2 types and 3 instances a component, brute force
tries a few thousand placements per set."""


def brute_instances(request: CapacityRequest) -> int:
    """Instances a component brute force tries: 3 with one topology, 2 with two (a few thousand placements a set)."""
    return 3 if len(request.topologies) == 1 else 2


def tiny_entries(cores_bound: bool = False) -> list[ProfileEntry]:
    """A spout and one kind of work on a slow, cheap type and a fast, dear one."""
    return [
        ProfileEntry(profile="spout", machine_type="slow", e=0.001, met=0.5),
        ProfileEntry(profile="spout", machine_type="fast", e=0.0005, met=0.5),
        ProfileEntry(profile="work", machine_type="slow", e=0.02, met=1.0),
        ProfileEntry(profile="work", machine_type="fast", e=0.008, met=1.0),
    ]


def chain(name: str, parallelism: int | None = None) -> dict:
    work = {"id": "work", "kind": "bolt", "profile": "work"}
    if parallelism is not None:
        work["parallelism"] = parallelism
    return {"name": name, "components": [{"id": "spout", "kind": "spout", "profile": "spout"}, work],
            "streams": [{"from": "spout", "to": "work"}]}


def tiny_request(targets: dict[str, float], prices=(1.0, 3.0), owned: list[dict] | None = None, cores: float | None = None,
                 parallelism: int | None = None, **extra) -> CapacityRequest:
    types = [{"name": "slow", "price": prices[0]}, {"name": "fast", "price": prices[1]}]
    if cores is not None:
        for t in types:
            t["cores"] = cores
    return CapacityRequest.model_validate({
        "topologies": [{"topology": chain(name, parallelism), "target_rate": rate} for name, rate in targets.items()],
        "machine_types": types, "owned": owned or [],
        "profiles": {"entries": [e.model_dump() for e in tiny_entries()]}, **extra})


def brute_scale(request: CapacityRequest, cluster: Cluster) -> float:
    """The best scale of any placement with at most ``brute_instances`` instances a component (planner.brute_force)."""
    if not cluster.machines:
        return 0.0
    problem = compile_problem(combined_topology(request.topologies), cluster,
                              ProfileTable.from_entries(request.profiles.entries or []), PlanOptions())
    return brute_force(problem, brute_instances(request)).input_rate


def brute_cheapest(request: CapacityRequest) -> float:
    """The least cost of a set of machines (at most BRUTE_MAX_PER_TYPE bought a type) some placement of which
    sustains every required rate."""
    offer = Offer.of(request)
    costs = []
    for buy in itertools.product(range(BRUTE_MAX_PER_TYPE + 1), repeat=len(offer.types)):
        if not request.owned and not any(buy):
            continue
        cluster = bought_cluster(request, np.array(buy))
        if brute_scale(request, cluster) >= 1.0 - SCALE_TOLERANCE:
            costs.append(offer.cost(np.array(buy)))
    assert costs, "the brute-force range holds no set that sustains the rates: widen it"
    return min(costs)


CASES = {
    "one topology": lambda: tiny_request({"a": 80.0}),
    "dear fast type": lambda: tiny_request({"a": 100.0}, prices=(1.0, 2.5)),
    "one owned machine": lambda: tiny_request({"a": 120.0}, owned=[{"id": "mine", "type": "slow"}]),
    "thread caps": lambda: tiny_request({"a": 70.0}, cores=2.0),
    "two topologies": lambda: tiny_request({"a": 40.0, "b": 30.0}),
}


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[CapacityRequest, CapacityAnswer]]:
    out = {}
    for name, make in CASES.items():
        request = make()
        out[name] = (request, plan_capacity(request, request.profiles.entries or []))
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_the_cheapest_set_costs_what_brute_force_finds_and_is_proven(answers, case):
    request, answer = answers[case]
    purchase = answer.purchase
    assert purchase.cost == pytest.approx(brute_cheapest(request))
    assert purchase.proven
    assert purchase.cost_lower_bound <= purchase.cost + 1e-9


@pytest.mark.parametrize("case", list(CASES))
def test_the_purchase_plan_sustains_every_required_rate_as_the_simulator_scores_it(answers, case):
    request, answer = answers[case]
    purchase = answer.purchase
    problem = compile_problem(combined_topology(request.topologies), purchase.cluster,
                              ProfileTable.from_entries(request.profiles.entries or []), PlanOptions())
    placement: dict[str, list[str]] = {}
    for a in sorted(purchase.plan.assignments, key=lambda a: (a.component, a.index)):
        placement.setdefault(a.component, []).append(a.machine)
    scored = evaluate_problem(problem, placement)
    assert scored.input_rate == pytest.approx(purchase.scale)
    assert purchase.scale >= 1.0 - SCALE_TOLERANCE
    for t in request.topologies:
        assert purchase.rates[t.topology.name] >= t.required_rate * (1.0 - SCALE_TOLERANCE)
    owned = {m.id for m in request.owned}
    assert owned <= {m.id for m in purchase.cluster.machines}


@pytest.mark.parametrize("case", list(CASES))
def test_each_next_machine_is_placed_exactly_and_gains_at_least_what_brute_force_finds(answers, case):
    request, answer = answers[case]
    assert {a.machine_type for a in answer.add_next} == {t.name for t in request.machine_types}
    base = answer.purchase.cluster
    for addition in answer.add_next:
        kind = next(t for t in request.machine_types if t.name == addition.machine_type)
        grown = base.model_copy(update={"machines": [*base.machines, Machine(id="added", type=kind.name)]})
        assert addition.placement_proven
        assert addition.scale >= brute_scale(request, grown) * (1 - 1e-6)
        assert addition.gain == pytest.approx(addition.scale - answer.purchase.scale)
    gains = [a.gain for a in answer.add_next]
    assert gains == sorted(gains, reverse=True)


@pytest.mark.parametrize("case", list(CASES))
def test_each_loss_is_placed_exactly_and_leaves_at_least_the_rate_brute_force_finds(answers, case):
    request, answer = answers[case]
    cluster = answer.purchase.cluster
    assert [loss.machine for loss in answer.losses] == [m.id for m in cluster.machines]
    for loss in answer.losses:
        rest = cluster.model_copy(update={"machines": [m for m in cluster.machines if m.id != loss.machine]})
        assert loss.placement_proven
        assert loss.scale >= brute_scale(request, rest) * (1 - 1e-6)
        for t in request.topologies:
            assert 0.0 <= loss.rates[t.topology.name] <= t.required_rate * (1 + 1e-9)


@pytest.mark.parametrize("case", list(CASES))
def test_every_answer_names_its_bottleneck_and_its_gap_to_the_lp_bound(answers, case):
    _, answer = answers[case]
    for prediction in [answer.purchase, *answer.add_next, *(loss for loss in answer.losses if loss.scale > 0)]:
        assert prediction.bottleneck
        assert 0.0 <= prediction.lp_gap <= 1.0
        assert prediction.scale <= prediction.lp_bound_scale * (1 + 1e-6)


def test_a_loss_keeps_the_more_important_topologys_minimum_first():
    request = CapacityRequest.model_validate({
        **tiny_request({"a": 40.0, "b": 40.0}, strategy="fast").model_dump(by_alias=True),
        "topologies": [{"topology": chain("a"), "target_rate": 40.0, "min_rate": 30.0, "priority": 0},
                       {"topology": chain("b"), "target_rate": 40.0, "min_rate": 30.0, "priority": 5}]})
    answer = plan_capacity(request, request.profiles.entries or [])
    hurt = [loss for loss in answer.losses if loss.scale < 1.0 - SCALE_TOLERANCE and loss.scale > 0]
    assert hurt, "some loss should leave less than the required rates"
    for loss in hurt:
        assert loss.rates["a"] >= loss.rates["b"] - 1e-9
        assert loss.rates["a"] >= min(30.0, loss.scale * 40.0) - 1e-6


def test_linear_diamond_and_star_with_targets_buy_a_set_that_sustains_them():
    profiles = load_profiles()
    types = [{**t.model_dump(exclude_none=True), "price": price}
             for t, price in zip(load_cluster(1).machine_types, (1.0, 1.6, 2.0))]
    request = CapacityRequest.model_validate({
        "topologies": [{"topology": load_topology(name).model_dump(by_alias=True, exclude_none=True), "target_rate": rate}
                       for name, rate in (("linear", 10.0), ("diamond", 6.0), ("star", 5.0))],
        "machine_types": types, "profiles": {"entries": [e.model_dump() for e in profiles.entries]},
        "add_next": False, "lose": []})
    answer = plan_capacity(request, profiles.entries)
    purchase = answer.purchase
    assert purchase.scale >= 1.0 - SCALE_TOLERANCE
    assert purchase.cost_lower_bound <= purchase.cost + 1e-9
    assert {t.topology.name for t in request.topologies} == set(purchase.rates)
    assert {a.component.split("/")[0] for a in purchase.plan.assignments} == {"linear", "diamond", "star"}


# --- bad requests: one sentence each ---------------------------------------------------------------------------

def refusal(request: CapacityRequest) -> str:
    with pytest.raises(PlanningError) as caught:
        plan_capacity(request, request.profiles.entries or [])
    sentence = str(caught.value)
    assert "\n" not in sentence
    return sentence


def test_targets_no_mix_reaches_name_the_component_and_the_best_rate():
    # one instance (parallelism 1), one thread of a 2-core machine: the fast type's thread carries
    # (50 - 1) / (100 * 0.008) = 61.25 tuples/s at most
    request = tiny_request({"a": 90.0}, cores=2.0, parallelism=1)
    sentence = refusal(request)
    best = (100.0 / 2.0 - 1.0) / (100.0 * 0.008)
    assert "component a/work" in sentence
    assert f"a at most {best:.3f} of 90 tuples/s" in sentence


def test_targets_beyond_the_machines_that_can_be_bought_name_them():
    request = tiny_request({"a": 400.0})
    request.machine_types[0].available = 1
    request.machine_types[1].available = 1
    sentence = refusal(request)
    assert "the machines that can be bought (1 slow, 1 fast)" in sentence
    assert "a at most" in sentence


def test_a_type_without_a_price_is_refused_naming_it():
    request = tiny_request({"a": 10.0})
    request.machine_types[1].price = None
    assert refusal(request).startswith("machine type fast has no price")


def test_a_negative_price_is_refused_naming_it():
    request = tiny_request({"a": 10.0}, prices=(1.0, -2.0))
    assert refusal(request).startswith("machine type fast has a negative price (-2)")


def test_an_owned_machine_of_a_type_not_offered_is_refused():
    request = tiny_request({"a": 10.0}, owned=[{"id": "old", "type": "ancient"}])
    assert refusal(request).startswith("owned machine old is of machine type ancient, which is not offered")


def test_owned_machines_with_one_id_twice_are_refused():
    request = tiny_request({"a": 10.0}, owned=[{"id": "m", "type": "slow"}, {"id": "m", "type": "fast"}])
    assert refusal(request).startswith("the owned machines name m twice")


def test_a_topology_named_twice_is_refused():
    request = tiny_request({"a": 10.0})
    request.topologies.append(request.topologies[0])
    assert refusal(request).startswith("the request names topology a twice")


def test_a_search_past_its_time_limit_before_any_answer_is_a_time_limit_sentence():
    request = tiny_request({"a": 80.0}, options={"time_limit_s": 1e-9})
    with pytest.raises(PlanningTimeout) as caught:
        plan_capacity(request, request.profiles.entries or [])
    assert str(caught.value).startswith("capacity planning ran past its time limit of 1e-09 s")


def test_a_loss_of_a_machine_not_in_the_answer_is_refused():
    request = tiny_request({"a": 80.0}, lose=["nosuch"])
    assert refusal(request).startswith("lose names machine nosuch, which is not in the answer's cluster")


def test_an_unknown_strategy_is_refused_naming_the_known_ones():
    request = tiny_request({"a": 80.0}, strategy="nosuch")
    assert refusal(request).startswith("unknown strategy nosuch; known strategies: ")
