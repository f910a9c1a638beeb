"""A request whose profiles lack pairs it needs: one code (profile_missing) with every pair, never an admission refusal."""
from __future__ import annotations

import copy

import pytest
from fastapi.testclient import TestClient

from planner.errors import MissingProfile, PlanningError, ProfilesMissing
from planner.model import Cluster, ProfileEntry, Topology
from planner.profiles import ProfileTable
from planner.service.app import create_app
from planner.service.settings import ServiceSettings
from planner.validation import check_profiles, missing_profiles
from tests.fixtures.service import small_plan_request


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", tenant_ttl_s=3600))) as c:
        yield c


def without(body: dict, *pairs: tuple[str, str]) -> dict:
    body = copy.deepcopy(body)
    body["profiles"]["entries"] = [e for e in body["profiles"]["entries"] if (e["profile"], e["machine_type"]) not in pairs]
    return body


def test_every_missing_pair_is_named_once_with_a_component_that_needs_it():
    body = without(small_plan_request(), ("highCompute", "fast"), ("highCompute", "slow"), ("lowCompute", "fast"))
    topology, cluster = Topology.model_validate(body["topology"]), Cluster.model_validate(body["cluster"])
    assert {(m.profile, m.machine_type) for m in missing_profiles(topology, cluster, ProfileTable.from_entries([]))} == {
        (p, t) for p in ("spout", "lowCompute", "highCompute") for t in ("slow", "fast")}
    with pytest.raises(ProfilesMissing) as caught:
        check_profiles(topology, cluster, [ProfileEntry.model_validate(e) for e in body["profiles"]["entries"]])
    assert caught.value.missing == [MissingProfile("low", "lowCompute", "fast"), MissingProfile("high", "highCompute", "slow"),
                                    MissingProfile("high", "highCompute", "fast")]
    assert str(caught.value) == ("no profile for lowCompute on machine type fast (component low); missing too: "
                                 "(highCompute, slow), (highCompute, fast)")
    assert isinstance(caught.value, PlanningError)  # every caller of the core still sees a PlanningError


def test_a_plan_request_missing_pairs_is_422_profile_missing_with_the_pairs(client):
    response = client.post("/v1/plans", json=without(small_plan_request(), ("highCompute", "fast")))
    assert response.status_code == 422, response.text
    assert response.json() == {"detail": "no profile for highCompute on machine type fast (component high)",
                               "error": "profile_missing",
                               "missing": [{"component": "high", "profile": "highCompute", "machine_type": "fast"}]}


def test_a_tenant_missing_its_own_pairs_is_not_answered_as_an_admission_refusal(client):
    """The plugin sends every request as a tenant; its own missing pair used to read as other tenants leaving no room."""
    body = without(small_plan_request(), ("highCompute", "slow"))
    body["topology"]["name"] = "own-fault"
    body["tenant"] = {"min_rate": 1.0}
    response = client.post("/v1/plans", json=body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["error"] == "profile_missing"
    assert "@" not in error["detail"]  # named by the request's machine types, not the derived per-machine ones
    assert error["missing"] == [{"component": "high", "profile": "highCompute", "machine_type": "slow"}]
    assert client.get("/v1/ledger").json()["tenants"] == []  # nothing registered


def test_a_stored_set_missing_pairs_is_profile_missing_too(client):
    body = small_plan_request()
    entries = [e for e in body["profiles"]["entries"] if e["profile"] != "lowCompute"]
    assert client.put("/v1/profiles/partial", json={"name": "partial", "entries": entries}).status_code == 200
    body["profiles"] = {"name": "partial"}
    body["tenant"] = {}
    error = client.post("/v1/plans", json=body).json()
    assert error["error"] == "profile_missing"
    assert [(m["profile"], m["machine_type"]) for m in error["missing"]] == [("lowCompute", "slow"), ("lowCompute", "fast")]


def test_an_unknown_set_stays_404_not_found(client):
    body = small_plan_request(profiles={"name": "nope"})
    body["tenant"] = {}
    response = client.post("/v1/plans", json=body)
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_an_evaluation_missing_pairs_names_them_in_the_same_sentence(planner_service):
    """Evaluations and repairs check profiles in the planning processes, which answer every core fault as
    planning_error (docs/reference/api.md says so); the sentence is the same."""
    body = small_plan_request()
    with planner_service.http() as http:
        plan = http.post("/v1/plans", json=body).json()
        evaluation = {k: copy.deepcopy(body[k]) for k in ("topology", "cluster", "profiles")}
        evaluation["assignments"] = [{"component": a["component"], "machine": a["machine"]} for a in plan["assignments"]]
        evaluation["profiles"]["entries"] = [e for e in evaluation["profiles"]["entries"] if e["profile"] != "lowCompute"]
        response = http.post("/v1/evaluations", json=evaluation)
    assert response.status_code == 422, response.text
    assert response.json() == {"detail": "no profile for lowCompute on machine type slow (component low); missing too: "
                                         "(lowCompute, fast)", "error": "planning_error"}
