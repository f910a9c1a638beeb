"""Every endpoint of docs/reference/api.md through a real ``hetsched serve`` process on a loopback port."""
from __future__ import annotations

import asyncio
import copy
import tomllib
from importlib import metadata

import httpx
import pytest

from planner.strategies import DEFAULT_STRATEGY, STRATEGIES
from tests.fixtures.service import REPO, small_plan_request, small_profiles


@pytest.fixture
def http(planner_service):
    with planner_service.http() as client:
        yield client


def _plan(http, body: dict) -> dict:
    response = http.post("/v1/plans", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _error(http, method: str, path: str, status: int, **kwargs) -> dict:
    response = http.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def test_the_service_listens_on_loopback_by_default(planner_service):
    assert planner_service.url.startswith("http://127.0.0.1:")


def test_health_is_open_and_says_ok_with_the_installed_version(http):
    response = http.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body == {"status": "ok", "version": metadata.version("hetsched")}
    assert body["version"] == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"], (
        "the installed hetsched is not this checkout's version: run make setup again")


def test_openapi_lists_every_endpoint_of_the_contract(http):
    paths = http.get("/openapi.json").json()["paths"]
    assert set(paths["/v1/plans"]) == {"post"}
    assert set(paths["/v1/plans/{plan_id}"]) == {"get", "delete"}
    assert set(paths["/v1/evaluations"]) == {"post"}
    assert set(paths["/v1/profiles/{name}"]) == {"put", "get"}
    assert set(paths["/v1/profiles/{name}/versions"]) == {"get"}
    assert set(paths["/v1/profiles/{name}/versions/{version}"]) == {"get", "delete"}
    assert "409" in paths["/v1/profiles/{name}/versions/{version}"]["delete"]["responses"]
    assert set(paths["/v1/profiles"]) == {"get"}
    assert set(paths["/healthz"]) == {"get"}
    assert "201" in paths["/v1/plans"]["post"]["responses"]
    docs = http.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_profile_sets_are_stored_superseded_and_listed(http):
    first = small_profiles("http-profiles")
    response = http.put("/v1/profiles/http-profiles", json=first)
    assert response.status_code == 200
    assert response.json()["entries"][0]["e"] == first["entries"][0]["e"]
    replaced = copy.deepcopy(first)
    replaced["entries"][0]["e"] = 0.5
    replaced["source"] = {"run": "second"}
    assert http.put("/v1/profiles/http-profiles", json=replaced).status_code == 200
    stored = http.get("/v1/profiles/http-profiles").json()
    assert stored["entries"][0]["e"] == 0.5 and stored["source"] == {"run": "second"} and stored["version"] == 2
    assert "http-profiles" in http.get("/v1/profiles").json()["profiles"]


def test_unknown_profile_set_is_404_with_its_name(http):
    body = _error(http, "GET", "/v1/profiles/no-such-set", 404)
    assert body["detail"] == "profile set 'no-such-set' does not exist"


def test_profile_set_name_in_body_must_match_the_path(http):
    body = _error(http, "PUT", "/v1/profiles/one", 422, json=small_profiles("other"))
    assert "'other'" in body["detail"] and "'one'" in body["detail"]


@pytest.mark.parametrize("base_load, fault", [
    ({"slow": 100.0}, "the base load of machine type slow must be a percent from 0 up to (not including) 100, not 100.0"),
    ({"slow": -1}, "the base load of machine type slow must be a percent"),
    ({"slow": "high"}, "not 'high'"),
    ([12.0], "source.machine_base_load must map machine types to percent"),
])
def test_profile_set_with_a_bad_machine_base_load_is_refused_naming_it(http, base_load, fault):
    """The Nimbus plugin plans on 100 - base load of a stored set: a bad one is refused when stored."""
    profile_set = {**small_profiles("based"), "source": {"machine_base_load": base_load}}
    body = _error(http, "PUT", "/v1/profiles/based", 422, json=profile_set)
    assert fault in body["detail"]
    assert "profile set based" in body["detail"]


def test_profile_set_with_a_machine_base_load_is_stored_as_given(http):
    profile_set = {**small_profiles("based-ok"), "source": {"machine_base_load": {"slow": 26.3, "fast": 6.4}}}
    assert http.put("/v1/profiles/based-ok", json=profile_set).status_code == 200
    assert http.get("/v1/profiles/based-ok").json()["source"]["machine_base_load"] == {"slow": 26.3, "fast": 6.4}


def test_plan_is_created_stored_read_back_and_logged(http, planner_service):
    plan = _plan(http, small_plan_request())
    assert plan["id"] and plan["strategy"] == DEFAULT_STRATEGY and plan["topology"] == "linear"
    assert plan["input_rate"] > 0
    assert set(plan["instances"]) == {"spout", "low", "high"}
    for component, count in plan["instances"].items():
        indices = sorted(a["index"] for a in plan["assignments"] if a["component"] == component)
        assert indices == list(range(count))
    assert http.get(f"/v1/plans/{plan['id']}").json() == plan
    assert (f"plan topology=linear strategy={DEFAULT_STRATEGY} machines=4 instances={len(plan['assignments'])} elapsed_ms="
            in planner_service.log())
    assert f"id={plan['id']}" in planner_service.log()


def test_plan_with_a_stored_profile_set_equals_the_inline_one(http):
    assert http.put("/v1/profiles/named-set", json=small_profiles("named-set")).status_code == 200
    named = _plan(http, small_plan_request(profiles={"name": "named-set"}))
    inline = _plan(http, small_plan_request())
    assert named["id"] != inline["id"]
    assert named["assignments"] == inline["assignments"] and named["input_rate"] == inline["input_rate"]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_places_fixed_instance_counts_over_http(http, strategy):
    """As the Nimbus plugin asks: every component's parallelism fixed, the strategy only places."""
    body = small_plan_request(strategy=strategy)
    for component, count in zip(body["topology"]["components"], (1, 2, 3)):
        component["parallelism"] = count
    plan = _plan(http, body)
    assert plan["strategy"] == strategy and plan["input_rate"] > 0
    assert plan["instances"] == {"spout": 1, "low": 2, "high": 3}


def test_plan_naming_a_missing_profile_set_is_404(http):
    body = _error(http, "POST", "/v1/plans", 404, json=small_plan_request(profiles={"name": "missing-set"}))
    assert "profile set 'missing-set' does not exist" in body["detail"]


def test_unknown_plan_is_404(http):
    body = _error(http, "GET", "/v1/plans/0123456789abcdef", 404)
    assert "0123456789abcdef" in body["detail"]


def test_unknown_path_is_a_json_404(http):
    assert _error(http, "GET", "/v2/anything", 404)["error"] == "not_found"


def test_a_method_the_path_does_not_serve_is_a_405_sentence_naming_both(http):
    body = _error(http, "PATCH", "/v1/plans/0123456789abcdef", 405)
    assert body == {"detail": "/v1/plans/0123456789abcdef does not serve PATCH: see /docs for the API",
                    "error": "method_not_allowed"}


def test_evaluation_of_a_plans_placement_gives_its_figures_and_stores_nothing(http):
    plan = _plan(http, small_plan_request())
    body = small_plan_request()
    body["assignments"] = [{"component": a["component"], "machine": a["machine"]}
                           for a in sorted(plan["assignments"], key=lambda a: (a["component"], a["index"]))]
    response = http.post("/v1/evaluations", json=body)
    assert response.status_code == 200, response.text
    evaluation = response.json()
    assert "id" not in evaluation
    assert evaluation["input_rate"] == pytest.approx(plan["input_rate"])
    assert evaluation["instances"] == plan["instances"]


def test_schema_error_is_422_with_the_field_at_fault(http):
    body = small_plan_request()
    body["topology"]["components"][0]["kind"] = "sprout"
    error = _error(http, "POST", "/v1/plans", 422, json=body)
    assert error["error"] == "invalid_request"
    assert error["detail"].startswith("topology.components[0].kind:")
    assert error["errors"][0]["loc"] == ["body", "topology", "components", 0, "kind"]


def test_negative_and_non_finite_numbers_are_422(http):
    body = small_plan_request()
    body["profiles"]["entries"][0]["e"] = -1
    assert "entries[0].e" in _error(http, "POST", "/v1/plans", 422, json=body)["detail"]
    raw = httpx.Request("POST", "/", json=small_plan_request()).content.replace(b'"e":0.002', b'"e":NaN', 1)
    error = _error(http, "POST", "/v1/plans", 422, content=raw, headers={"content-type": "application/json"})
    assert "not valid JSON" in error["detail"]


def _semantic_faults() -> dict[str, tuple[dict, tuple[str, ...]]]:
    cycle = small_plan_request()
    cycle["topology"]["streams"].append({"from": "high", "to": "low"})
    unknown_target = small_plan_request()
    unknown_target["topology"]["streams"].append({"from": "high", "to": "nowhere"})
    no_spout = small_plan_request()
    no_spout["topology"]["components"][0]["kind"] = "bolt"
    missing_pair = small_plan_request()
    missing_pair["profiles"]["entries"] = [e for e in missing_pair["profiles"]["entries"]
                                           if not (e["profile"] == "highCompute" and e["machine_type"] == "fast")]
    unknown_type = small_plan_request()
    unknown_type["cluster"]["machines"].append({"id": "m-odd", "type": "quantum"})
    too_small = small_plan_request(machines=1)
    for entry in too_small["profiles"]["entries"]:
        entry["met"] = 60.0
    faults = {
        "cycle": (cycle, ("cycle", "low", "high")),
        "stream to an unknown component": (unknown_target, ("nowhere",)),
        "no spout": (no_spout, ("spout",)),
        "missing profile pair": (missing_pair, ("highCompute", "fast")),
        "machine of an unknown type": (unknown_type, ("quantum",)),
        "cluster too small": (too_small, ()),
    }
    if "optimal" in STRATEGIES:
        faults["too large for optimal"] = (small_plan_request(strategy="optimal", machines=40), ("optimal",))
    return faults


@pytest.mark.parametrize("fault", list(_semantic_faults()))
def test_semantic_fault_is_422_with_one_sentence_naming_it(http, fault):
    body, words = _semantic_faults()[fault]
    error = _error(http, "POST", "/v1/plans", 422, json=body)
    code = "profile_missing" if fault == "missing profile pair" else "planning_error"
    assert error["error"] == code and "\n" not in error["detail"]
    for word in words:
        assert word in error["detail"], error["detail"]


def test_unknown_strategy_is_422_naming_it(http):
    error = _error(http, "POST", "/v1/plans", 422, json=small_plan_request(strategy="clairvoyant"))
    assert "clairvoyant" in error["detail"]


def test_malformed_json_and_wrong_content_type_are_422(http):
    error = _error(http, "POST", "/v1/plans", 422, content=b'{"topology": ', headers={"content-type": "application/json"})
    assert error["detail"].startswith("the request body is not valid JSON")
    error = _error(http, "POST", "/v1/plans", 422, content=b"topology=linear", headers={"content-type": "text/plain"})
    assert "JSON object" in error["detail"]
    error = _error(http, "POST", "/v1/plans", 422)
    assert error["detail"] == "the request needs a JSON body"


def test_stored_plan_id_returns_its_placement_when_it_fits(http):
    plan = _plan(http, small_plan_request())
    again = small_plan_request()
    again["plan_id"] = plan["id"]
    for component in again["topology"]["components"]:
        component["parallelism"] = plan["instances"][component["id"]]
    reused = _plan(http, again)
    assert reused["id"] == plan["id"] and reused["stats"]["reused_plan"] is True
    assert sorted((a["component"], a["index"], a["machine"]) for a in reused["assignments"]) == \
        sorted((a["component"], a["index"], a["machine"]) for a in plan["assignments"])
    assert reused["input_rate"] == pytest.approx(plan["input_rate"])


def test_stored_plan_id_keeps_its_placement_when_storm_adds_system_components(http):
    """As the Nimbus plugin asks: the planned components with their executor counts, plus __acker."""
    plan = _plan(http, small_plan_request())
    nimbus = small_plan_request()
    nimbus["plan_id"] = plan["id"]
    for component in nimbus["topology"]["components"]:
        component["parallelism"] = plan["instances"][component["id"]]
    nimbus["topology"]["components"].append({"id": "__acker", "kind": "bolt", "parallelism": 2})
    nimbus["topology"]["streams"].append({"from": "high", "to": "__acker"})
    reused = _plan(http, nimbus)
    assert reused["id"] == plan["id"] and reused["stats"]["placed_afresh"] == ["__acker"]
    assert reused["instances"] == {**plan["instances"], "__acker": 2}
    placed = {(a["component"], a["index"]): a["machine"] for a in reused["assignments"]}
    assert all(placed[(a["component"], a["index"])] == a["machine"] for a in plan["assignments"])
    assert {placed[("__acker", 0)], placed[("__acker", 1)]} <= {m["id"] for m in nimbus["cluster"]["machines"]}


def test_stored_plan_id_that_does_not_fit_plans_afresh(http):
    plan = _plan(http, small_plan_request())
    other_counts = small_plan_request()
    other_counts["plan_id"] = plan["id"]
    other_counts["topology"]["components"][2]["parallelism"] = plan["instances"]["high"] + 1
    fresh = _plan(http, other_counts)
    assert fresh["id"] != plan["id"] and fresh["instances"]["high"] == plan["instances"]["high"] + 1
    unknown = small_plan_request()
    unknown["plan_id"] = "feedfacefeedface"
    assert _plan(http, unknown)["id"] != "feedfacefeedface"


def test_stored_plan_id_whose_machine_is_now_a_smaller_type_plans_afresh(http):
    """A machine id the plan uses now names a slow machine: keeping the placement would size it for the fast one."""
    plan = _plan(http, small_plan_request())
    fast_used = sorted({a["machine"] for a in plan["assignments"]} & {m["id"] for m in plan["machines"] if m["type"] == "fast"})
    assert fast_used, "the plan uses a fast machine"
    shrunk = small_plan_request()
    shrunk["plan_id"] = plan["id"]
    for component in shrunk["topology"]["components"]:
        component["parallelism"] = plan["instances"][component["id"]]
    for machine in shrunk["cluster"]["machines"]:
        if machine["id"] == fast_used[0]:
            machine["type"] = "slow"

    fresh = _plan(http, shrunk)

    assert fresh["id"] != plan["id"] and "reused_plan" not in fresh["stats"]
    assert {m["id"]: m["type"] for m in fresh["machines"]}[fast_used[0]] == "slow"
    stale = {k: v for k, v in shrunk.items() if k != "plan_id"}
    stale["assignments"] = [{"component": a["component"], "machine": a["machine"]}
                            for a in sorted(plan["assignments"], key=lambda a: (a["component"], a["index"]))]
    kept = http.post("/v1/evaluations", json=stale).json()
    assert fresh["input_rate"] >= kept["input_rate"], "the fresh plan sustains at least what the stale placement would"


@pytest.mark.slow  # sixteen plans at once
def test_sixteen_concurrent_callers_all_get_their_own_stored_plan(planner_service):
    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=planner_service.url, timeout=120) as client:
            bodies = [small_plan_request(machines=2 + i % 8) for i in range(32)]
            sem = asyncio.Semaphore(16)

            async def one(body):
                async with sem:
                    return await client.post("/v1/plans", json=body)

            return await asyncio.gather(*(one(b) for b in bodies))

    responses = asyncio.run(run())
    assert [r.status_code for r in responses] == [201] * 32
    plans = [r.json() for r in responses]
    assert len({p["id"] for p in plans}) == 32
    with planner_service.http() as http:
        for plan in plans:
            assert http.get(f"/v1/plans/{plan['id']}").json() == plan
