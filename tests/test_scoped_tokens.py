"""Scoped credentials: each token may do what its scopes say, a topology's records token only post its records,
and the records store stays within its size and retention, deleting and counting its oldest batches."""
from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from hetsched.cli import app as cli_app
from planner.records_store import MetricsBatch, RecordsLimits, RecordsStore, StoredFile, past_limits
from planner.service.app import create_app
from planner.service.scopes import (
    ALL_SCOPES,
    Grant,
    Scope,
    TokenFileError,
    load_records_secret,
    parse_token_lines,
    records_grant,
    records_token,
    refusal,
    required_scope,
)
from planner.service.settings import ServiceSettings
from tests.fixtures.service import small_plan_request, small_profiles
from tests.test_service_metrics import batch, record

TOKENS = {"t-read": {Scope.READ}, "t-plan": {Scope.PLAN, Scope.READ}, "t-bind": {Scope.BIND},
          "t-profiles": {Scope.PROFILES}, "t-records": {Scope.RECORDS}}
ADMIN = "t-admin"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def service(tmp_path):
    grants = {token: frozenset(scopes) for token, scopes in TOKENS.items()} | {ADMIN: ALL_SCOPES}
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", tokens=grants, records_max_bytes=None)
    with TestClient(create_app(settings)) as client:
        yield client


# --- the token file ---------------------------------------------------------------------------------

def test_a_lone_token_has_every_scope_and_lines_give_each_token_its_own():
    assert parse_token_lines("  only-one \n", "f") == {"only-one": ALL_SCOPES}
    text = "# the plugin\nplan,read nimbus-t\n\nprofiles ops-t\nall admin-t\n"
    assert parse_token_lines(text, "f") == {"nimbus-t": frozenset({Scope.PLAN, Scope.READ}),
                                            "ops-t": frozenset({Scope.PROFILES}), "admin-t": ALL_SCOPES}


@pytest.mark.parametrize("text, fault", [
    ("", "the token file f is empty"),
    ("# nothing\n", "the token file f is empty"),
    ("write t", "the token file f line 1 names scope 'write'; scopes are read, plan, bind, profiles, records, all"),
    ("read t\nplan", "the token file f line 2 is not 'scope[,scope] TOKEN'"),
    (f"records {records_token(b'k' * 32, 'linear')}", "the token file f line 1 holds a topology's records token"),
])
def test_a_bad_token_file_is_refused_in_one_sentence(text, fault):
    with pytest.raises(TokenFileError, match=re.escape(fault)):
        parse_token_lines(text, "f")


# --- which call needs which scope ---------------------------------------------------------------------

def _calls(client: TestClient) -> list[tuple[str, str]]:
    """Every (method, path) under /v1 the service serves, path parameters filled with a name."""
    calls = []
    for route in client.app.routes:
        if isinstance(route, APIRoute) and route.path.startswith("/v1"):
            path = re.sub(r"\{[^}]+\}", "1", route.path)
            calls += [(method, path) for method in sorted(route.methods)]
    return calls


def test_every_route_of_the_service_has_its_scope(service):
    unlisted = [f"{m} {p}" for m, p in _calls(service) if required_scope(m, p) is None]
    assert not unlisted, f"only an all-scope token may call these: list them in planner.service.scopes.required_scope: {unlisted}"


@pytest.mark.parametrize("method, path, scope", [
    ("GET", "/v1/plans/x", Scope.READ), ("GET", "/v1/metrics/summary", Scope.READ), ("GET", "/v1/ledger", Scope.READ),
    ("POST", "/v1/plans", Scope.PLAN), ("DELETE", "/v1/plans/x", Scope.PLAN), ("POST", "/v1/tenants/alive", Scope.PLAN),
    ("PUT", "/v1/assignments/linear", Scope.BIND), ("DELETE", "/v1/assignments/linear", Scope.BIND),
    ("PUT", "/v1/profiles/micro", Scope.PROFILES), ("DELETE", "/v1/profiles/micro/versions/1", Scope.PROFILES),
    ("POST", "/v1/metrics/batches", Scope.RECORDS), ("POST", "/v1/metrics/tokens", Scope.RECORDS),
    ("POST", "/v1/something/new", None),
])
def test_required_scope(method, path, scope):
    assert required_scope(method, path) == scope


def test_a_call_no_scope_lists_needs_every_scope():
    assert refusal(Grant(ALL_SCOPES), None) is None
    assert refusal(Grant(frozenset({Scope.READ, Scope.PLAN})), None) == (
        "this call needs a token with every scope ('all'), and this token has only plan, read")


# --- the service ------------------------------------------------------------------------------------

def test_each_scope_is_refused_with_403_and_one_sentence_where_it_lacks_the_right(service):
    profiles = small_profiles()
    cases = [  # (token that lacks the scope, call, the scope's sentence)
        ("t-read", ("PUT", f"/v1/profiles/{profiles['name']}", profiles), "store or delete profile sets", "profiles"),
        ("t-profiles", ("GET", "/v1/profiles", None), "read from the planner", "read"),
        ("t-bind", ("POST", "/v1/plans", small_plan_request(profiles)), "plan or register topologies", "plan"),
        ("t-plan", ("PUT", "/v1/assignments/linear", {"plan_id": "x"}), "bind plans to running topologies", "bind"),
        ("t-plan", ("POST", "/v1/metrics/batches", batch([record()])), "post workers' records", "records"),
    ]
    for token, (method, path, body), action, scope in cases:
        answer = service.request(method, path, json=body, headers=auth(token))
        assert answer.status_code == 403, (token, path, answer.text)
        has = ", ".join(sorted(s.value for s in TOKENS[token]))
        assert answer.json() == {"error": "forbidden",
                                 "detail": f"this token may not {action}: it lacks the '{scope}' scope (it has {has})"}


def test_each_scope_may_make_its_own_calls(service):
    profiles = small_profiles()
    assert service.put(f"/v1/profiles/{profiles['name']}", json=profiles, headers=auth("t-profiles")).status_code == 200
    plan = service.post("/v1/plans", json=small_plan_request({"name": profiles["name"]}), headers=auth("t-plan"))
    assert plan.status_code == 201, plan.text
    bound = service.put("/v1/assignments/linear", json={"plan_id": plan.json()["id"]}, headers=auth("t-bind"))
    assert bound.status_code == 200
    assert service.get("/v1/assignments/linear", headers=auth("t-read")).json()["plan_id"] == plan.json()["id"]
    assert service.post("/v1/metrics/batches", json=batch([record()]), headers=auth("t-records")).status_code == 200
    assert service.get("/v1/metrics/summary", headers=auth(ADMIN)).json()["batches"] == 1


def test_a_wrong_token_is_still_401(service):
    answer = service.get("/v1/profiles", headers=auth("nobody"))
    assert answer.status_code == 401 and answer.json()["detail"] == "the bearer token is wrong"


def _worker_token(service, topology: str = "linear") -> str:
    answer = service.post("/v1/metrics/tokens", json={"topology": topology}, headers=auth("t-records"))
    assert answer.status_code == 200, answer.text
    return answer.json()["token"]


def test_a_worker_token_posts_its_topologys_records_and_nothing_else(service):
    worker = _worker_token(service)
    assert worker.startswith("records.linear.") and worker == _worker_token(service), "the same topology, the same token"
    assert service.post("/v1/metrics/batches", json=batch([record()]), headers=auth(worker)).status_code == 200
    refused = []
    for method, path in _calls(service):
        if (method, path) == ("POST", "/v1/metrics/batches"):
            continue
        answer = service.request(method, path, json={}, headers=auth(worker))
        if answer.status_code != 403 or "records of topology 'linear' only" not in answer.json()["detail"]:
            refused.append(f"{method} {path}: {answer.status_code}")
    assert not refused, f"a worker token got past the guard: {refused}"


def test_a_worker_token_cannot_post_another_topologys_records(service):
    worker = _worker_token(service, "linear")
    other = batch([record(topology="words")])
    answer = service.post("/v1/metrics/batches", json=other, headers=auth(worker))
    assert answer.status_code == 403
    assert answer.json()["detail"] == "this token may post the records of topology 'linear' only, not of 'words'"
    assert service.get("/v1/metrics/summary", headers=auth("t-read")).json()["batches"] == 0


def test_a_worker_token_of_another_secret_or_altered_is_401(service):
    forged = records_token(b"not-the-service-secret-0123456789", "linear")
    assert service.post("/v1/metrics/batches", json=batch([record()]), headers=auth(forged)).status_code == 401
    altered = _worker_token(service).replace("records.linear.", "records.words.")
    assert service.post("/v1/metrics/batches", json=batch([record(topology="words")]), headers=auth(altered)).status_code == 401


def test_only_the_records_scope_hands_out_worker_tokens(service):
    answer = service.post("/v1/metrics/tokens", json={"topology": "linear"}, headers=auth("t-plan"))
    assert answer.status_code == 403 and "lacks the 'records' scope" in answer.json()["detail"]


def test_the_records_secret_is_kept_so_a_restarted_service_takes_the_same_worker_tokens(tmp_path):
    first = load_records_secret(tmp_path / "data")
    assert load_records_secret(tmp_path / "data") == first and len(first) == 32
    assert (tmp_path / "data" / "records-secret").stat().st_mode & 0o077 == 0
    token = records_token(first, "linear")
    assert records_grant(first, token) == Grant(frozenset({Scope.RECORDS}), topology="linear")
    assert records_grant(load_records_secret(tmp_path / "other"), token) is None


def test_a_single_token_is_every_scope(tmp_path):
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", token="one")
    with TestClient(create_app(settings)) as client:
        profiles = small_profiles()
        assert client.put(f"/v1/profiles/{profiles['name']}", json=profiles, headers=auth("one")).status_code == 200
        worker = client.post("/v1/metrics/tokens", json={"topology": "linear"}, headers=auth("one")).json()["token"]
        assert client.post("/v1/metrics/batches", json=batch([record()]), headers=auth(worker)).status_code == 200


# --- the records store's bound -----------------------------------------------------------------------

def _batch(n: int, topology: str = "linear") -> MetricsBatch:
    return MetricsBatch.model_validate(batch([record(task_id=n, topology=topology)], batch_id=str(uuid.UUID(int=n))))


def test_past_its_size_the_store_deletes_its_oldest_batches_and_counts_them(tmp_path):
    store = RecordsStore(tmp_path / "records", RecordsLimits(max_bytes=2_500, keep_days=None))
    for n in range(1, 9):
        store.append(_batch(n), now=1_000.0 + n)
    kept = sorted(r["task_id"] for r in store.read("linear"))
    assert kept == list(range(9 - len(kept), 9)) and 1 <= len(kept) < 8, "the newest are kept, the oldest gone"
    assert store.tally.dropped_batches == 8 - len(kept) and store.tally.dropped_records == 8 - len(kept)
    assert store.tally.bytes <= 2_500 and store.tally.batches == 8


def test_retention_deletes_batches_received_before_it_and_the_summary_counts_them(tmp_path):
    store = RecordsStore(tmp_path / "records", RecordsLimits(max_bytes=None, keep_days=1.0))
    day = 86_400.0
    store.append(_batch(1, "words"), now=10 * day)
    store.append(_batch(2), now=10.5 * day)
    store.append(_batch(3), now=11.2 * day)
    assert [r["task_id"] for r in store.read("linear")] == [2, 3]
    assert store.read("words") == [] and not (store.root / "topology=words").exists(), "its empty folders go too"
    assert (store.tally.dropped_batches, store.tally.dropped_records) == (1, 1)


def test_a_restarted_store_knows_what_it_holds_and_keeps_within_its_limit(tmp_path):
    RecordsStore(tmp_path / "records", RecordsLimits(max_bytes=None)).append(_batch(1), now=1.0)
    again = RecordsStore(tmp_path / "records", RecordsLimits(max_bytes=1))
    again.append(_batch(2), now=2.0)
    assert [r["task_id"] for r in again.read("linear")] == [2] and again.tally.dropped_batches == 1


def test_past_limits_keeps_the_newest_file_always():
    oldest = StoredFile(received_at=0.0, path="a", size=10)
    assert past_limits(oldest, files=2, total_bytes=11, limits=RecordsLimits(max_bytes=10), now=1.0)
    assert not past_limits(oldest, files=1, total_bytes=11, limits=RecordsLimits(max_bytes=10), now=1.0)
    assert past_limits(oldest, files=2, total_bytes=1, limits=RecordsLimits(max_bytes=None, keep_days=1.0), now=86_401.0)
    assert not past_limits(oldest, files=2, total_bytes=1, limits=RecordsLimits(max_bytes=None, keep_days=1.0), now=86_399.0)


def test_the_summary_says_the_stores_bound(tmp_path):
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", records_max_bytes=1, records_keep_days=2.0)
    with TestClient(create_app(settings)) as client:
        for n in (1, 2):
            assert client.post("/v1/metrics/batches", json=batch([record(task_id=n)])).status_code == 200
        store = client.get("/v1/metrics/summary").json()["store"]
    assert store["max_bytes"] == 1 and store["keep_days"] == 2.0
    assert (store["dropped_batches"], store["dropped_records"]) == (1, 1) and store["bytes"] > 0


# --- the command line ------------------------------------------------------------------------------

def test_cli_commands_take_the_token_of_the_scope_they_need(start_planner_service, tmp_path):
    token_file = tmp_path / "tokens"
    token_file.write_text("read cli-read\nprofiles,read cli-profiles\n")
    token_file.chmod(0o600)
    live = start_planner_service(extra_args=["--token-file", str(token_file)])
    profiles = tmp_path / "micro.json"
    profiles.write_text(json.dumps(small_profiles("micro")))
    runner = CliRunner()
    put = ["profiles", "put", "micro", str(profiles), "--planner", live.url]
    refused = runner.invoke(cli_app, [*put, "--token", "cli-read"])
    assert refused.exit_code != 0
    assert "refused the call (403): this token may not store or delete profile sets: it lacks the 'profiles' scope" in refused.output
    assert runner.invoke(cli_app, [*put, "--token", "cli-profiles"]).exit_code == 0
    listed = runner.invoke(cli_app, ["profiles", "list", "--planner", live.url], env={"HETSCHED_PLANNER_TOKEN": "cli-read"})
    assert listed.exit_code == 0 and "micro" in listed.output


def test_submit_gives_the_workers_their_topologys_records_token(start_planner_service, tmp_path, monkeypatch):
    from hetsched.submit_checks import workers_records_token
    from observe.nimbus import NimbusAddress

    token_file = tmp_path / "tokens"
    token_file.write_text("records,plan,read submitter\nplan,read nimbus\n")
    token_file.chmod(0o600)
    live = start_planner_service(extra_args=["--token-file", str(token_file)])
    nimbus = NimbusAddress("127.0.0.1", 1)
    monkeypatch.setenv("HETSCHED_PLANNER_TOKEN", "submitter")
    conf, note = workers_records_token("linear", nimbus, live.url)
    assert note is None and conf["hetsched.metrics.token"].startswith("records.linear.")
    worker = conf["hetsched.metrics.token"]
    posted = httpx.post(f"{live.url}/v1/metrics/batches", json=batch([record()]), headers=auth(worker), timeout=30)
    assert posted.status_code == 200, posted.text

    monkeypatch.setenv("HETSCHED_PLANNER_TOKEN", "nimbus")
    conf, note = workers_records_token("linear", nimbus, live.url)
    assert conf == {} and "lacks the 'records' scope" in note and "supervisors' planner token" in note
    assert workers_records_token(None, nimbus, live.url)[0] == {}
