"""A stored plan as the parallelism of a submit: every component's instance count from the planner."""
from __future__ import annotations

import logging

from planner.client import PlannerClient, PlannerClientError
from planner.model import Plan, SYSTEM_PREFIX
from topologies.catalog import CatalogEntry
from topologies.errors import TopologyError

log = logging.getLogger(__name__)


def fetch_plan(plan_id: str, planner_url: str | None = None) -> Plan:
    """GET /v1/plans/{id} from the planning service."""
    with PlannerClient(planner_url) as client:
        try:
            return client.get_plan(plan_id)
        except PlannerClientError as exc:
            if exc.status == 404:
                raise TopologyError(f"the planner at {client.url} has no plan {plan_id!r}") from None
            raise TopologyError(str(exc)) from None


def plan_parallelism(plan: Plan, entry: CatalogEntry) -> dict[str, int]:
    """The plan's instance count of each component, if the plan is for exactly this topology's components."""
    return plan_instances(plan, entry.name, entry.component_ids)


def plan_instances(plan: Plan, topology: str, component_ids: list[str]) -> dict[str, int]:
    """The plan's instance count of each of ``component_ids``, if the plan places exactly these components."""
    planned = {c: n for c, n in plan.instances.items() if not c.startswith(SYSTEM_PREFIX)}
    wanted = list(component_ids)
    if set(planned) != set(wanted):
        missing = [c for c in wanted if c not in planned]
        extra = sorted(set(planned) - set(wanted))
        faults = []
        if missing:
            faults.append(f"has no instances for {', '.join(missing)}")
        if extra:
            faults.append(f"places components the topology does not have ({', '.join(extra)})")
        raise TopologyError(
            f"plan {plan.id or '?'} (topology {plan.topology!r}) does not match topology {topology}: it "
            + " and ".join(faults)
            + f"; {topology} has {', '.join(wanted)}"
        )
    bad = {c: n for c, n in planned.items() if n < 1}
    if bad:
        raise TopologyError(f"plan {plan.id or '?'} gives no instances to {', '.join(sorted(bad))}")
    return {c: planned[c] for c in wanted}


def plan_profiles_name(plan: Plan) -> str | None:
    """The profile set the plan was made with, where the planner recorded it (the plan's ``profiles``, else its stats)."""
    recorded = getattr(getattr(plan, "profiles", None), "name", None)
    name = recorded or (plan.stats.get("profiles") if isinstance(plan.stats, dict) else None)
    return name if isinstance(name, str) and name else None


def check_profile_set(name: str, planner_url: str) -> None:
    """Refuse a profile set the planner does not have, which the plugin would only find at scheduling.

    A planner that does not answer is not a refusal: Nimbus may reach a planner this host cannot.
    """
    with PlannerClient(planner_url, timeout_s=10.0) as client:
        try:
            client.get_profile_set(name)
        except PlannerClientError as exc:
            if exc.status == 404:
                names = _names(client)
                raise TopologyError(f"the planner at {client.url} has no profile set {name!r}"
                                    + (f" (it has {', '.join(names)})" if names else " (it has none)")
                                    + "; store it with `hetsched profiles put` or name another with --profiles") from None
            if exc.status is not None:
                raise TopologyError(str(exc)) from None
            log.warning("profile set %r not checked: %s", name, exc)


def _names(client: PlannerClient) -> list[str]:
    try:
        return client.profile_set_names()
    except (PlannerClientError, ValueError, KeyError, TypeError):
        return []
