"""The service's guards on a real server: the bearer token, the body size limit and the time limit."""
from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from planner.client import PlannerClientError
from planner.errors import PlanningTimeout
from planner.model import PlanRequest
from planner.service import planning
from planner.service.app import create_app
from planner.service.routers import plans as plans_router
from planner.service.settings import ServiceSettings
from planner.strategies import DEFAULT_STRATEGY, STRATEGIES
from tests.fixtures.service import GUARDED_TOKEN, small_plan_request, small_profiles

TOKEN = GUARDED_TOKEN


@pytest.fixture
def guarded_service(guarded_planner_service):
    """The session server with a token and a 1 MB body limit."""
    return guarded_planner_service


@pytest.mark.parametrize("headers, sentence", [
    ({}, "needs a token"),
    ({"Authorization": "Bearer wrong"}, "token is wrong"),
    ({"Authorization": TOKEN}, "token is wrong"),
])
def test_v1_calls_without_the_right_token_are_401(guarded_service, headers, sentence):
    with httpx.Client(base_url=guarded_service.url) as http:
        for method, path, body in [("GET", "/v1/profiles", None), ("POST", "/v1/plans", small_plan_request()),
                                   ("GET", "/v1/plans/x", None), ("PUT", "/v1/profiles/a", small_profiles("a")),
                                   ("POST", "/v1/evaluations", {})]:
            response = http.request(method, path, json=body, headers=headers)
            assert response.status_code == 401, (method, path, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
            assert sentence in response.json()["detail"]


def test_the_right_token_works_and_health_and_docs_stay_open(guarded_service):
    with httpx.Client(base_url=guarded_service.url) as anonymous:
        assert anonymous.get("/healthz").status_code == 200
        schema = anonymous.get("/openapi.json").json()
        assert schema["paths"]["/v1/plans"]["post"]["security"] == [{"bearer": []}]
    with guarded_service.http() as http:
        assert http.put("/v1/profiles/a", json=small_profiles("a")).status_code == 200
        assert http.post("/v1/plans", json=small_plan_request(profiles={"name": "a"})).status_code == 201


def test_client_reports_a_refused_token_in_one_line(guarded_service):
    with guarded_service.client(token="nope") as client, pytest.raises(PlannerClientError) as caught:
        client.profile_set_names()
    assert caught.value.status == 401
    assert "refused the call (401)" in str(caught.value) and "\n" not in str(caught.value)


def _padded_request(size_bytes: int) -> bytes:
    """A valid PlanRequest padded with whitespace to ``size_bytes``."""
    body = json.dumps(small_plan_request()).encode()
    return body + b" " * (size_bytes - len(body))


def test_body_over_the_limit_with_content_length_is_413(guarded_service):
    with guarded_service.http() as http:
        response = http.post("/v1/plans", content=_padded_request(1_500_000), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large" and "1 MB" in response.json()["detail"]


def test_chunked_body_over_the_limit_is_413(guarded_service):
    body = _padded_request(3_000_000)

    def chunks():
        for start in range(0, len(body), 64 * 1024):
            yield body[start:start + 64 * 1024]

    with guarded_service.http() as http:
        response = http.post("/v1/plans", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "over this planner's limit of 1 MB" in response.json()["detail"]


def test_body_just_under_the_limit_is_planned_chunked_or_not(guarded_service):
    body = _padded_request(999_000)
    with guarded_service.http() as http:
        assert http.post("/v1/plans", content=body, headers={"content-type": "application/json"}).status_code == 201
        chunked = http.post("/v1/plans", content=iter([body[:500_000], body[500_000:]]),
                            headers={"content-type": "application/json"})
        assert chunked.status_code == 201


def test_a_body_twenty_times_the_limit_is_still_answered_413(guarded_service):
    with guarded_service.http() as http:
        response = http.post("/v1/plans", content=b"x" * 20_000_000, headers={"content-type": "application/json"})
        assert response.status_code == 413
        assert http.get("/healthz").status_code == 200


def test_an_endless_body_is_cut_off_and_the_service_lives_on(guarded_service):
    """Past the drain allowance the service answers 413 and closes; the sender may see the close first."""
    chunk = b"x" * 1_000_000

    def endless():
        for _ in range(200):
            yield chunk

    with guarded_service.http() as http:
        try:
            response = http.post("/v1/plans", content=endless(), headers={"content-type": "application/json"})
            assert response.status_code == 413
        except (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError):
            pass
        assert http.get("/healthz").status_code == 200


def _slow_request(strategy: str | None) -> dict:
    """Far more than 10 ms of planning: Linear on 1,000 machines, or the paper's scenario 1 for the exact search
    (which refuses inputs as large as 1,000 machines outright)."""
    from planner.client import request_body
    from planner.fixtures import load_scenario, scaled_cluster
    from planner.model import PlanRequest, ProfileRef

    scenario = load_scenario("linear", 1)
    cluster = scenario.cluster if strategy == "optimal" else scaled_cluster((111, 389, 500))
    return request_body(PlanRequest(topology=scenario.topology, cluster=cluster, strategy=strategy,
                                    profiles=ProfileRef(entries=scenario.profiles.entries)))


def test_a_search_past_the_service_time_limit_stops_and_says_so(start_planner_service):
    service = start_planner_service(extra_args=["--time-limit-s", "0.01"])
    with service.http() as http:
        for strategy in [None, *sorted(STRATEGIES)]:
            response = http.post("/v1/plans", json=_slow_request(strategy))
            assert response.status_code == 422, (strategy, response.text)
            error = response.json()
            assert error["error"] == "time_limit", error
            assert "time limit of 0.01 s" in error["detail"]
        assert http.get("/healthz").status_code == 200
    assert f"plan topology=linear strategy={DEFAULT_STRATEGY} machines=1000 failed" in service.log()


def test_core_that_ignores_the_limit_is_cut_off_by_the_guard(tmp_path, monkeypatch):
    """Fault injection: a strategy that does not watch the clock; the service still answers at its limit."""

    def stuck_plan(*args, **kwargs):
        time.sleep(3)
        raise AssertionError("the answer of an abandoned plan must be dropped")

    monkeypatch.setattr(plans_router, "make_plan", stuck_plan)
    monkeypatch.setattr(planning, "GUARD_GRACE_S", 0.1)
    app = create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", time_limit_s=0.2))
    with TestClient(app) as client:
        response = client.post("/v1/plans", json=small_plan_request())
    assert response.status_code == 422
    assert response.json() == {
        "detail": "planning stopped at the service's time limit of 0.2 s: choose a faster strategy or a smaller input",
        "error": "time_limit",
    }


def test_caller_may_ask_for_a_shorter_limit_never_a_longer_one():
    options = PlanRequest.model_validate(small_plan_request()).options
    assert planning.limited_options(options, 10.0).time_limit_s == 10.0
    assert planning.limited_options(options.model_copy(update={"time_limit_s": 2.0}), 10.0).time_limit_s == 2.0
    assert planning.limited_options(options.model_copy(update={"time_limit_s": 60.0}), 10.0).time_limit_s == 10.0


def test_planning_timeout_from_the_core_maps_to_422(tmp_path, monkeypatch):
    def timing_out(*args, **kwargs):
        raise PlanningTimeout("the optimal strategy ran past its time limit of 0.2 s after 12 iterations")

    monkeypatch.setattr(plans_router, "make_plan", timing_out)
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite"))) as client:
        response = client.post("/v1/plans", json=small_plan_request())
    assert response.status_code == 422
    assert response.json()["error"] == "time_limit" and "12 iterations" in response.json()["detail"]


def test_a_caller_that_waits_too_long_for_a_planning_slot_gets_503(tmp_path, monkeypatch):
    """Fault injection: every planning slot is held by a slow plan; the next caller is told the planner is busy."""
    import anyio

    from planner.service import app as app_module

    def slow_plan(*args, **kwargs):
        time.sleep(1.0)
        raise PlanningTimeout("slow plan stopped")

    monkeypatch.setattr(plans_router, "make_plan", slow_plan)
    monkeypatch.setattr(app_module, "PLANNING_THREADS", 1)
    app = create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", queue_wait_s=0.2))

    async def two_callers() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://planner") as client:
            results: list[httpx.Response] = []

            async def call() -> None:
                results.append(await client.post("/v1/plans", json=small_plan_request()))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(call)
            return results

    responses = anyio.run(two_callers)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [422, 503]
    busy = next(r for r in responses if r.status_code == 503)
    assert busy.json()["error"] == "busy" and busy.headers["retry-after"] == "5"
