"""``POST /v1/capacity`` through a real ``hetsched serve``, and ``hetsched capacity``: answers and one-sentence refusals."""
from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from hetsched.cli import _register, app
from planner.capacity_model import CapacityAnswer
from planner.client import request_body
from planner.fixtures import fixture_path
from tests.fixtures.service import REPO
from tests.test_capacity import tiny_entries, tiny_request

_register()
runner = CliRunner()


@pytest.fixture
def http(planner_service):
    with planner_service.http() as client:
        yield client


def body(**changes) -> dict:
    return {**request_body(tiny_request({"a": 80.0}, add_next=False, lose=[])), **changes}


def refused(http, payload: dict, error: str = "planning_error") -> str:
    response = http.post("/v1/capacity", json=payload)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert answer["error"] == error
    assert "\n" not in answer["detail"]
    return answer["detail"]


def test_capacity_answers_the_cheapest_set_with_its_plan(http):
    response = http.post("/v1/capacity", json=request_body(tiny_request({"a": 80.0})))
    assert response.status_code == 200, response.text
    answer = CapacityAnswer.model_validate(response.json())
    assert answer.purchase.scale >= 1.0 - 1e-6
    assert answer.purchase.buy and answer.purchase.cost > 0
    assert answer.purchase.bottleneck and answer.add_next and answer.losses


def test_capacity_with_a_stored_profile_set_names_it(http):
    stored = {"name": "capacity-tiny", "entries": [e.model_dump() for e in tiny_entries()]}
    assert http.put("/v1/profiles/capacity-tiny", json=stored).status_code == 200
    response = http.post("/v1/capacity", json=body(profiles={"name": "capacity-tiny"}))
    assert response.status_code == 200, response.text
    missing = http.post("/v1/capacity", json=body(profiles={"name": "capacity-nope"}))
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_capacity_is_in_the_openapi_schema(http):
    assert set(http.get("/openapi.json").json()["paths"]["/v1/capacity"]) == {"post"}


def test_unreachable_targets_are_422_naming_the_component_and_the_best_rate(http):
    payload = request_body(tiny_request({"a": 90.0}, cores=2.0, parallelism=1, add_next=False, lose=[]))
    detail = refused(http, payload)
    assert "component a/work" in detail and "a at most 61.250 of 90 tuples/s" in detail


def test_a_type_without_a_price_is_422(http):
    payload = body()
    del payload["machine_types"][0]["price"]
    assert refused(http, payload).startswith("machine type slow has no price")


def test_a_negative_price_is_422(http):
    payload = body()
    payload["machine_types"][1]["price"] = -1
    assert refused(http, payload).startswith("machine type fast has a negative price (-1)")


def test_contradictory_owned_machines_are_422(http):
    assert refused(http, body(owned=[{"id": "x", "type": "ancient"}])).startswith(
        "owned machine x is of machine type ancient, which is not offered")
    assert refused(http, body(owned=[{"id": "x", "type": "slow"}, {"id": "x", "type": "slow"}])).startswith(
        "the owned machines name x twice")


def test_a_search_past_the_time_limit_is_422_time_limit(http):
    payload = body(options={"time_limit_s": 1e-9})
    assert refused(http, payload, "time_limit").startswith("capacity planning ran past its time limit")


def test_a_body_that_breaks_the_schema_is_invalid_request(http):
    payload = body()
    payload["machine_types"][0]["available"] = -1
    assert refused(http, payload, "invalid_request").startswith("machine_types[0].available")


# --- the command line ------------------------------------------------------------------------------------------

def write_request(tmp_path, **changes) -> str:
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps(body(**changes)))
    return str(path)


def test_the_command_prints_the_answer_as_json(tmp_path):
    result = runner.invoke(app, ["capacity", "--request", write_request(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    answer = CapacityAnswer.model_validate_json(result.stdout)
    assert answer.purchase.scale >= 1.0 - 1e-6


def test_the_command_prints_tables(tmp_path):
    result = runner.invoke(app, ["capacity", "--request", write_request(tmp_path, lose=None, add_next=True)])
    assert result.exit_code == 0, result.output
    for title in ("Cheapest machines that sustain the rates", "One machine to add next", "If one machine is lost"):
        assert title in result.stdout


def test_the_command_takes_a_topology_a_cluster_and_prices(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"machine_types": [{"name": "slow"}, {"name": "fast"}],
                                       "machines": [{"id": "mine", "type": "slow"}]}))
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps([e.model_dump() for e in tiny_entries()]))
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(tiny_request({"a": 1.0}).topologies[0].topology.model_dump(by_alias=True)))
    result = runner.invoke(app, ["capacity", "--topology", str(topology), "--target-rate", "80", "--cluster", str(cluster),
                                 "--profiles", str(profiles), "--price", "slow=1", "--price", "fast=3", "--json"])
    assert result.exit_code == 0, result.output
    answer = CapacityAnswer.model_validate_json(result.stdout)
    assert "mine" in {m.id for m in answer.purchase.cluster.machines}


def test_the_command_refuses_a_cluster_whose_types_lack_a_price(tmp_path):
    result = runner.invoke(app, ["capacity", "--topology", str(fixture_path("paper_topology_linear.yaml")),
                                 "--target-rate", "5", "--cluster", str(fixture_path("paper_cluster_1.yaml")),
                                 "--profiles", str(fixture_path("paper_profiles.yaml")), "--price", "m1=1"])
    assert result.exit_code == 1
    assert "machine type m2 has no price" in result.stderr


@pytest.mark.parametrize("change, sentence", [
    ({"owned": [{"id": "x", "type": "ancient"}]}, "owned machine x is of machine type ancient, which is not offered"),
    ({"machine_types": [{"name": "slow", "price": -1}, {"name": "fast", "price": 3}]},
     "machine type slow has a negative price (-1)"),
    ({"options": {"time_limit_s": 1e-9}}, "capacity planning ran past its time limit"),
])
def test_the_command_refuses_in_one_sentence(tmp_path, change, sentence):
    result = runner.invoke(app, ["capacity", "--request", write_request(tmp_path, **change)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {sentence}")
    assert result.stderr.count("\n") == 1


def test_the_command_refuses_unreachable_targets_naming_the_component(tmp_path):
    path = tmp_path / "unreachable.json"
    path.write_text(json.dumps(request_body(tiny_request({"a": 90.0}, cores=2.0, parallelism=1, add_next=False, lose=[]))))
    result = runner.invoke(app, ["capacity", "--request", str(path)])
    assert result.exit_code == 1 and "component a/work" in result.stderr


def test_the_command_refuses_a_malformed_price(tmp_path):
    result = runner.invoke(app, ["capacity", "--topology", "t.yaml", "--target-rate", "1", "--cluster", "c.yaml",
                                 "--profiles", "p.yaml", "--price", "slow"])
    assert result.exit_code == 1 and "--price slow is not TYPE=PRICE" in result.stderr


def test_the_command_takes_a_cluster_spec_whose_machines_are_owned(tmp_path):
    topology = tmp_path / "linear.json"
    topology.write_text(json.dumps(json.loads((REPO / "docs" / "examples" / "linear-plan.json").read_text())["topology"]))
    result = runner.invoke(app, ["capacity", "--topology", str(topology), "--target-rate", "5",
                                 "--cluster-spec", str(REPO / "cluster" / "specs" / "default.yaml"),
                                 "--profiles", str(REPO / "profiles" / "default-cluster.json"), "--price", "small=1",
                                 "--price", "medium=2", "--price", "large=4", "--lose", "small-1", "--json"])
    assert result.exit_code == 0, result.output
    answer = CapacityAnswer.model_validate_json(result.stdout)
    spec_machines = {"small-1", "medium-1", "large-1"}
    assert spec_machines <= {m.id for m in answer.purchase.cluster.machines}
    assert [loss.machine for loss in answer.losses] == ["small-1"]
