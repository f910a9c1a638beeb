"""Recording a topology's events where the service learns of them, without ever failing the request that told it.

An event is what an operator reads later (``GET /v1/topologies/{name}/events``, ``hetsched placement``,
``/ui``); the request that carried the news (a bind, a repair, a heartbeat) matters more, so a database
fault while recording is one line in the log, never an error answer.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

from planner.events import EventKind
from planner.model import Plan
from planner.repair import RepairRequest
from planner.storage import Storage

log = logging.getLogger("hetsched.service")

PLANS_SEARCHED = 50
"""The newest stored plans of a topology searched for the one it ran before a loss."""
INSTANCES_NAMED = 6
"""Lost instances named in a sentence; more are counted."""


def record(storage: Storage, topology: str, kind: EventKind, sentence: str) -> None:
    """Record one event; a failure is logged in one line and swallowed."""
    try:
        storage.add_event(topology, kind, sentence)
    except Exception as exc:  # the request that brought the news must not fail for its history
        log.warning("event %s of topology %s not recorded: %s", kind, topology, exc)


def record_each(storage: Storage, events: Iterable[tuple[str, EventKind, str]]) -> None:
    """Record several (topology, kind, sentence) events, each on its own (one failing does not stop the rest)."""
    for topology, kind, sentence in events:
        record(storage, topology, kind, sentence)


def plan_before_loss(storage: Storage, request: RepairRequest) -> Plan | None:
    """The stored plan the topology ran by before the loss: its newest plan that puts every kept instance where it
    is kept and has the same instance counts; None when no stored plan does (a plan from elsewhere, or none)."""
    kept = {(k.component, k.index): k.machine for k in request.keep}
    counts = {c.id: c.parallelism for c in request.topology.components}
    for plan in storage.plans_of(request.topology.name, PLANS_SEARCHED):
        if plan.instances != counts:
            continue
        placed = {(a.component, a.index): a.machine for a in plan.assignments}
        if all(placed.get(instance) == machine for instance, machine in kept.items()):
            return plan
    return None


def loss_sentence(request: RepairRequest, before: Plan | None) -> str:
    """What the plugin's repair request says was lost: the instances, and the machines they ran on where known."""
    kept = {(k.component, k.index) for k in request.keep}
    lost = [(c.id, i) for c in request.topology.components for i in range(c.parallelism or 0) if (c.id, i) not in kept]
    named = ", ".join(f"{c} #{i}" for c, i in lost[:INSTANCES_NAMED]) + (
        f" and {len(lost) - INSTANCES_NAMED} more" if len(lost) > INSTANCES_NAMED else "")
    lost_text = f"{len(lost)} instance{'s' if len(lost) != 1 else ''} ({named})" if lost else "no instance"
    if before is None:
        return (f"Lost {lost_text}; the planner has no stored plan that placed the surviving instances where they run, "
                "so it does not know which machines went; the plugin asked for a repair.")
    live = {m.id for m in request.cluster.machines}
    where = {(a.component, a.index): a.machine for a in before.assignments}
    gone = sorted({where[i] for i in lost if i in where} - live) or sorted({a.machine for a in before.assignments} - live)
    machines = (f"machine{'s' if len(gone) > 1 else ''} {', '.join(gone)}" if gone
                else "machines the request's cluster still lists")
    return f"Lost {lost_text} with {machines} (plan {before.id} placed them there); the plugin asked for a repair."


def repair_sentence(plan: Plan) -> str:
    """The repair plan the service answered: what it kept and placed, and the rate it predicts."""
    return (f"Repaired by plan {plan.id}: kept {plan.stats.get('kept', '?')} instances where they run, placed "
            f"{plan.stats.get('placed', '?')}; predicted {plan.input_rate:.2f} tuples/s"
            f"{f' (bottleneck {plan.bottleneck})' if plan.bottleneck else ''}.")


def binding_sentence(plan_id: str, reason: str) -> str:
    return f"Plan {plan_id} bound: {reason.rstrip('.')}." if reason else f"Plan {plan_id} bound (no reason given)."
