"""Profile set versions, plans that name their version, deletion and retention, through a real ``hetsched serve``."""
from __future__ import annotations

import sqlite3

import pytest

from tests.fixtures.service import small_plan_request, small_profiles


@pytest.fixture
def http(planner_service):
    with planner_service.http() as client:
        yield client


def _ok(response, status: int = 200) -> dict:
    assert response.status_code == status, response.text
    return response.json() if response.content else {}


def _error(response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code and "\n" not in body["detail"]
    return body["detail"]


def _changed(name: str, run: int, e_high_fast: float = 0.008) -> dict:
    body = small_profiles(name)
    body["source"] = {"run": run}
    for entry in body["entries"]:
        if entry["profile"] == "highCompute" and entry["machine_type"] == "fast":
            entry["e"] = e_high_fast
    return body


def test_each_put_adds_a_version_and_both_read_back(http):
    first = _ok(http.put("/v1/profiles/ver", json=_changed("ver", 1)))
    second = _ok(http.put("/v1/profiles/ver", json=_changed("ver", 2, e_high_fast=0.004)))
    assert (first["version"], first["created"]) == (1, True)
    assert (second["version"], second["created"]) == (2, True)
    newest = _ok(http.get("/v1/profiles/ver"))
    assert newest["version"] == 2 and newest["source"] == {"run": 2} and "created" not in newest
    assert _ok(http.get("/v1/profiles/ver/versions/1"))["source"] == {"run": 1}
    assert _ok(http.get("/v1/profiles/ver/versions/2")) == newest
    listing = _ok(http.get("/v1/profiles/ver/versions"))
    assert listing["name"] == "ver"
    assert [(v["version"], v["entry_count"], v["plans"]) for v in listing["versions"]] == [(1, 6, 0), (2, 6, 0)]
    assert listing["versions"][0]["digest"] != listing["versions"][1]["digest"]
    assert listing["versions"][0]["created_at"] <= listing["versions"][1]["created_at"]


def test_a_put_equal_to_the_newest_adds_no_version_and_says_so(http, planner_service):
    _ok(http.put("/v1/profiles/same", json=_changed("same", 1)))
    again = _ok(http.put("/v1/profiles/same", json={**_changed("same", 1), "version": 7}))
    assert (again["version"], again["created"]) == (1, False)
    assert len(_ok(http.get("/v1/profiles/same/versions"))["versions"]) == 1
    assert "profile set same version 1 unchanged (6 entries)" in planner_service.log()


def test_a_plan_records_the_version_it_used_and_may_name_one(http):
    _ok(http.put("/v1/profiles/pv", json=_changed("pv", 1)))
    _ok(http.put("/v1/profiles/pv", json=_changed("pv", 2, e_high_fast=0.002)))
    newest = _ok(http.post("/v1/plans", json=small_plan_request(profiles={"name": "pv"})), 201)
    pinned = _ok(http.post("/v1/plans", json=small_plan_request(profiles={"name": "pv", "version": 1})), 201)
    assert newest["profiles"] == {"name": "pv", "version": 2}
    assert pinned["profiles"] == {"name": "pv", "version": 1}
    assert newest["input_rate"] > pinned["input_rate"]  # version 2's bottleneck costs a quarter of version 1's
    assert _ok(http.get(f"/v1/plans/{pinned['id']}"))["profiles"] == {"name": "pv", "version": 1}
    inline = _ok(http.post("/v1/plans", json=small_plan_request()), 201)
    assert inline["profiles"] is None
    assert [v["plans"] for v in _ok(http.get("/v1/profiles/pv/versions"))["versions"]] == [1, 1]


def test_reusing_a_plan_keeps_the_version_it_was_made_with(http):
    _ok(http.put("/v1/profiles/reuse", json=_changed("reuse", 1)))
    plan = _ok(http.post("/v1/plans", json=small_plan_request(profiles={"name": "reuse"})), 201)
    _ok(http.put("/v1/profiles/reuse", json=_changed("reuse", 2, e_high_fast=0.002)))
    again = small_plan_request(profiles={"name": "reuse"})
    again["plan_id"] = plan["id"]
    reused = _ok(http.post("/v1/plans", json=again), 201)
    assert reused["id"] == plan["id"] and reused["stats"]["reused_plan"] is True
    assert reused["profiles"] == {"name": "reuse", "version": 1}
    assert reused["input_rate"] == pytest.approx(plan["input_rate"])
    again["profiles"] = {"name": "reuse", "version": 2}
    fresh = _ok(http.post("/v1/plans", json=again), 201)
    assert fresh["id"] != plan["id"] and fresh["profiles"] == {"name": "reuse", "version": 2}


@pytest.mark.parametrize("path, detail", [
    ("/v1/profiles/nobody/versions", "profile set 'nobody' does not exist"),
    ("/v1/profiles/nobody/versions/1", "profile set 'nobody' does not exist"),
    ("/v1/profiles/few/versions/9", "profile set 'few' has no version 9 (stored versions: 1)"),
])
def test_unknown_set_or_version_is_404_naming_it(http, path, detail):
    _ok(http.put("/v1/profiles/few", json=small_profiles("few")))
    assert _error(http.get(path), 404, "not_found") == detail
    if path.rsplit("/", 1)[1].isdigit():
        assert _error(http.delete(path), 404, "not_found") == detail


def test_a_plan_naming_an_unknown_version_is_404_and_a_bad_one_422(http):
    _ok(http.put("/v1/profiles/few", json=small_profiles("few")))
    detail = _error(http.post("/v1/plans", json=small_plan_request(profiles={"name": "few", "version": 4})), 404, "not_found")
    assert detail == "profile set 'few' has no version 4 (stored versions: 1)"
    detail = _error(http.post("/v1/plans", json=small_plan_request(profiles={"name": "few", "version": 0})), 422, "invalid_request")
    assert detail == "profiles.version: Input should be greater than or equal to 1"
    inline = small_plan_request()
    inline["profiles"]["version"] = 1
    detail = _error(http.post("/v1/plans", json=inline), 422, "invalid_request")
    assert "profiles.version needs profiles.name" in detail


@pytest.mark.parametrize("version, fault", [("0", "greater than or equal to 1"), ("two", "valid integer"), ("1.5", "valid integer")])
def test_a_bad_version_number_in_the_path_is_422_naming_it(http, version, fault):
    detail = _error(http.get(f"/v1/profiles/few/versions/{version}"), 422, "invalid_request")
    assert detail.startswith("path.version: ") and fault in detail


def test_deleting_a_plan_and_then_the_version_it_named(http):
    _ok(http.put("/v1/profiles/del", json=_changed("del", 1)))
    _ok(http.put("/v1/profiles/del", json=_changed("del", 2)))
    plan = _ok(http.post("/v1/plans", json=small_plan_request(profiles={"name": "del", "version": 1})), 201)
    detail = _error(http.delete("/v1/profiles/del/versions/1"), 409, "in_use")
    assert detail == f"profile set 'del' version 1 is named by 1 stored plan ({plan['id']}): delete it first"
    assert http.delete(f"/v1/plans/{plan['id']}").status_code == 204
    assert _error(http.get(f"/v1/plans/{plan['id']}"), 404, "not_found") == f"plan '{plan['id']}' does not exist"
    assert _error(http.delete(f"/v1/plans/{plan['id']}"), 404, "not_found") == f"plan '{plan['id']}' does not exist"
    assert http.delete("/v1/profiles/del/versions/1").status_code == 204
    assert [v["version"] for v in _ok(http.get("/v1/profiles/del/versions"))["versions"]] == [2]
    assert http.delete("/v1/profiles/del/versions/2").status_code == 204
    assert _error(http.get("/v1/profiles/del"), 404, "not_found") == "profile set 'del' does not exist"
    assert "del" not in _ok(http.get("/v1/profiles"))["profiles"]
    assert _ok(http.put("/v1/profiles/del", json=_changed("del", 3)))["version"] == 3  # numbers are never reused


def test_deletes_need_the_token(guarded_planner_service):
    with guarded_planner_service.http(token="") as anonymous:
        for path in ("/v1/plans/x", "/v1/profiles/x/versions/1"):
            assert _error(anonymous.delete(path), 401, "unauthorized")
    with guarded_planner_service.http() as allowed:
        assert _error(allowed.delete("/v1/plans/x"), 404, "not_found") == "plan 'x' does not exist"


@pytest.mark.slow  # restarts a service process
def test_retention_settings_apply_at_start_and_at_each_write(start_planner_service, tmp_path, monkeypatch):
    db = tmp_path / "kept" / "hetsched.db"
    service = start_planner_service(db_path=db)
    with service.http() as http:
        for run in range(1, 5):
            _ok(http.put("/v1/profiles/kept", json=_changed("kept", run)))
        plan = _ok(http.post("/v1/plans", json=small_plan_request(profiles={"name": "kept", "version": 1})), 201)
        old = _ok(http.post("/v1/plans", json=small_plan_request()), 201)
    service.stop()
    with sqlite3.connect(db) as raw:  # the inline plan was last used three days ago
        raw.execute("UPDATE plans SET used_at = used_at - 3 * 86400 WHERE id = ?", (old["id"],))
    service.extra_args = ["--keep-profile-versions", "2"]
    service.start()
    with service.http() as http:
        assert [v["version"] for v in _ok(http.get("/v1/profiles/kept/versions"))["versions"]] == [1, 3, 4]
        _ok(http.put("/v1/profiles/kept", json=_changed("kept", 5)))
        assert [v["version"] for v in _ok(http.get("/v1/profiles/kept/versions"))["versions"]] == [1, 4, 5]
        assert _ok(http.get(f"/v1/plans/{old['id']}"))["id"] == old["id"]
    assert "deleted 1 old version of profile set kept (keeping the newest 2 and those plans name)" in service.log()
    service.stop()
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE plans SET used_at = used_at - 3 * 86400 WHERE id = ?", (old["id"],))
    service.extra_args = []
    monkeypatch.setenv("HETSCHED_KEEP_PLANS_DAYS", "2")
    service.start()
    with service.http() as http:
        _error(http.get(f"/v1/plans/{old['id']}"), 404, "not_found")
        assert _ok(http.get(f"/v1/plans/{plan['id']}"))["profiles"] == {"name": "kept", "version": 1}
    assert "deleted 1 plan unused for 2 days" in service.log()
