"""Recording a topology's events where the service learns of them, without ever failing the request that told it.

An event is what an operator reads later (``GET /v1/topologies/{name}/events``, ``hetsched placement``,
``/ui``); the request that carried the news (a bind, a repair, a heartbeat) matters more, so a database
fault while recording is one line in the log, never an error answer. A bind's events come from its reason
(:func:`binding_events`): the Nimbus plugin tells the service of a contingency it applied for a lost machine by
binding that plan, which is recorded as the loss and the contingency.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

from planner.events import CONTINGENCY_LOST, EventKind, binding_kind, contingency_machine
from planner.model import Contingency, Plan
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
    named = _named(lost)
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


def binding_events(storage: Storage, topology: str, plan_id: str, reason: str) -> list[tuple[str, EventKind, str]]:
    """The events a bind records, oldest first: one of the kind its reason says (``planner.events.binding_kind``); a
    plan the plugin binds after applying its contingency for a lost machine is the loss and the contingency, told
    from the stored plan where it can be read. Never raises: what cannot be read is left out of the sentences."""
    kind = binding_kind(reason)
    if kind != "contingency-applied":
        return [(topology, kind, binding_sentence(plan_id, reason))]
    try:
        plan = storage.get_plan(plan_id)
    except Exception as exc:  # the bind itself went through; the events say less
        log.warning("plan %s bound to topology %s cannot be read for its events: %s", plan_id, topology, exc)
        plan = None
    contingencies = (plan.contingencies or []) if plan is not None else []
    machine = contingency_machine(reason, [c.machine for c in contingencies]) or "?"
    contingency = next((c for c in contingencies if c.machine == machine), None)
    return [(topology, "machine-lost", contingency_loss_sentence(plan_id, machine, plan)),
            (topology, "contingency-applied", contingency_sentence(plan_id, machine, plan, contingency, reason))]


def _named(instances: list[tuple[str, int]]) -> str:
    return ", ".join(f"{c} #{i}" for c, i in instances[:INSTANCES_NAMED]) + (
        f" and {len(instances) - INSTANCES_NAMED} more" if len(instances) > INSTANCES_NAMED else "")


def contingency_loss_sentence(plan_id: str, machine: str, plan: Plan | None) -> str:
    """The machine the plugin lost, with the instances the bound plan placed there where it is stored."""
    lost = [(a.component, a.index) for a in plan.assignments if a.machine == machine] if plan is not None else []
    held = (f" with {len(lost)} instance{'s' if len(lost) != 1 else ''} of plan {plan_id} ({_named(lost)})" if lost
            else "")
    return f"Lost machine {machine}{held}; the plugin applied the contingency the plan stores for it, without a repair."


def contingency_sentence(plan_id: str, machine: str, plan: Plan | None, contingency: Contingency | None,
                         reason: str) -> str:
    """The contingency the plugin applied: its moves and predicted rate as stored, and the plugin's own figures."""
    _, found, figures = reason.partition(f"{machine}{CONTINGENCY_LOST}: ")
    plugin = f"; the plugin: {figures.rstrip('.')}" if found and figures else ""
    if contingency is None:
        why = "is not stored" if plan is None else "stores no contingency for it"
        return f"Applied plan {plan_id}'s contingency for machine {machine} (plan {plan_id} {why}){plugin}."
    moves = [f"{m.component} #{m.index} to {m.machine}" for m in contingency.moves]
    moved = ", ".join(moves[:INSTANCES_NAMED]) + (
        f" and {len(moves) - INSTANCES_NAMED} more" if len(moves) > INSTANCES_NAMED else "")
    return (f"Applied plan {plan_id}'s contingency for machine {machine}: moved {len(moves)} "
            f"instance{'s' if len(moves) != 1 else ''} ({moved or 'none'}), predicted {contingency.input_rate:.2f} "
            f"tuples/s{f' (bottleneck {contingency.bottleneck})' if contingency.bottleneck else ''}{plugin}.")
