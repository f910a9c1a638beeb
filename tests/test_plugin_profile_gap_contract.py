"""The plugin's own plan requests, sent byte for byte, answered as the plugin reads a topology its profiles cannot plan.

The plugin places such a topology evenly and waits for a new version of its set only when the answer is
``422 profile_missing`` with every pair in ``missing`` (component, profile, machine_type), or ``404 not_found``
naming the profile set (storm-plugin's PlannerClient); every plugin request is a tenant's, which the
service used to answer ``409 admission_refused`` for its own missing pair.
"""
from __future__ import annotations

from planner.model import PlanRequest
from tests.test_plugin_contract import _profiles_for, plan_request_files  # noqa: F401  the module's fixture

__all__ = ["plan_request_files"]


def test_a_set_lacking_a_pair_is_answered_profile_missing_with_the_pair(plan_request_files, planner_service):  # noqa: F811
    checked = 0
    with planner_service.http() as http:
        for f in plan_request_files:
            request = PlanRequest.model_validate_json(f.read_bytes())
            profiles = _profiles_for(request)
            dropped = profiles.entries[-1]
            partial = profiles.model_copy(update={"entries": profiles.entries[:-1]})
            stored = http.put(f"/v1/profiles/{partial.name}", content=partial.model_dump_json(),
                              headers={"Content-Type": "application/json"})
            assert stored.status_code == 200, stored.text
            answer = http.post("/v1/plans", content=f.read_bytes(), headers={"Content-Type": "application/json"})
            used = {m.type for m in request.cluster.machines}
            if dropped.machine_type not in used:
                continue  # a type without a machine needs no profile
            assert answer.status_code == 422, f"{f.name}: {answer.status_code} {answer.text}"
            body = answer.json()
            assert body["error"] == "profile_missing", f"{f.name}: {body}"
            assert {(m["profile"], m["machine_type"]) for m in body["missing"]} == {
                (dropped.profile, dropped.machine_type)}, f"{f.name}: {body}"
            assert set(body["missing"][0]) == {"component", "profile", "machine_type"}
            checked += 1
    assert checked >= 3, "too few plugin requests lost a pair their cluster needs"


def test_an_unknown_set_is_the_services_own_404_naming_it(plan_request_files, planner_service):  # noqa: F811
    f = plan_request_files[0]
    body = PlanRequest.model_validate_json(f.read_bytes())
    body = body.model_copy(update={"profiles": body.profiles.model_copy(update={"name": "never-stored"})})
    with planner_service.http() as http:
        answer = http.post("/v1/plans", content=body.model_dump_json(by_alias=True, exclude_none=True),
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 404, answer.text
    assert answer.json()["error"] == "not_found" and "profile set" in answer.json()["detail"]
