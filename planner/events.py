"""What happened to each topology and when: the events an operator reads beside its placement.

The service records an event where it learns of one (``planner.service.history``): a plan bound, a
repair asked for after a loss, a contingency the Nimbus plugin applied for a lost machine (it tells the
service afterwards by binding the plan, with a reason starting :data:`CONTINGENCY_REASON`), a tenant
admitted, refused, evicted or released, a priority changed. Each is a time (UTC), a kind from the fixed
set :data:`EventKind` (where each comes from: docs/reference/api.md, "A topology's events") and one
sentence, kept per topology in the service's database (:class:`planner.storage.Storage`), the newest
:data:`KEPT_PER_TOPOLOGY` of each. The same model answers ``GET /v1/topologies/{name}/events`` and
``hetsched placement --json``.

What does not reach the service is not here: a bind the plugin could not make (the planner down when it
applied a contingency) is one line in Nimbus's log, and the loss shows only in the topology's scheduler status.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Literal, get_args

from pydantic import BaseModel, Field

EventKind = Literal["bound", "unbound", "re-planned", "repaired", "machine-lost", "contingency-applied",
                    "machine-returned", "admitted", "refused", "evicted", "released", "priority-changed"]
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)

KEPT_PER_TOPOLOGY = 200
"""Events kept per topology, the newest: weeks of binds and losses, while a topology refused on every
heartbeat cannot grow the database without bound."""
DEFAULT_LIMIT = 20
"""Events answered when the caller does not say how many."""
REPEAT_QUIET_S = 300.0
"""An event equal to one recorded for the topology within this many seconds (same kind and sentence) is not
recorded again: the plugin asks again every round, and the log should say so once, not every 10 s."""

PLUGIN_REASON = "hetsched plugin, "
"""How the Nimbus plugin starts the reason of every plan it binds (HetschedScheduler.PLUGIN_REASON)."""
RETURN_REASON = PLUGIN_REASON + "machine joined"
"""A plan the plugin binds after a supervisor joined (Upgrades.java): a machine returned or was added."""
CONTINGENCY_REASON = PLUGIN_REASON + "contingency for "
"""The plan whose stored contingency for a lost machine the plugin applied, bound afterwards to tell the service
(ContingencyPlacement.reason): ``hetsched plugin, contingency for <machine> lost: kept 5 executors where they run,
moved 3, predicted 45.12 tuples/s``. Recorded as ``machine-lost`` and ``contingency-applied``, not ``bound``."""
CONTINGENCY_LOST = " lost"
"""What follows the lost machine's name in a :data:`CONTINGENCY_REASON` (ContingencyPlacement.REASON_LOST)."""
REPLAN_REASON = "hetsched replan"
"""A plan ``hetsched replan`` binds."""


class TopologyEvent(BaseModel):
    """One thing that happened to a topology, as the service learned of it."""

    at: str = Field(description="When the service learned of it, ISO 8601 UTC (2026-01-02T03:04:05.678Z).")
    kind: EventKind = Field(description="What happened: " + ", ".join(EVENT_KINDS) + ".")
    sentence: str = Field(description="What happened, in one sentence naming the plans, machines and rates.")


class TopologyEvents(BaseModel):
    """``GET /v1/topologies/{name}/events``: the topology's events, the newest first."""

    topology: str
    events: list[TopologyEvent]


def iso_utc(epoch_s: float) -> str:
    """An event's time as the API answers it: ISO 8601 UTC to the millisecond."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_s)) + f".{int(epoch_s % 1 * 1000):03d}Z"


def contingency_machine(reason: str, machines: Iterable[str] = ()) -> str | None:
    """The lost machine a plugin's :data:`CONTINGENCY_REASON` names; None for any other reason.

    ``machines`` are the machines the bound plan has contingencies for: the one the reason names is found among them
    whole, even where its name holds " lost"; otherwise the name runs up to the first ``" lost:"`` (or a final
    ``" lost"``).
    """
    if not reason.startswith(CONTINGENCY_REASON):
        return None
    rest = reason[len(CONTINGENCY_REASON):]
    for machine in sorted(machines, key=len, reverse=True):
        after = rest[len(machine):] if rest.startswith(machine) else None
        if after is not None and after.startswith(CONTINGENCY_LOST) and after[len(CONTINGENCY_LOST):][:1] in ("", ":"):
            return machine
    head, found, _ = rest.partition(CONTINGENCY_LOST + ":")
    if not found:
        head = rest[:-len(CONTINGENCY_LOST)] if rest.endswith(CONTINGENCY_LOST) else ""
    return head or None


def binding_kind(reason: str) -> EventKind:
    """The kind of a bind, from the reason its caller gave: a return, a contingency applied (recorded with the loss
    before it, ``planner.service.history.binding_events``), a re-plan, or a plain bind."""
    if reason.startswith(RETURN_REASON):
        return "machine-returned"
    if contingency_machine(reason) is not None:
        return "contingency-applied"
    if reason.startswith(REPLAN_REASON):
        return "re-planned"
    return "bound"
