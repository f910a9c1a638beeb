"""What the /ui page shows: each topology's rates, contingencies and events, stored plans drawn as machines,
profile sets with their fit, and the live cluster.

Pure functions turn plans, profile sets and Nimbus' answers into the views the page renders; the
reading (the database, Nimbus) sits in the few functions at the end. The database is read through
its own read-only connection, so showing plans never writes to it (a plan's ``used_at`` stays as
the planner left it: looking at a plan is not using it, for retention).
"""
from __future__ import annotations

import importlib
import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from planner.events import TopologyEvent, contingency_machine, iso_utc
from planner.model import Contingency, ContingencyMove, Plan, ProfileSet
from planner.storage import StorageError

RECENT_PLANS = 20
"""Plans shown, newest first: enough to find the one just made, small enough to redraw every few seconds."""
RECENT_TOPOLOGIES = 20
"""Topologies shown: the running ones first, then those with the newest events or bindings."""
EVENTS_SHOWN = 8
"""Events shown per topology, newest first; the rest are at GET /v1/topologies/{name}/events."""
NIMBUS_TIMEOUT_MS = 3_000
"""How long one Nimbus call may take before the page says Nimbus cannot be read (it polls again soon)."""


class Executor(BaseModel):
    """One instance of a component, where a plan (or Nimbus) puts it."""

    component: str
    index: int | None = Field(default=None, description="The plan's instance index; None for a live executor.")
    tasks: str | None = Field(default=None, description="A live executor's task range, e.g. '3-4'.")
    cpu: float | None = Field(default=None, description="Predicted CPU percent of the machine this instance uses.")
    input_rate: float | None = Field(default=None, description="Tuples/s the instance receives at the plan's R.")


class MachineView(BaseModel):
    id: str
    type: str
    utilization: float | None = Field(default=None, description="Predicted CPU percent of the whole machine (100 = all of it).")
    capacity: float | None = Field(default=None, description="CPU percent of one core the machine may use (live: supervisor.cpu.capacity).")
    executors: list[Executor]


class MachineTypeGroup(BaseModel):
    machine_type: str
    machines: list[MachineView]


class PlanView(BaseModel):
    id: str
    topology: str
    strategy: str
    created_at: float = Field(description="When it was stored, Unix seconds.")
    input_rate: float = Field(description="R, tuples/s.")
    weighted_utilization: float
    bottleneck: str | None
    profiles: str | None = Field(default=None, description="The stored profile set and version it was made with ('micro v2'); None: inline profiles.")
    feasible: bool
    instances: dict[str, int]
    machine_types: list[MachineTypeGroup]


class ProfileRow(BaseModel):
    profile: str
    machine_type: str
    e: float
    met: float
    r2: float | None
    samples: int | None
    rate_range: tuple[float, float] | None


class ProfileSetView(BaseModel):
    name: str
    version: int | None = None
    worst_r2: float | None = Field(description="The lowest R² over its entries that have one: the set's weakest fit.")
    entries: list[ProfileRow]


class SupervisorView(BaseModel):
    host: str
    machine_id: str | None
    machine_type: str | None
    slots: int
    used_slots: int
    capacity: float | None = Field(description="supervisor.cpu.capacity, percent of one core.")


class TopologyView(BaseModel):
    id: str
    name: str
    status: str
    workers: int
    sched_status: str
    machines: list[MachineView]
    error: str | None = Field(default=None, description="Why its executors could not be read, if they could not.")
    measured_rate: float | None = Field(default=None, description=(
        "R measured, tuples/s: its spouts' emits over Nimbus's last 10 minutes (observe.counts.recent_input_rate); "
        "None before a spout reports them."))
    measured_window_s: float | None = Field(default=None, description="The seconds measured_rate spans (600, or less "
                                            "where a spout started less than 10 minutes ago).")


class LiveCluster(BaseModel):
    nimbus: str | None = Field(description="The --nimbus address the service was started with; None: not asked to read one.")
    readable: bool
    problem: str | None = Field(default=None, description="Why the cluster is not shown, one sentence.")
    leader: str | None = None
    supervisors: list[SupervisorView] = Field(default_factory=list)
    topologies: list[TopologyView] = Field(default_factory=list)


class RunningContingency(BaseModel):
    """The placement a topology runs in once the Nimbus plugin applied its bound plan's contingency for a lost machine
    (the plugin tells the service by binding that plan again, with a reason naming the machine)."""

    machine: str = Field(description="The machine lost.")
    lost_at: str | None = Field(default=None, description=(
        "When the service learned of it: the plugin binds the plan right after applying the contingency, ISO 8601 UTC."))
    plan_id: str = Field(description="The plan whose contingency runs (the plan bound, from before the loss).")
    input_rate: float | None = Field(default=None, description=(
        "R the contingency predicts, tuples/s; None where the plan stores no contingency for the machine."))
    bottleneck: str | None = Field(default=None, description="What limits R after the loss, as the contingency says.")
    moved: int | None = Field(default=None, description="Executors the contingency moved, as the plan stores it.")
    moves: list[ContingencyMove] = Field(default_factory=list, description="Every instance it moved, and where.")


class PlacementNow(BaseModel):
    """What a topology runs by as the service knows it: the plan bound, or the contingency of it the plugin applied."""

    predicted_rate: float | None = Field(default=None, description="R predicted for what runs, tuples/s.")
    contingencies: list[Contingency] | None = Field(default=None, description=(
        "The contingencies that answer the next loss of what runs; None where none is known."))
    contingencies_note: str | None = Field(default=None, description=(
        "One sentence: why the plan's contingencies are not shown, or that the plugin does not apply those shown; "
        "None otherwise."))
    running_contingency: RunningContingency | None = None


def placement_now(plan: Plan | None, plan_id: str | None, reason: str | None, bound_at: str | None) -> PlacementNow:
    """What runs, from the plan bound to a topology and the bind's ``reason`` and time. Pure.

    A bind whose reason is the plugin's ``contingency for <machine> lost`` (planner.events.contingency_machine) means
    the topology runs that plan's contingency for the machine, not the plan's placement: R is the contingency's, and
    the plan's contingencies, made for the placement before the loss, are not the current ones (the plugin applies
    none of them; the next loss is repaired by the planner). Any other bind, or none, is the plan itself, a repair the
    plugin placed and bound (``hetsched plugin, repair placed ...``) included: it runs as its plan says, and its
    contingencies are the ones the plugin applies at the next loss.
    """
    stored = (plan.contingencies or []) if plan is not None else []
    machine = contingency_machine(reason, [c.machine for c in stored]) if reason and plan_id else None
    if machine is None or plan_id is None:
        return PlacementNow(predicted_rate=plan.input_rate if plan else None,
                            contingencies=plan.contingencies if plan else None, contingencies_note=None)
    applied = next((c for c in stored if c.machine == machine), None)
    running = RunningContingency(
        machine=machine, lost_at=bound_at, plan_id=plan_id, input_rate=applied.input_rate if applied else None,
        bottleneck=applied.bottleneck if applied else None, moved=applied.moved if applied else None,
        moves=applied.moves if applied else [])
    note = (f"Plan {plan_id}'s contingencies are not shown: they are for its placement before {machine} was lost, "
            "which no longer runs, so the plugin applies none of them; the next loss is repaired by the planner."
            if stored else
            f"No contingency is known for what runs: it is plan {plan_id}'s contingency for {machine}, and the next "
            "loss is repaired by the planner.")
    return PlacementNow(predicted_rate=running.input_rate, contingencies=None, contingencies_note=note,
                        running_contingency=running)


class TopologyStatus(BaseModel):
    """One topology as an operator follows it: the rate measured and predicted now, what a loss would do, what happened."""

    name: str
    plan_id: str | None = Field(default=None, description=(
        "The plan it is placed by, as the service knows it: the one bound to it, else its ledger registration's; "
        "None for a topology placed by its conf's plan only."))
    plan_source: str | None = Field(default=None, description="bound or ledger: where plan_id comes from.")
    bound_at: str | None = Field(default=None, description="When plan_id was bound, ISO 8601 UTC.")
    predicted_rate: float | None = Field(default=None, description=(
        "R predicted for what runs, tuples/s: the plan's, or the contingency's where running_contingency says one runs."))
    measured_rate: float | None = Field(default=None, description="R measured on the live cluster (with --nimbus), "
                                        "over Nimbus's last 10 minutes.")
    measured_window_s: float | None = None
    running: bool = Field(description="Whether the live cluster (with --nimbus) runs it now.")
    contingencies: list[Contingency] | None = Field(default=None, description=(
        "The plan's contingency per machine (options.survive_loss): where each machine's loss moves which instances. "
        "None while a contingency runs (running_contingency): the plan's are for its placement before the loss."))
    contingencies_note: str | None = Field(default=None, description=(
        "One sentence: why the plan's contingencies are not shown (a contingency runs), or that the plugin does not "
        "apply those shown (a repair plan's); None otherwise."))
    running_contingency: RunningContingency | None = Field(default=None, description=(
        "The contingency the plugin applied for a lost machine, where what runs is that and not the plan's placement: "
        "the machine, when, its predicted R and its moves."))
    events: list[TopologyEvent] = Field(description="Its newest events, the newest first.")


class Overview(BaseModel):
    topologies: list[TopologyStatus] = Field(default_factory=list)
    plans: list[PlanView]
    plans_stored: int
    profile_sets: list[ProfileSetView]
    cluster: LiveCluster


# --- pure views ----------------------------------------------------------------------------------


def plan_view(plan: Plan, created_at: float) -> PlanView:
    """The plan's instances on its machines, machines grouped by machine type in the plan's order."""
    placed: dict[str, list[Executor]] = {m.id: [] for m in plan.machines}
    for a in sorted(plan.assignments, key=lambda a: (a.component, a.index)):
        placed.setdefault(a.machine, []).append(
            Executor(component=a.component, index=a.index, cpu=a.cpu, input_rate=a.input_rate))
    groups: dict[str, list[MachineView]] = {}
    for m in plan.machines:
        groups.setdefault(m.type, []).append(
            MachineView(id=m.id, type=m.type, utilization=m.utilization, executors=placed[m.id]))
    return PlanView(
        id=plan.id or "", topology=plan.topology, strategy=plan.strategy, created_at=created_at,
        input_rate=plan.input_rate, weighted_utilization=plan.weighted_utilization, bottleneck=plan.bottleneck,
        profiles=f"{plan.profiles.name} v{plan.profiles.version}" if plan.profiles else None,
        feasible=bool(plan.stats.get("feasible", plan.input_rate > 0)), instances=plan.instances,
        machine_types=[MachineTypeGroup(machine_type=t, machines=ms) for t, ms in groups.items()],
    )


def profile_set_view(profile_set: ProfileSet) -> ProfileSetView:
    fits = [e.r2 for e in profile_set.entries if e.r2 is not None]
    rows = [ProfileRow(profile=e.profile, machine_type=e.machine_type, e=e.e, met=e.met, r2=e.r2,
                       samples=e.samples, rate_range=e.rate_range)
            for e in sorted(profile_set.entries, key=lambda e: (e.profile, e.machine_type))]
    return ProfileSetView(name=profile_set.name, version=profile_set.version,
                          worst_r2=min(fits) if fits else None, entries=rows)


@dataclass(frozen=True)
class KnownMachine:
    """A machine a supervisor host stands for, where the cluster's spec says so."""

    id: str
    type: str


def supervisor_views(supervisors: Iterable[Any], machines: dict[str, KnownMachine]) -> list[SupervisorView]:
    """Nimbus' supervisors (``observe.nimbus.SupervisorSummary``) with the machine each host is.

    The machine comes from the supervisor's ``supervisor.scheduler.meta`` where the Thrift bindings
    carry it, else from ``machines`` (host -> machine of the local cluster's spec).
    """
    views = []
    for s in sorted(supervisors, key=lambda s: s.host):
        meta = s.scheduler_meta or {}
        known = machines.get(s.host)
        views.append(SupervisorView(
            host=s.host, slots=s.slots, used_slots=s.used_slots, capacity=s.cpu_capacity,
            machine_id=meta.get("machine-id") or (known.id if known else None),
            machine_type=meta.get("machine-type") or (known.type if known else None),
        ))
    return views


def live_placement(executors: Iterable[Any], supervisors: list[SupervisorView]) -> list[MachineView]:
    """Where each executor (``observe.counts.ExecutorCounts``) runs, as machines (host -> machine) in host order."""
    by_host = {s.host: s for s in supervisors}
    placed: dict[str, list[Executor]] = {}
    for e in sorted(executors, key=lambda e: (e.component, e.task_start)):
        tasks = str(e.task_start) if e.task_start == e.task_end else f"{e.task_start}-{e.task_end}"
        placed.setdefault(e.host, []).append(Executor(component=e.component, tasks=tasks))
    views = []
    for host in sorted(placed):
        s = by_host.get(host)
        views.append(MachineView(
            id=(s.machine_id if s and s.machine_id else host) if host else "not placed",
            type=(s.machine_type if s and s.machine_type else "unknown type") if host else "",
            capacity=s.capacity if s else None, executors=placed[host]))
    return views


# --- reading ---------------------------------------------------------------------------------------


class OverviewError(StorageError):
    """The database cannot be read for the page; the message names it (the service answers 503, as for any database fault)."""


def recent_plans(db_path: Path, limit: int = RECENT_PLANS) -> tuple[list[PlanView], int]:
    """The ``limit`` newest stored plans and how many are stored, read without writing."""
    try:
        with closing(_read_only(db_path)) as db:
            total = db.execute("SELECT COUNT(*) FROM plans").fetchone()[0]
            rows = db.execute("SELECT created_at, body FROM plans ORDER BY created_at DESC, id LIMIT ?",
                              (limit,)).fetchall()
    except sqlite3.Error as exc:
        raise OverviewError(f"cannot read the plans in {db_path}: {exc}") from exc
    return [plan_view(Plan.model_validate_json(body), created_at) for created_at, body in rows], total


def _read_only(db_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)


def topology_statuses(db_path: Path, live: LiveCluster, limit: int = RECENT_TOPOLOGIES,
                      events_shown: int = EVENTS_SHOWN) -> list[TopologyStatus]:
    """Each topology the service or the live cluster knows, with its plan, rates, contingencies and events (read only).

    The running ones first, by name; then those with the newest event or binding.
    """
    running = {t.name: t for t in live.topologies}
    try:
        with closing(_read_only(db_path)) as db:
            activity: dict[str, float] = {}
            for name, at in db.execute("SELECT topology, MAX(at) FROM events GROUP BY topology").fetchall():
                activity[name] = at
            bindings = {name: (plan_id, reason, at) for name, plan_id, reason, at in
                        db.execute("SELECT topology, plan_id, reason, created_at FROM bindings").fetchall()}
            for name, (_, _, at) in bindings.items():
                activity[name] = max(at, activity.get(name, at))
            registered = {name: at for name, at in db.execute("SELECT topology, heartbeat_at FROM tenants").fetchall()}
            for name, at in registered.items():
                activity.setdefault(name, at)
            names = sorted(running) + sorted((n for n in activity if n not in running), key=lambda n: -activity[n])
            statuses = [_status(db, name, running.get(name), bindings.get(name), name in registered, events_shown)
                        for name in names[:limit]]
    except (sqlite3.Error, ValueError) as exc:
        raise OverviewError(f"cannot read the topologies in {db_path}: {exc}") from exc
    return statuses


def _status(db: sqlite3.Connection, name: str, live: TopologyView | None, binding: tuple[str, str, float] | None,
            registered: bool, events_shown: int) -> TopologyStatus:
    plan_id, source, reason, bound_at = ((binding[0], "bound", binding[1], iso_utc(binding[2])) if binding
                                         else (None, None, None, None))
    if plan_id is None and registered:
        row = db.execute("SELECT body FROM tenants WHERE topology = ?", (name,)).fetchone()
        plan_id = json.loads(row[0]).get("plan_id") if row else None
        source = "ledger" if plan_id else None
    plan = None
    if plan_id is not None:
        row = db.execute("SELECT body FROM plans WHERE id = ?", (plan_id,)).fetchone()
        plan = Plan.model_validate_json(row[0]) if row else None
    events = [TopologyEvent(at=iso_utc(at), kind=kind, sentence=sentence) for at, kind, sentence in db.execute(
        "SELECT at, kind, sentence FROM events WHERE topology = ? ORDER BY seq DESC LIMIT ?", (name, events_shown))]
    now = placement_now(plan, plan_id, reason, bound_at)
    return TopologyStatus(
        name=name, plan_id=plan_id, plan_source=source, bound_at=bound_at, predicted_rate=now.predicted_rate,
        measured_rate=live.measured_rate if live else None, measured_window_s=live.measured_window_s if live else None,
        running=live is not None, contingencies=now.contingencies, contingencies_note=now.contingencies_note,
        running_contingency=now.running_contingency, events=events)


def local_machines(address: Any) -> dict[str, KnownMachine]:
    """Host -> machine of the local cluster's spec, when ``address`` is that cluster's Nimbus; else empty.

    Storm's Thrift bindings here do not carry ``supervisor.scheduler.meta``, so a supervisor's
    machine type is known only from the spec of the cluster that started it.
    """
    try:  # imported by name: the planner does not depend on the cluster package (a core install lacks it)
        local = importlib.import_module("cluster.local")
        spec = importlib.import_module("cluster.spec")
        layout = local.LocalCluster(spec.load_spec()).layout
    except Exception:  # no cluster package, no spec, a bad port base: the page shows hosts only
        return {}
    if (layout.nimbus_host, layout.nimbus_port) != (address.host, address.port):
        return {}
    return {m.host: KnownMachine(m.id, m.type) for m in layout.machines}


def read_live_cluster(nimbus: str | None) -> LiveCluster:
    """Supervisors, topologies and executor places from the Nimbus at ``nimbus`` (blocking; call in a thread)."""
    if nimbus is None:
        return LiveCluster(nimbus=None, readable=False,
                           problem="the service was started without --nimbus, so no live cluster is read")
    try:
        from observe.counts import recent_input_rate
        from observe.nimbus import Nimbus, NimbusError, parse_address
    except ImportError as exc:
        return LiveCluster(nimbus=nimbus, readable=False,
                           problem=f"Nimbus cannot be read: the 'topologies' extra (streamparse) is not installed ({exc.name} is missing)")
    try:
        address = parse_address(nimbus)
        with Nimbus(address, NIMBUS_TIMEOUT_MS, retries=0) as client:
            summary = client.summary()
            supervisors = supervisor_views(summary.supervisors, local_machines(address))
            topologies = []
            for t in sorted(summary.topologies, key=lambda t: t.name):
                machines: list[MachineView] = []
                error = None
                recent = None
                try:
                    counts = client.counts(t.id)
                    machines = live_placement(counts.executors.values(), supervisors)
                    recent = recent_input_rate(counts)
                except NimbusError as exc:
                    error = str(exc)
                topologies.append(TopologyView(id=t.id, name=t.name, status=t.status, workers=t.workers,
                                               sched_status=t.scheduler_status, machines=machines, error=error,
                                               measured_rate=recent.input_rate if recent else None,
                                               measured_window_s=recent.window_s if recent else None))
    except NimbusError as exc:
        return LiveCluster(nimbus=nimbus, readable=False, problem=str(exc))
    return LiveCluster(nimbus=nimbus, readable=True, leader=summary.leader, supervisors=supervisors,
                       topologies=topologies)
