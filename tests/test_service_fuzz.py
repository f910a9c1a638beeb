"""Schemathesis over the live service's own OpenAPI schema: no 5xx, every answer as documented."""
from __future__ import annotations

import time
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import DataGenerationMethod

from tests.fixtures.service import LiveService, small_profiles

schemathesis.experimental.OPEN_API_3_1.enable()  # FastAPI publishes OpenAPI 3.1

pytestmark = pytest.mark.slow  # minutes of generated requests: `make test` runs it, a bare `pytest` does not


@pytest.fixture(scope="module")
def fuzzed_service(tmp_path_factory):
    """A server of its own with a 1 s time limit, so a generated request for an exact search stops quickly."""
    tmp = tmp_path_factory.mktemp("fuzzed")
    service = LiveService(db_path=tmp / "db.sqlite", log_path=tmp / "serve.log", extra_args=["--time-limit-s", "1"]).start()
    with service.http() as http:
        http.put("/v1/profiles/fuzz", json=small_profiles("fuzz"))
    yield service
    service.stop()


def with_inclusive_twins(node: Any) -> Any:
    """Add ``minimum: x`` beside every numeric ``exclusiveMinimum: x`` (and likewise for maximum).

    The same constraint in OpenAPI 3.1; schemathesis 3's negative mutations were written for
    3.0, where ``exclusiveMinimum`` is a flag that needs ``minimum``, and fail (KeyError) without it.
    """
    if isinstance(node, dict):
        node = {key: with_inclusive_twins(value) for key, value in node.items()}
        for exclusive, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(node.get(exclusive), (int, float)) and not isinstance(node[exclusive], bool):
                node.setdefault(inclusive, node[exclusive])
        return node
    if isinstance(node, list):
        return [with_inclusive_twins(item) for item in node]
    return node


@pytest.fixture(scope="module")
def fuzzed_schema(fuzzed_service):
    """The schema as the running server publishes it (a stored profile set lets named references hit)."""
    with fuzzed_service.http() as http:
        published = http.get("/openapi.json").json()
    return schemathesis.from_dict(with_inclusive_twins(published), base_url=fuzzed_service.url,
                                  data_generation_methods=[DataGenerationMethod.positive, DataGenerationMethod.negative])


schema = schemathesis.from_pytest_fixture("fuzzed_schema")
STATUSES: dict[str, set[int]] = {}
SLOWEST: dict[str, float] = {}
CALLS: dict[str, int] = {}


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_endpoint_answers_as_documented(case):
    started = time.perf_counter()
    response = case.call_and_validate(timeout=60)
    SLOWEST[case.operation.verbose_name] = max(SLOWEST.get(case.operation.verbose_name, 0.0), time.perf_counter() - started)
    STATUSES.setdefault(case.operation.verbose_name, set()).add(response.status_code)
    CALLS[case.operation.verbose_name] = CALLS.get(case.operation.verbose_name, 0) + 1


def test_the_fuzz_reached_success_and_error_answers():
    """The run above did exercise both sides of every endpoint (it is not all 422s)."""
    if not STATUSES:
        pytest.skip("the fuzz test did not run in this session")
    print("calls:", CALLS)
    print("statuses:", {name: sorted(codes) for name, codes in STATUSES.items()})
    print("slowest answer (s):", {name: round(seconds, 2) for name, seconds in SLOWEST.items()})
    assert all(code < 500 for codes in STATUSES.values() for code in codes)
    assert 200 in STATUSES["GET /healthz"]
    assert 422 in STATUSES["POST /v1/plans"] and 422 in STATUSES["PUT /v1/profiles/{name}"]
