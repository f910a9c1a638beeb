"""How the service runs the planner core: profiles resolved, sizes and a time limit enforced, plans reused.

The core is synchronous CPU work; it runs in worker processes (:mod:`planner.service.workers`)
so the event loop keeps answering other callers and a plan past its time limit can be killed.
The core itself stops at ``options.time_limit_s`` (set here from the service's limit).
Requests larger than the service's size limit are refused before planning: the planner's
memory grows with components x machines (its placement tables) and with components squared x
machine types (the fast strategy's LP).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from planner.api import evaluate_assignments, make_plan
from planner.errors import PlanningTimeout
from planner.model import (
    Assignment,
    Cluster,
    Evaluation,
    InstanceAssignment,
    Plan,
    PlanOptions,
    PlanRequest,
    ProfileEntry,
    ProfileRef,
    ProfileVersionRef,
    StreamShares,
    Topology,
)
from planner.service.errors import ServiceError, not_found
from planner.service.settings import ServiceSettings, SizeLimit
from planner.service.workers import PlanningPool
from planner.storage import Storage
from planner.strategies.base import DEFAULT_STRATEGY
from planner.strategies.optimal import TIME_LIMIT_ADVICE

log = logging.getLogger("hetsched.service")


@dataclass(frozen=True)
class ResolvedProfiles:
    entries: list[ProfileEntry]
    ref: ProfileVersionRef | None
    """The stored version the entries are, None for inline entries."""


def resolve_profiles(ref: ProfileRef, storage: Storage) -> ResolvedProfiles:
    """The inline entries, or those of the stored version the request names (its newest without one; 404 if none)."""
    if ref.entries is not None:
        return ResolvedProfiles(ref.entries, None)
    if ref.name is None:
        raise ServiceError(422, "invalid_request", "profiles must give exactly one of 'name' (a stored profile set) or 'entries' (inline)")
    stored = storage.get_profile_set(ref.name, ref.version)
    if stored is None:
        if ref.version is None or storage.get_profile_set(ref.name) is None:
            raise not_found(f"profile set '{ref.name}' does not exist: store it with PUT /v1/profiles/{ref.name}")
        raise not_found(unknown_version_sentence(ref.name, ref.version, storage))
    return ResolvedProfiles(stored.entries, ProfileVersionRef(name=stored.name, version=stored.version))


def unknown_version_sentence(name: str, version: int, storage: Storage) -> str:
    """Names the missing version and the ones there are."""
    there = [v.version for v in storage.profile_set_versions(name)]
    listed = ", ".join(map(str, there[-10:])) if there else "none"
    return f"profile set '{name}' has no version {version} (stored versions: {'..., ' if len(there) > 10 else ''}{listed})"


def limited_options(options: PlanOptions, service_limit_s: float) -> PlanOptions:
    """The caller's options with a time limit no longer than the service's."""
    asked = options.time_limit_s
    limit = service_limit_s if asked is None else min(asked, service_limit_s)
    return options.model_copy(update={"time_limit_s": limit})


def caller_advice(timeout: PlanningTimeout, limit_s: float | None, service_limit_s: float) -> PlanningTimeout:
    """The core's timeout with advice a caller of the service can follow.

    The core says to raise ``options.time_limit_s``, but the service lowers any value above its own limit
    (:func:`limited_options`): where that limit bound, only a faster strategy or the operator can help.
    """
    message = str(timeout)
    if not message.endswith(TIME_LIMIT_ADVICE):
        return timeout
    if limit_s is not None and limit_s < service_limit_s:
        advice = f"raise options.time_limit_s (this service allows up to {service_limit_s:g} s) or use strategy {DEFAULT_STRATEGY}"
    else:
        advice = (f"use strategy {DEFAULT_STRATEGY}, or ask the service's operator to raise its limit "
                  f"(hetsched serve --time-limit-s)")
    return PlanningTimeout(message[: -len(TIME_LIMIT_ADVICE)] + advice)


@dataclass(frozen=True)
class RequestSize:
    """What a request's planning memory grows with: its components, machines and used machine types."""

    components: int
    machines: int
    machine_types: int

    @classmethod
    def of(cls, topology: Topology, cluster: Cluster) -> RequestSize:
        used_types = {m.type for m in cluster.machines}
        return cls(len(topology.components), len(cluster.machines), len(used_types))

    @property
    def placement_cells(self) -> int:
        """components x machines: the size of the placement tables (instances of each component on each machine)."""
        return self.components * self.machines

    @property
    def lp_cells(self) -> int:
        """components^2 x machine types: the size of the fast strategy's LP constraint matrix."""
        return self.components * self.components * self.machine_types

    def within(self, limit: SizeLimit) -> bool:
        return self.placement_cells <= limit.placement_cells and self.lp_cells <= limit.lp_cells

    def __str__(self) -> str:
        return (f"{self.components:,} components on {self.machines:,} machines of {self.machine_types:,} types")


def check_size(size: RequestSize, limit: SizeLimit) -> None:
    """Refuse (413 ``request_too_large``) a request over the service's size limit, naming the limit and its size."""
    if size.placement_cells > limit.placement_cells:
        raise ServiceError(413, "request_too_large", (
            f"the request is too large to plan here: {size} make {size.placement_cells:,} components x machines, "
            f"over this planner's limit of {limit.placement_cells:,}"))
    if size.lp_cells > limit.lp_cells:
        raise ServiceError(413, "request_too_large", (
            f"the request is too large to plan here: {size} make {size.lp_cells:,} components^2 x machine types, "
            f"over this planner's limit of {limit.lp_cells:,}"))


def plan_json(topology: Topology, cluster: Cluster, entries: list[ProfileEntry], strategy: str | None,
              options: PlanOptions) -> str:
    """``make_plan`` as a worker runs it: the plan as JSON, plain data across the process boundary."""
    return make_plan(topology, cluster, entries, strategy, options).model_dump_json()


def evaluation_json(topology: Topology, cluster: Cluster, entries: list[ProfileEntry],
                    assignments: list[InstanceAssignment], options: PlanOptions,
                    shares: list[StreamShares] | None = None) -> str:
    """``evaluate_assignments`` as a worker runs it: the evaluation as JSON."""
    return evaluate_assignments(topology, cluster, entries, assignments, options, shares).model_dump_json()


@dataclass(frozen=True)
class Planner:
    """Runs the core for one request: in a worker of the lane its size picks, within the service's limits."""

    pool: PlanningPool
    small: bool
    limit_s: float | None
    queue_wait_s: float
    service_limit_s: float

    @classmethod
    def for_request(cls, pool: PlanningPool, settings: ServiceSettings, topology: Topology, cluster: Cluster,
                    options: PlanOptions) -> Planner:
        """Refuses a request over the size limit (413) before any planning."""
        size = RequestSize.of(topology, cluster)
        check_size(size, settings.max_size)
        return cls(pool, size.within(settings.small_size), options.time_limit_s, settings.queue_wait_s, settings.time_limit_s)

    async def plan(self, topology: Topology, cluster: Cluster, entries: list[ProfileEntry], strategy: str | None,
                   options: PlanOptions) -> Plan:
        try:
            body = await self.pool.run(plan_json, topology, cluster, entries, strategy, options, small=self.small,
                                       limit_s=self.limit_s, queue_wait_s=self.queue_wait_s)
        except PlanningTimeout as timeout:
            raise caller_advice(timeout, self.limit_s, self.service_limit_s) from None
        return Plan.model_validate_json(body)

    async def evaluate(self, topology: Topology, cluster: Cluster, entries: list[ProfileEntry],
                       assignments: list[InstanceAssignment], options: PlanOptions,
                       shares: list[StreamShares] | None = None) -> Evaluation:
        try:
            body = await self.pool.run(evaluation_json, topology, cluster, entries, assignments, options, shares,
                                       small=self.small,
                                       limit_s=self.limit_s, queue_wait_s=self.queue_wait_s)
        except PlanningTimeout as timeout:
            raise caller_advice(timeout, self.limit_s, self.service_limit_s) from None
        return Evaluation.model_validate_json(body)


def stored_plan_fits(request: PlanRequest, stored: Plan) -> bool:
    """Whether the stored plan's placement can serve this request (else the service plans afresh).

    It fits when the topology name matches, the request asks for no other strategy, every
    component of the plan is in the request with the plan's instance count (where the request
    fixes one), every component of the request is in the plan except Storm system components
    (``__acker``, ...: a plan made before submission does not know them, the caller places
    them), every machine the plan uses is in the cluster with the machine type the plan was made
    for (``stored.machines`` records each machine's type; a machine id now on another, perhaps
    smaller, type would keep a placement sized for the old one), and, for a plan made with a
    stored profile set, the request names that set without a version or with the plan's version
    (the reused plan is evaluated with its own version, see ``reuse_profiles``), and it uses no more machines than
    the topology's worker budget (``topology.max_workers``) allows.
    """
    if stored.topology != request.topology.name:
        return False
    budget = request.topology.max_workers
    if budget is not None and len({a.machine for a in stored.assignments}) > budget:
        return False
    if stored.profiles is not None:
        asked = request.profiles
        if asked.name != stored.profiles.name or asked.version not in (None, stored.profiles.version):
            return False
    if request.strategy is not None and request.strategy != stored.strategy:
        return False
    components = {c.id: c for c in request.topology.components}
    if not set(stored.instances) <= set(components):
        return False
    if any(not c.is_system for cid, c in components.items() if cid not in stored.instances):
        return False
    for cid, count in stored.instances.items():
        fixed = components[cid].parallelism
        if fixed is not None and fixed != count:
            return False
    type_now = {m.id: m.type for m in request.cluster.machines}
    type_planned = {m.id: m.type for m in stored.machines}
    return all(a.machine in type_now and type_planned.get(a.machine, type_now[a.machine]) == type_now[a.machine]
               for a in stored.assignments)


def ordered_assignments(request: PlanRequest, assignments: list[Assignment]) -> list[InstanceAssignment]:
    """Instances in the request's component order, each component's by index (instance 0, 1, ...)."""
    order = {c.id: i for i, c in enumerate(request.topology.components)}
    placed = sorted(assignments, key=lambda a: (order[a.component], a.index))
    return [InstanceAssignment(component=a.component, machine=a.machine) for a in placed]
