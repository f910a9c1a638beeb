"""Schemathesis over the live service's own OpenAPI schema: no 5xx, every answer as documented."""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.fixtures.service import small_profiles


@pytest.fixture(scope="module")
def fuzzed_schema(planner_service):
    """The schema as the running server publishes it, with a stored profile set so named references can hit."""
    with planner_service.http() as http:
        http.put("/v1/profiles/fuzz", json=small_profiles("fuzz"))
    return schemathesis.from_uri(f"{planner_service.url}/openapi.json", base_url=planner_service.url)


schema = schemathesis.from_pytest_fixture("fuzzed_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_endpoint_answers_as_documented(case):
    case.call_and_validate(timeout=60)
