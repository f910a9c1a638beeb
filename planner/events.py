"""What happened to each topology and when: the events an operator reads beside its placement.

The service records an event where it learns of one (``planner.service.history``): a plan bound, a
repair asked for after a loss, a tenant admitted, refused, evicted or released, a priority changed.
Each is a time (UTC), a kind from a small fixed set and one sentence, kept per topology in the
service's database (:class:`planner.storage.Storage`), the newest :data:`KEPT_PER_TOPOLOGY` of each.
The same model answers ``GET /v1/topologies/{name}/events`` and ``hetsched placement --json``.

What does not reach the service is not here: the Nimbus plugin applies a plan's stored contingency for
a lost machine without calling the service, so such a loss shows in the topology's scheduler status,
not in its events (unless the contingency did not apply and the plugin asked for a repair).
"""
from __future__ import annotations

import time
from typing import Literal, get_args

from pydantic import BaseModel, Field

EventKind = Literal["bound", "unbound", "re-planned", "repaired", "machine-lost", "machine-returned", "admitted",
                    "refused", "evicted", "released", "priority-changed"]
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
"""How the Nimbus plugin starts the reason of every plan it binds (HetschedScheduler.rebalanceLater)."""
RETURN_REASON = PLUGIN_REASON + "machine joined"
"""A plan the plugin binds after a supervisor joined (Upgrades.java): a machine returned or was added."""
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


def binding_kind(reason: str) -> EventKind:
    """The kind of a bind, from the reason its caller gave: a return, a re-plan, or a plain bind."""
    if reason.startswith(RETURN_REASON):
        return "machine-returned"
    if reason.startswith(REPLAN_REASON):
        return "re-planned"
    return "bound"
