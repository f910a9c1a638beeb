"""The plugin's PlanRequest bodies against the service: the contract between Java and Python, without a Storm cluster.

storm-plugin's PlanRequestContractTest (JUnit) drives the real HetschedScheduler on representative Storm
topologies and clusters and writes each body it POSTs to target/contract/plan-requests/NAME.json;
`make test` runs it (mvn test) before pytest. Here each body is parsed by the service's own model,
planned by the planner core, and sent as it is to a real `hetsched serve`. Where the files are
missing or older than the plugin's sources, this module runs that JUnit test first.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from planner.api import make_plan
from planner.model import PlanRequest, ProfileEntry, ProfileSet

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "storm-plugin"
CONTRACT = PLUGIN / "target" / "contract" / "plan-requests"
JUNIT_TEST = "PlanRequestContractTest"
MVN_TIMEOUT_S = 900

LIGHT_COST = {"e": 0.001, "met": 1.0}
"""A profile entry's cost for every (profile, machine type) of a request: light enough that any fixture fits,
since the contract is the request's shape and references, not its numbers (e in CPU seconds per tuple, met in %)."""


def _newest_source_mtime() -> float:
    sources = [PLUGIN / "pom.xml", *(PLUGIN / "src").rglob("*.java")]
    return max(p.stat().st_mtime for p in sources)


def _written_by_the_current_plugin() -> list[Path]:
    files = sorted(CONTRACT.glob("*.json"))
    if files and min(f.stat().st_mtime for f in files) >= _newest_source_mtime():
        return files
    return []


@pytest.fixture(scope="module")
def plan_request_files() -> list[Path]:
    """The plugin's request files, from the JUnit test run now where missing or older than the plugin's sources."""
    files = _written_by_the_current_plugin()
    if files:
        return files
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.fail(f"{CONTRACT} is missing or stale and mvn is not on PATH to write it (make test runs mvn test first)")
    done = subprocess.run([mvn, "-q", "-f", str(PLUGIN / "pom.xml"), "test", f"-Dtest={JUNIT_TEST}",
                           "-Dsurefire.failIfNoSpecifiedTests=false"], capture_output=True, text=True,
                          timeout=MVN_TIMEOUT_S, check=False)
    files = sorted(CONTRACT.glob("*.json"))
    assert files, f"mvn test -Dtest={JUNIT_TEST} wrote no request files (exit {done.returncode}):\n{done.stdout[-4000:]}"
    return files


def _profiles_for(request: PlanRequest) -> ProfileSet:
    """A profile set naming every (profile key, machine type) the request's components need, under the request's name."""
    keys = sorted({c.profile for c in request.topology.components if c.profile is not None})
    entries = [ProfileEntry(profile=key, machine_type=t.name, **LIGHT_COST) for key in keys for t in request.cluster.machine_types]
    assert request.profiles.name is not None, "the plugin names a stored profile set"
    return ProfileSet(name=request.profiles.name, entries=entries, source={"made_by": "tests/test_plugin_contract.py"})


def _parsed(files: list[Path]) -> dict[str, PlanRequest]:
    return {f.stem: PlanRequest.model_validate_json(f.read_bytes()) for f in files}


def test_every_plugin_request_fits_the_service_model(plan_request_files):
    for f in plan_request_files:
        try:
            PlanRequest.model_validate_json(f.read_bytes())
        except ValueError as fault:
            pytest.fail(f"the plugin's request {f.name} breaks the service's PlanRequest:\n{fault}")


def test_the_plugin_requests_cover_the_representative_cases(plan_request_files):
    requests = _parsed(plan_request_files).values()
    components = [c for r in requests for c in r.topology.components]
    assert any(c.is_system and c.profile is None for c in components), "no request with a Storm system component"
    assert {"__acker", "__eventlogger"} <= {c.id for c in components}
    assert max(len(r.cluster.machine_types) for r in requests) >= 3
    assert any(t.capacity < 100 for r in requests for t in r.cluster.machine_types), "no request with a machine base load"
    assert any(t.cores is None for r in requests for t in r.cluster.machine_types)
    assert any(r.plan_id for r in requests) and any(r.strategy for r in requests)
    assert any(r.options.max_utilization < 1 for r in requests)
    assert {"shuffle", "local_or_shuffle", "partial_key", "fields", "all", "global"} <= {
        s.grouping for r in requests for s in r.topology.streams}
    assert sum(c.kind == "spout" for c in next(r for r in requests if r.topology.name == "star").topology.components) == 2


def test_every_plugin_request_is_plannable_as_sent(plan_request_files):
    for name, request in _parsed(plan_request_files).items():
        plan = make_plan(request.topology, request.cluster, _profiles_for(request).entries, request.strategy, request.options)
        fixed = {c.id: c.parallelism for c in request.topology.components}
        assert plan.instances == fixed, f"{name}: the plan changed the executor counts Nimbus fixed"
        machines = {m.id for m in request.cluster.machines}
        assert {a.machine for a in plan.assignments} <= machines, f"{name}: the plan names a machine the plugin did not send"
        assert plan.input_rate > 0, f"{name}: planned with no throughput"


def test_the_service_plans_every_plugin_request_byte_for_byte(plan_request_files, planner_service):
    with planner_service.http() as http:
        for f in plan_request_files:
            request = PlanRequest.model_validate_json(f.read_bytes())
            profiles = _profiles_for(request)
            stored = http.put(f"/v1/profiles/{profiles.name}", content=profiles.model_dump_json(),
                              headers={"Content-Type": "application/json"})
            assert stored.status_code == 200, stored.text
            answer = http.post("/v1/plans", content=f.read_bytes(), headers={"Content-Type": "application/json"})
            assert answer.status_code == 201, f"{f.name}: {answer.status_code} {answer.text}"
            assert answer.json()["instances"] == {c.id: c.parallelism for c in request.topology.components}


PLAN_ANSWER = REPO / "tests" / "fixtures" / "contract" / "plan-with-contingencies.json"
"""A Plan with contingencies as the service answers it; storm-plugin's ContingencyTest parses this same file with the
plugin's Plan.parse, so both sides read one body."""


def _shape(value):
    """Keys and value types, recursively (lists by their first item): what a parser depends on."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def test_the_plan_answer_the_plugin_parses_has_the_services_contingencies(planner_service):
    from tests.fixtures.service import small_plan_request

    request = small_plan_request(strategy="fast")
    request["options"] = {"survive_loss": {"objective": "nominal"}}
    with planner_service.http() as http:
        answer = http.post("/v1/plans", json=request)
    assert answer.status_code == 201, answer.text
    fixture = PLAN_ANSWER.read_text()
    assert _shape(answer.json()["contingencies"]) == _shape(json.loads(fixture)["contingencies"]), \
        f"the service's contingencies changed shape: write {PLAN_ANSWER} again and run ContingencyTest"
    assert {"id", "assignments", "machines", "input_rate"} <= set(json.loads(fixture))
