"""A Python client of the planning service (docs/reference/api.md), used by the command line and the benchmarks.

Every failure becomes a :class:`PlannerClientError` whose message is one line a person can act
on: no planner at the URL, the server's own sentence for 404/413/422, a refused token.
"""
from __future__ import annotations

import os
from typing import Any, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from planner.events import DEFAULT_LIMIT, TopologyEvents
from planner.ledger import Ledger, PriorityAnswer
from planner.model import (
    Evaluation,
    EvaluationRequest,
    Plan,
    PlanRequest,
    ProfileSet,
    ProfileSetVersions,
    StoredProfileSet,
)

URL_ENV = "HETSCHED_PLANNER_URL"
TOKEN_ENV = "HETSCHED_PLANNER_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8765"
DEFAULT_TIMEOUT_S = 120.0
"""Longer than the service can take to answer: a 60 s wait for a planning slot plus the 10 s time limit."""

M = TypeVar("M", bound=BaseModel)


class PlannerClientError(RuntimeError):
    """The call failed; ``status`` is the HTTP status (None when no answer came)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def request_body(model: BaseModel) -> dict[str, Any]:
    """The JSON the API expects: field aliases (``from``/``to``), no null optional fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def put_summary(stored: StoredProfileSet, where: str) -> str:
    """One line on what a PUT of a profile set did, ``where`` naming the planner ("at URL", "in the planner")."""
    what = f"profile set {stored.name} ({len(stored.entries)} entries)"
    if stored.created:
        return f"stored {what} as version {stored.version} {where}"
    return f"{what} unchanged {where}: version {stored.version} holds the same content"


class PlannerClient:
    """Calls one planning service. ``url``/``token`` default to $HETSCHED_PLANNER_URL / $HETSCHED_PLANNER_TOKEN."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.url = (url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/healthz").json()

    def plan(self, request: PlanRequest) -> Plan:
        return self._parse(Plan, self._call("POST", "/v1/plans", json=request_body(request)))

    def get_plan(self, plan_id: str) -> Plan:
        return self._parse(Plan, self._call("GET", f"/v1/plans/{quote(plan_id, safe='')}"))

    def evaluate(self, request: EvaluationRequest) -> Evaluation:
        return self._parse(Evaluation, self._call("POST", "/v1/evaluations", json=request_body(request)))

    def delete_plan(self, plan_id: str) -> None:
        self._call("DELETE", f"/v1/plans/{quote(plan_id, safe='')}")

    def bind(self, topology: str, plan_id: str, reason: str = "") -> dict[str, Any]:
        """Bind a stored plan to a running topology by name (``PUT /v1/assignments/{topology}``); the plugin places
        the topology by it the next time it needs placing."""
        return self._call("PUT", f"/v1/assignments/{quote(topology, safe='')}",
                          json={"plan_id": plan_id, "reason": reason}).json()

    def binding(self, topology: str) -> dict[str, Any] | None:
        """The plan bound to the topology, or None."""
        try:
            return self._call("GET", f"/v1/assignments/{quote(topology, safe='')}").json()
        except PlannerClientError as exc:
            if exc.status == 404:
                return None
            raise

    def events(self, topology: str, limit: int = DEFAULT_LIMIT) -> TopologyEvents:
        """The topology's newest events, the newest first (``GET /v1/topologies/{topology}/events``)."""
        return self._parse(TopologyEvents, self._call("GET", f"/v1/topologies/{quote(topology, safe='')}/events",
                                                      params={"limit": limit}))

    def repair(self, request: Any) -> Plan:
        """``POST /v1/repairs`` (planner.repair.RepairRequest): keep the running instances, place the lost ones."""
        return self._parse(Plan, self._call("POST", "/v1/repairs", json=request_body(request)))

    def put_profile_set(self, profile_set: ProfileSet) -> StoredProfileSet:
        """Store the set as its name's next version (``created`` False: it equals the newest, nothing stored)."""
        return self._parse(StoredProfileSet, self._call("PUT", f"/v1/profiles/{quote(profile_set.name, safe='')}", json=request_body(profile_set)))

    def get_profile_set(self, name: str, version: int | None = None) -> ProfileSet:
        """Version ``version`` of the set, or its newest."""
        path = f"/v1/profiles/{quote(name, safe='')}" + (f"/versions/{version}" if version is not None else "")
        return self._parse(ProfileSet, self._call("GET", path))

    def profile_set_versions(self, name: str) -> ProfileSetVersions:
        return self._parse(ProfileSetVersions, self._call("GET", f"/v1/profiles/{quote(name, safe='')}/versions"))

    def delete_profile_version(self, name: str, version: int) -> None:
        self._call("DELETE", f"/v1/profiles/{quote(name, safe='')}/versions/{version}")

    def profile_set_names(self) -> list[str]:
        return list(self._call("GET", "/v1/profiles").json()["profiles"])

    def ledger(self) -> Ledger:
        """Every topology sharing the cluster, its share, and each machine's load and room."""
        return self._parse(Ledger, self._call("GET", "/v1/ledger"))

    def set_priority(self, topology: str, priority: int) -> PriorityAnswer:
        """Change a tenant's priority; the answer names the topologies whose share changed."""
        return self._parse(PriorityAnswer, self._call("PUT", f"/v1/tenants/{quote(topology, safe='')}/priority",
                                                      json={"priority": priority}))

    def records_token(self, topology: str) -> str:
        """The token a topology's workers post its records with (and nothing else); needs the records scope."""
        answer = self._call("POST", "/v1/metrics/tokens", json={"topology": topology})
        try:
            return str(answer.json()["token"])
        except (ValueError, KeyError, TypeError):
            raise PlannerClientError(f"the planner at {self.url} answered no records token for {topology}") from None

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.ConnectError:
            raise PlannerClientError(f"no planner at {self.url} (connection refused): start one with `hetsched serve`") from None
        except httpx.TimeoutException:
            raise PlannerClientError(f"the planner at {self.url} did not answer within {self._http.timeout.read:g} s") from None
        except httpx.HTTPError as exc:
            raise PlannerClientError(f"the call to the planner at {self.url} failed: {exc}") from None
        if response.is_success:
            return response
        raise PlannerClientError(self._error_sentence(response), response.status_code)

    def _error_sentence(self, response: httpx.Response) -> str:
        try:
            detail = response.json().get("detail")
        except (ValueError, AttributeError):
            detail = None
        detail = detail if isinstance(detail, str) else response.text.strip()[:300] or response.reason_phrase
        if response.status_code == 401:
            return f"the planner at {self.url} refused the call (401): {detail}; pass --token or set ${TOKEN_ENV}"
        if response.status_code == 403:
            return f"the planner at {self.url} refused the call (403): {detail}; pass a --token that has that scope"
        if response.status_code in (404, 409, 413, 422):
            return detail
        return f"the planner at {self.url} answered {response.status_code}: {detail}"

    def _parse(self, model: type[M], response: httpx.Response) -> M:
        try:
            return model.model_validate_json(response.content)
        except ValueError as exc:
            raise PlannerClientError(f"the planner at {self.url} answered something that is not a {model.__name__}: {exc}") from None
