"""The service's guards on a real server: the bearer token, the body size limit, the time limit, the size limit
and the small requests' own planning lane."""
from __future__ import annotations

import json
import os
import threading
import time

import httpx
import psutil
import pytest
from fastapi.testclient import TestClient

from planner.client import PlannerClientError
from planner.errors import PlanningTimeout
from planner.model import PlanRequest
from benchmarks.service_limits import tree_plan_request
from planner.service import planning
from planner.service import app as app_module
from planner.service.app import create_app
from planner.service.planning import RequestSize, check_size
from planner.service.errors import ServiceError
from planner.service.settings import ServiceSettings, SizeLimit
from planner.strategies import DEFAULT_STRATEGY, STRATEGIES
from planner.strategies.optimal import TIME_LIMIT_ADVICE
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


def test_caller_may_ask_for_a_shorter_limit_never_a_longer_one():
    options = PlanRequest.model_validate(small_plan_request()).options
    assert planning.limited_options(options, 10.0).time_limit_s == 10.0
    assert planning.limited_options(options.model_copy(update={"time_limit_s": 2.0}), 10.0).time_limit_s == 2.0
    assert planning.limited_options(options.model_copy(update={"time_limit_s": 60.0}), 10.0).time_limit_s == 10.0


REAL_PLAN_JSON = planning.plan_json


def stuck_plan_json(*args, **kwargs):
    """Fault injection (runs in a planning worker): a core that does not watch the clock."""
    time.sleep(60)
    raise AssertionError("the answer of a killed plan must never arrive")


def timing_out_plan_json(*args, **kwargs):
    raise PlanningTimeout("the optimal strategy ran past its time limit of 0.2 s after 12 iterations")


def slow_plan_json(*args, **kwargs):
    time.sleep(1.0)
    raise PlanningTimeout("slow plan stopped")


def dying_plan_json(*args, **kwargs):
    os._exit(3)


def _worker_pids(client: TestClient) -> set[int]:
    return set(client.app.state.planning_pool.children())


def test_core_that_ignores_the_limit_is_killed_and_its_worker_replaced(tmp_path, monkeypatch):
    """Fault injection: a core that never looks at the clock; past the limit its process is killed, not left running."""
    monkeypatch.setattr(planning, "plan_json", stuck_plan_json)
    app = create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", time_limit_s=0.2))
    with TestClient(app) as client:
        before = _worker_pids(client)
        response = client.post("/v1/plans", json=small_plan_request())
        after = _worker_pids(client)
        assert response.status_code == 422
        assert response.json() == {
            "detail": "planning stopped at the service's time limit of 0.2 s: choose a faster strategy or a smaller input",
            "error": "time_limit",
        }
        killed = before - after
        assert len(killed) == 1 and len(after) == len(before)
        assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in killed)
        monkeypatch.setattr(planning, "plan_json", REAL_PLAN_JSON)
        # paper plans this request in milliseconds, so the 0.2 s limit checks the fresh worker, not the machine's load
        assert client.post("/v1/plans", json=small_plan_request(strategy="paper")).status_code == 201


def test_a_worker_holding_too_much_memory_after_its_task_is_replaced(tmp_path, monkeypatch):
    from planner.service import workers

    monkeypatch.setattr(workers, "RECYCLE_RSS_MB", 1.0)
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite"))) as client:
        before = _worker_pids(client)
        assert client.post("/v1/plans", json=small_plan_request()).status_code == 201
        after = _worker_pids(client)
        assert len(before - after) == 1 and len(after) == len(before)
        assert client.post("/v1/plans", json=small_plan_request()).status_code == 201


def test_planning_timeout_from_the_core_maps_to_422(tmp_path, monkeypatch):
    monkeypatch.setattr(planning, "plan_json", timing_out_plan_json)
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite"))) as client:
        response = client.post("/v1/plans", json=small_plan_request())
    assert response.status_code == 422
    assert response.json()["error"] == "time_limit" and "12 iterations" in response.json()["detail"]


def optimal_timing_out_plan_json(*args, **kwargs):
    raise PlanningTimeout(f"the optimal strategy ran past its time limit of 0.2 s after 3 MILP solves; {TIME_LIMIT_ADVICE}")


@pytest.mark.parametrize("asked_s, advice", [
    (None, "; use strategy fast, or ask the service's operator to raise its limit (hetsched serve --time-limit-s)"),
    (60.0, "; use strategy fast, or ask the service's operator to raise its limit (hetsched serve --time-limit-s)"),
    (10.0, "; raise options.time_limit_s (this service allows up to 30 s) or use strategy fast"),
])
def test_a_timeout_over_http_advises_what_the_caller_can_do(tmp_path, monkeypatch, asked_s, advice):
    """The service lowers a larger options.time_limit_s to its own, so raising it helps only below that limit."""
    monkeypatch.setattr(planning, "plan_json", optimal_timing_out_plan_json)
    body = small_plan_request()
    if asked_s is not None:
        body["options"] = {**body.get("options", {}), "time_limit_s": asked_s}
    # limits far above what the stand-in core takes, so that a busy host cannot make the pool kill it instead
    with TestClient(create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", time_limit_s=30.0))) as client:
        response = client.post("/v1/plans", json=body)
    assert response.status_code == 422 and response.json()["error"] == "time_limit"
    assert response.json()["detail"] == f"the optimal strategy ran past its time limit of 0.2 s after 3 MILP solves{advice}"


def test_a_worker_that_dies_is_answered_500_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(planning, "plan_json", dying_plan_json)
    app = create_app(ServiceSettings(db_path=tmp_path / "db.sqlite"))
    with TestClient(app, raise_server_exceptions=False) as client:
        before = _worker_pids(client)
        response = client.post("/v1/plans", json=small_plan_request())
        assert response.status_code == 500
        assert response.json() == {"detail": "the planner failed unexpectedly (WorkerCrash); the service log has the details",
                                   "error": "internal"}
        assert len(before - _worker_pids(client)) == 1
        monkeypatch.setattr(planning, "plan_json", REAL_PLAN_JSON)
        # paper plans this request in milliseconds, so the 0.2 s limit checks the fresh worker, not the machine's load
        assert client.post("/v1/plans", json=small_plan_request(strategy="paper")).status_code == 201


def test_a_caller_that_waits_too_long_for_a_planning_slot_gets_503(tmp_path, monkeypatch):
    """Fault injection: the one planning process is held by a slow plan; the next caller is told the planner is busy."""
    import anyio

    monkeypatch.setattr(planning, "plan_json", slow_plan_json)
    monkeypatch.setattr(app_module, "PLANNING_PROCESSES", 1)
    nothing_is_small = SizeLimit(placement_cells=0, lp_cells=0)
    app = create_app(ServiceSettings(db_path=tmp_path / "db.sqlite", queue_wait_s=0.2, small_size=nothing_is_small))

    async def two_callers() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://planner") as client:
            results: list[httpx.Response] = []

            async def call() -> None:
                results.append(await client.post("/v1/plans", json=small_plan_request()))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(call)
            return results

    with TestClient(app):  # runs the lifespan: the planning processes
        responses = anyio.run(two_callers)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [422, 503]
    busy = next(r for r in responses if r.status_code == 503)
    assert busy.json()["error"] == "busy" and busy.headers["retry-after"] == "5"


def test_request_size_counts_components_machines_and_used_types():
    request = PlanRequest.model_validate(small_plan_request(machines=5))
    size = RequestSize.of(request.topology, request.cluster)
    assert (size.components, size.machines, size.machine_types) == (3, 5, 2)
    assert (size.placement_cells, size.lp_cells) == (15, 18)
    one_type = PlanRequest.model_validate(small_plan_request(machines=1))
    assert RequestSize.of(one_type.topology, one_type.cluster).machine_types == 1
    assert size.within(SizeLimit(15, 18)) and not size.within(SizeLimit(14, 18)) and not size.within(SizeLimit(15, 17))


@pytest.mark.parametrize("limit, sentence", [
    (SizeLimit(14, 100), "3 components on 5 machines of 2 types make 15 components x machines, over this planner's limit of 14"),
    (SizeLimit(100, 17), "3 components on 5 machines of 2 types make 18 components^2 x machine types, over this planner's limit of 17"),
])
def test_check_size_names_the_limit_and_the_size(limit, sentence):
    request = PlanRequest.model_validate(small_plan_request(machines=5))
    with pytest.raises(ServiceError) as caught:
        check_size(RequestSize.of(request.topology, request.cluster), limit)
    assert (caught.value.status_code, caught.value.error) == (413, "request_too_large")
    assert caught.value.detail == f"the request is too large to plan here: {sentence}"


def test_requests_over_the_size_limit_are_413_before_planning(start_planner_service, monkeypatch):
    monkeypatch.setenv("HETSCHED_MAX_COMPONENTS2_X_TYPES", "100")
    service = start_planner_service(extra_args=["--max-components-x-machines", "100"])
    with service.http() as http:
        assert http.post("/v1/plans", json=small_plan_request(machines=33)).status_code == 201
        for path, body in [("/v1/plans", small_plan_request(machines=34)),
                           ("/v1/evaluations", {**small_plan_request(machines=34), "assignments": [
                               {"component": c, "machine": "m0"} for c in ("spout", "low", "high")]})]:
            response = http.post(path, json=body)
            assert response.status_code == 413, (path, response.text)
            assert response.json() == {"error": "request_too_large", "detail": (
                "the request is too large to plan here: 3 components on 34 machines of 2 types make 102 components x "
                "machines, over this planner's limit of 100")}
    assert "size limit 100 components x machines and 100 components^2 x machine types" in service.log()


def _busy_children(pid: int, window_s: float = 0.5) -> int:
    """How many child processes of ``pid`` computed over the next ``window_s`` (more than 2% of a CPU: an idle
    planning process uses none, a busy one on a machine shared with much other work still far more)."""
    def cpu() -> dict[int, float]:
        times = {}
        for child in psutil.Process(pid).children(recursive=True):
            try:
                t = child.cpu_times()
                times[child.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return times

    before = cpu()
    time.sleep(window_s)
    after = cpu()
    return sum(1 for p, t in after.items() if t - before.get(p, t) > window_s / 50)


@pytest.mark.slow
def test_an_overrunning_plan_leaves_no_busy_process_after_its_422(start_planner_service):
    """2,000 components on 1,000 machines with a 1 s limit: answered 422 time_limit, and then nothing computes on."""
    service = start_planner_service(extra_args=["--time-limit-s", "1"])
    with service.http() as http:
        response = http.post("/v1/plans", json=tree_plan_request(2000, 1000))
        assert response.status_code == 422 and response.json()["error"] == "time_limit", response.text
        time.sleep(0.5)
        assert _busy_children(service.process.pid, window_s=1.0) == 0
        assert http.post("/v1/plans", json=small_plan_request()).status_code == 201


@pytest.mark.slow
def test_a_small_request_is_answered_while_two_large_ones_plan(start_planner_service):
    """Both planning processes for any size are busy with large plans; a plugin-sized request is answered first."""
    service = start_planner_service(extra_args=["--time-limit-s", "6"])
    big = tree_plan_request(2000, 1000)
    finished: list[tuple[str, int]] = []

    def send(name: str, body: dict) -> None:
        with service.http() as http:
            finished.append((name, http.post("/v1/plans", json=body).status_code))

    large = [threading.Thread(target=send, args=(f"large {i}", big)) for i in range(2)]
    for thread in large:
        thread.start()
    deadline = time.monotonic() + 60
    while _busy_children(service.process.pid) < min(2, app_module.PLANNING_PROCESSES) and time.monotonic() < deadline:
        pass
    assert not finished, f"the large plans ended before both were seen planning: {finished}"
    send("small", small_plan_request())
    for thread in large:
        thread.join()
    assert finished[0] == ("small", 201), finished
    assert sorted(finished[1:]) == [("large 0", 422), ("large 1", 422)]


def test_a_waiting_small_request_takes_whichever_lane_frees_first_and_large_ones_only_their_own():
    """The slot bookkeeping alone (no processes): first come, first served among the requests a freed worker may serve."""
    import anyio

    from planner.service.workers import PlanningPool

    async def scenario() -> list[tuple[str, str]]:
        pool = PlanningPool(large_workers=1, small_workers=1)
        pool.large.idle, pool.small.idle = ["large worker"], ["small worker"]  # type: ignore[list-item]
        served: list[tuple[str, str]] = []

        async def take(name: str, small: bool) -> None:
            lane, worker = await pool._take(small, queue_wait_s=5)
            served.append((name, str(worker)))

        assert await pool._take(False, 1) == (pool.large, "large worker")
        assert await pool._take(True, 1) == (pool.small, "small worker")
        async with anyio.create_task_group() as group:
            group.start_soon(take, "large request", False)
            await anyio.sleep(0.01)
            group.start_soon(take, "small request", True)
            await anyio.sleep(0.01)
            pool._give_back(pool.small, "small worker")  # type: ignore[arg-type]
            await anyio.sleep(0.01)
            pool._give_back(pool.large, "large worker")  # type: ignore[arg-type]
        return served

    assert anyio.run(scenario) == [("small request", "small worker"), ("large request", "large worker")]


def test_a_pipe_reset_by_a_dying_worker_is_a_crash_not_an_unhandled_error():
    """Seen at 1,000 machines: the worker died while answering, and recv raised ConnectionResetError (a 500 with a
    traceback in the log); it is now the worker crash the pool already answers and replaces."""
    from types import SimpleNamespace

    from planner.service.workers import Worker

    class ResetPipe:
        def send(self, _task):
            pass

        def poll(self, _timeout):
            return True

        def recv(self):
            raise ConnectionResetError(104, "Connection reset by peer")

    worker = Worker(SimpleNamespace(join=lambda _timeout: None, exitcode=-9), ResetPipe())
    kind, sentence = worker.call(len, ((),), 1.0)
    assert kind == "crash" and "exit code -9" in sentence
