"""POST /v1/metrics/batches: workers' records appended to the store once, garbage refused in one sentence."""
from __future__ import annotations

import json
import stat
import uuid

import pytest
from fastapi.testclient import TestClient

from planner.records_store import RecordsStore
from planner.service.app import create_app
from planner.service.settings import ServiceSettings

TOKEN = "metrics-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TS = 1763805600.0  # 2025-11-22 10:00 UTC


def record(task_id: int = 3, pid: int = 4100, executed: float = 100, ts: float = TS, **extra) -> dict:
    return {"source": "worker", "run_id": "linear-1-1763805600", "ts": ts, "topology": "linear",
            "component": "high", "profile": "highCompute", "task_id": task_id, "executor": [task_id, task_id],
            "pid": pid, "worker_id": "127.0.0.1:6701", "machine": "small-1", "machine_type": "small",
            "machine_cores": 0.5, "executed": executed, "emitted": executed, "executed_by_stream": {"default": executed},
            "cpu_seconds": 1.5, "thread_cpu_seconds": 0.2, "subprocess_cpu_seconds": 1.3, "worker_cpu_seconds": 9.0,
            "cpu_basis": "thread", **extra}


def batch(records: list[dict], batch_id: str | None = None, pid: int = 900, dropped: int = 0) -> dict:
    return {"batch_id": batch_id or str(uuid.uuid4()),
            "worker": {"host": "127.0.0.1", "port": 6701, "pid": pid, "topology_id": "linear-1-1763805600"},
            "dropped": dropped, "records": records}


@pytest.fixture
def service(tmp_path):
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", token=TOKEN, max_batch_bytes=20_000)
    with TestClient(create_app(settings)) as client:
        yield client, RecordsStore(tmp_path / "records")


def post(client, body) -> tuple[int, dict]:
    answer = client.post("/v1/metrics/batches", json=body, headers=AUTH)
    return answer.status_code, answer.json()


def test_a_batch_is_stored_once_under_its_topology_and_day_readable_by_its_owner_only(service):
    client, store = service
    body = batch([record(3), record(4, pid=4101)])
    code, answer = post(client, body)
    assert code == 200 and answer["duplicate"] is False and answer["records"] == 2
    assert answer["path"] == f"topology=linear/day=2025-11-22/{body['batch_id']}.jsonl"
    path = store.root / answer["path"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    rows = store.read("linear")
    assert [r["task_id"] for r in rows] == [3, 4]
    assert rows[0]["batch_id"] == body["batch_id"] and rows[0]["worker_dropped"] == 0
    assert rows[0]["executed_by_stream"] == {"default": 100} and rows[0]["cpu_basis"] == "thread"


def test_a_duplicate_batch_is_answered_but_not_stored_twice(service):
    client, store = service
    body = batch([record()])
    assert post(client, body)[1]["duplicate"] is False
    code, answer = post(client, body)
    assert code == 200 and answer["duplicate"] is True
    assert len(store.read("linear")) == 1
    summary = client.get("/v1/metrics/summary", headers=AUTH).json()
    assert (summary["batches"], summary["records"], summary["duplicates"]) == (1, 1, 1)


def test_a_worker_restart_starts_new_series_and_both_are_kept(service):
    client, store = service
    assert post(client, batch([record(executed=5000, pid=4100)], pid=900))[0] == 200
    assert post(client, batch([record(executed=12, pid=5100, ts=TS + 5)], pid=901))[0] == 200
    series = {(r["pid"], r["executed"]) for r in store.read("linear")}
    assert series == {(4100, 5000), (5100, 12)}
    workers = client.get("/v1/metrics/summary", headers=AUTH).json()["workers"]
    assert [w["worker"] for w in workers] == ["127.0.0.1:6701:900", "127.0.0.1:6701:901"]


def test_a_record_without_cpu_seconds_is_stored_for_the_aggregation_to_count_as_unusable(service):
    client, store = service
    body = record()
    del body["cpu_seconds"]
    assert post(client, batch([body]))[0] == 200
    assert "cpu_seconds" not in store.read("linear")[0]


def test_the_workers_dropped_records_are_counted(service):
    client, store = service
    post(client, batch([record()], dropped=0))
    post(client, batch([record(ts=TS + 60)], dropped=37))
    summary = client.get("/v1/metrics/summary", headers=AUTH).json()
    assert summary["dropped"] == 37 and summary["workers"][0]["dropped"] == 37
    in_time_order = sorted(store.read("linear"), key=lambda r: r["ts"])
    assert [r["worker_dropped"] for r in in_time_order] == [0, 37], "one file per batch, read in batch-id order"


@pytest.mark.parametrize("body, sentence", [
    ("not json at all", "the request body is not valid JSON"),
    ([1, 2], "the request body must be a JSON object"),
    ({"records": []}, "batch_id: Field required"),
    (batch([]), "records: List should have at least 1 item"),
    (batch([record(executed=-1)]), "records[0].executed: Input should be greater than or equal to 0"),
    (batch([record(ts="yesterday")]), "records[0].ts: Input should be a valid number"),
    (batch([{**record(), "pid": 0}]), "records[0].pid: Input should be greater than 0"),
    (batch([record(cpu_basis="wall")]), "records[0].cpu_basis: Input should be 'thread', 'machine' or 'shared'"),
    (batch([record(executed_by_stream={"default": -3})]), "stream 'default' has count -3"),
    ({**batch([record()]), "batch_id": "not-a-uuid"}, "batch_id: Input should be a valid UUID"),
    (batch([record(), {**record(), "topology": "other"}]), "the batch mixes records of topologies linear, other"),
    (batch([{**record(), "topology": "../etc"}]), "topology name '../etc' cannot name a folder"),
])
def test_garbage_is_refused_with_one_sentence_and_nothing_is_stored(service, body, sentence):
    client, store = service
    answer = client.post("/v1/metrics/batches", headers={**AUTH, "Content-Type": "application/json"},
                         content=body if isinstance(body, str) else json.dumps(body))
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert sentence in detail and "\n" not in detail
    assert not list(store.root.glob("**/*.jsonl"))


def test_an_oversize_batch_is_refused_and_names_the_limit(service):
    client, store = service
    code, answer = post(client, batch([record(task_id=i) for i in range(60)]))
    assert code == 413 and answer["error"] == "body_too_large"
    assert "over this planner's limit of 20,000 bytes per batch" in answer["detail"]
    assert not list(store.root.glob("**/*.jsonl"))


def test_a_batch_without_the_token_is_refused(service):
    client, _ = service
    answer = client.post("/v1/metrics/batches", json=batch([record()]))
    assert answer.status_code == 401


def test_the_records_dir_setting_moves_the_store(tmp_path):
    settings = ServiceSettings(db_path=tmp_path / "db.sqlite", records_dir=tmp_path / "elsewhere")
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/metrics/batches", json=batch([record()]))
    assert answer.status_code == 200
    assert (tmp_path / "elsewhere" / answer.json()["path"]).is_file()
