"""Plans and profile sets survive a restart of the service process (same database file)."""
from __future__ import annotations

import pytest

from tests.fixtures.service import small_plan_request, small_profiles


@pytest.mark.slow  # restarts a service process twice
def test_plans_and_profiles_survive_a_restart(start_planner_service, tmp_path):
    service = start_planner_service(db_path=tmp_path / "persist" / "hetsched.db")
    with service.http() as http:
        assert http.put("/v1/profiles/kept", json=small_profiles("kept")).status_code == 200
        created = http.post("/v1/plans", json=small_plan_request(profiles={"name": "kept"}))
        assert created.status_code == 201
    plan = created.json()
    old_pid = service.process.pid

    service.restart()
    assert service.process.pid != old_pid

    with service.http() as http:
        assert http.get(f"/v1/plans/{plan['id']}").json() == plan
        assert http.get("/v1/profiles").json() == {"profiles": ["kept"]}
        assert http.get("/v1/profiles/kept").json()["entries"] == http.put(
            "/v1/profiles/kept", json=small_profiles("kept")).json()["entries"]
        assert http.post("/v1/plans", json=small_plan_request(profiles={"name": "kept"})).status_code == 201


def test_hetsched_db_env_points_the_service_elsewhere(start_planner_service, tmp_path, monkeypatch):
    """Without --db, $HETSCHED_DB decides where the data lives."""
    target = tmp_path / "from-env" / "plans.db"
    monkeypatch.setenv("HETSCHED_DB", str(target))
    service = start_planner_service(db_path=tmp_path / "ignored.db", use_db_option=False)
    with service.http() as http:
        assert http.put("/v1/profiles/env", json=small_profiles("env")).status_code == 200
    assert target.exists()
