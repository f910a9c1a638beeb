"""A restart of the planning service keeps the ledger: heartbeats missed while it was down release no tenant."""
from __future__ import annotations

import time

from fastapi.testclient import TestClient

from planner.ledger import TenantRecord
from planner.service.app import create_app
from planner.service.settings import ServiceSettings
from planner.storage import Storage


def _record(name: str, heartbeat_at: float) -> TenantRecord:
    share = {"slope": 1.0, "fixed": 0.0, "worker": 0.0, "capacity": 80.0, "type": "slow"}
    return TenantRecord(topology=name, machines={"m0": share}, registered_at=heartbeat_at, heartbeat_at=heartbeat_at)


def test_tenants_silent_only_while_the_service_was_down_are_still_in_the_ledger_after_it_starts(tmp_path):
    db = tmp_path / "planner.db"
    down_since = time.time() - 600  # ten minutes down, ten times the heartbeat TTL
    storage = Storage(db)
    storage.put_tenant(_record("linear", down_since))
    storage.put_tenant(_record("diamond", down_since - 5))
    storage.close()
    settings = ServiceSettings(db_path=db, tenant_ttl_s=60.0)
    with TestClient(create_app(settings)) as client:
        ledger = client.get("/v1/ledger")
        assert ledger.status_code == 200
        assert sorted(t["topology"] for t in ledger.json()["tenants"]) == ["diamond", "linear"]
        # the plugin's first heartbeat after the restart releases what no longer runs
        alive = client.post("/v1/tenants/alive", json={"topologies": ["linear"]})
        assert alive.status_code == 200
        assert [t["topology"] for t in client.get("/v1/ledger").json()["tenants"]] == ["linear"]


def test_a_tenant_without_heartbeats_while_the_service_runs_is_still_released(tmp_path):
    db = tmp_path / "planner.db"
    storage = Storage(db)
    storage.put_tenant(_record("linear", time.time() - 600))
    assert storage.renew_all_tenants(time.time()) == 1
    assert [t.topology for t in storage.tenants(expire_before=time.time() + 1)] == []
    storage.close()
