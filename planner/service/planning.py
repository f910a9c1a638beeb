"""How the service runs the planner core: profiles resolved, a time limit enforced, plans reused.

The core is synchronous CPU work; it runs in a worker thread so the event loop keeps
answering other callers. The core itself stops at ``options.time_limit_s`` (set here
from the service's limit); a guard a little later answers even if it does not.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from anyio import CapacityLimiter

from planner.errors import PlanningTimeout
from planner.model import (
    Assignment,
    InstanceAssignment,
    Plan,
    PlanOptions,
    PlanRequest,
    ProfileEntry,
    ProfileRef,
    ProfileVersionRef,
)
from planner.service.errors import ServiceError, not_found
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

T = TypeVar("T")

GUARD_GRACE_S = 2.0
"""How long past the time limit the service waits for the core before answering without it."""


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


async def run_limited(func: Callable[..., T], *args: Any, limit_s: float | None, limiter: CapacityLimiter, queue_wait_s: float) -> T:
    """Run ``func(*args)`` in a worker thread once a planning slot is free; past ``limit_s`` answer a PlanningTimeout.

    The time limit counts computing only, not the wait for a slot; a wait longer than
    ``queue_wait_s`` is answered 503 (busy). A thread cannot be killed: one that overruns
    is left to finish on its own (the core is told the same limit, so it stops by itself),
    its result is dropped and its slot is given to the next caller.
    """
    try:
        with anyio.fail_after(queue_wait_s):
            await limiter.acquire()
    except TimeoutError:
        raise ServiceError(503, "busy", f"the planner is busy: no planning slot came free within {queue_wait_s:g} s; "
                           "try again later", headers={"Retry-After": "5"}) from None
    try:
        with anyio.fail_after(None if limit_s is None else limit_s + GUARD_GRACE_S):
            return await anyio.to_thread.run_sync(functools.partial(func, *args), abandon_on_cancel=True)
    except TimeoutError:
        log.warning("%s overran the time limit of %g s; its thread was left to finish", getattr(func, "__name__", func), limit_s)
        raise PlanningTimeout(
            f"planning stopped at the service's time limit of {limit_s:g} s: "
            "choose a faster strategy or a smaller input"
        ) from None
    finally:
        limiter.release()


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
    (the reused plan is evaluated with its own version, see ``reuse_profiles``).
    """
    if stored.topology != request.topology.name:
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
