"""``hetsched supervisors|placement``: what an operator checks on a running cluster, from Nimbus (and the planner)."""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from hetsched.errors import fail
from hetsched.inventory import (
    Declaration,
    ExecutorPlace,
    MachineLoad,
    MetaKeys,
    SupervisorRow,
    declaration_of,
    declared_cluster,
    declarations_without_supervisor,
    executor_places,
    machine_loads,
    supervisor_rows,
    user_parallelism,
)
from hetsched.options import TokenOption
from observe.counts import RecentRate, parse_topology_info, recent_input_rate
from hetsched.submit_checks import read_storm_yaml
from observe.nimbus import ClusterSummary, NimbusAddress, connect
from planner.client import TOKEN_ENV, URL_ENV
from planner.events import TopologyEvent
from planner.model import Contingency, ContingencyMove, StreamShares
from planner.stream_shares import CONF_KEY as SHARES_KEY, task_weights
from planner.service.overview import RunningContingency, placement_now
from topologies import conf as keys
from topologies.errors import TopologyError
from topologies.locate import NIMBUS_ENV, nimbus_address

console = Console()

NimbusOption = typer.Option(None, "--nimbus", help=f"Nimbus host:port (default: ${NIMBUS_ENV}, else the local cluster's Nimbus).")
StormYamlOption = typer.Option(None, "--storm-yaml", help="A supervisor's storm.yaml, to read its supervisor.scheduler.meta (Nimbus does not report it); repeatable. The local cluster's are read without it.")
JsonOption = typer.Option(False, "--json", help="Print JSON instead of tables.")
LEADER_TIMEOUT_S = 10.0
EVENTS_SHOWN = 5


def _local_cluster(address: NimbusAddress) -> Any:
    """The running local cluster whose Nimbus is ``address``, else None."""
    try:
        from cluster import running_cluster

        local = running_cluster()
    except Exception:  # no local cluster package, spec or home: nothing to read
        return None
    if local is None or (local.layout.nimbus_host, local.layout.nimbus_port) != (address.host, address.port):
        return None
    return local


def _compose_cluster(address: NimbusAddress) -> Any:
    """The compose cluster started here (its home ``$HETSCHED_CLUSTER_HOME``, else the default) whose Nimbus is
    ``address``, else None."""
    try:
        from cluster.compose_cluster import compose_cluster_at
    except ImportError:
        return None
    return compose_cluster_at(address, os.environ.get("HETSCHED_CLUSTER_HOME") or None)


def planner_of(address: NimbusAddress, topology_conf: dict[str, Any], option: str | None) -> tuple[str | None, str | None]:
    """Where this machine reaches a running topology's planner, and its token (None: ``$HETSCHED_PLANNER_TOKEN``).

    ``--planner`` first. Else, where Nimbus is a compose cluster's started here (its home:
    ``$HETSCHED_CLUSTER_HOME``, else the default), the planner it publishes on 127.0.0.1 and the token in its
    home: the topology's ``hetsched.planner.url`` there is ``http://planner:8765``, a service name only the
    cluster's own network resolves. Else the topology's ``hetsched.planner.url``.
    """
    if option:
        return option, None
    compose = _compose_cluster(address)
    if compose is not None:
        try:
            token = os.environ.get(TOKEN_ENV) or compose.planner_token()
        except Exception:  # no token file: the planner will say 401
            token = None
        return compose.planner_url, token
    return topology_conf.get(keys.PLANNER_URL), None


def read_declarations(files: list[Path], local: Any, address: NimbusAddress | None = None) -> list[Declaration]:
    """Supervisors' declarations from the given storm.yaml files, and from the local cluster's own, else (where
    ``address`` is a compose cluster's Nimbus started here) from the files its compose file mounts."""
    paths = list(files)
    if local is not None:
        paths += [local.layout.conf_file(m.id) for m in local.layout.machines if local.layout.conf_file(m.id).is_file()]
    elif address is not None and not files:
        compose = _compose_cluster(address)
        if compose is not None:
            paths += compose.supervisor_conf_files()
    found = []
    for path in paths:
        conf = read_storm_yaml(path)
        try:
            found.append(declaration_of(conf, str(path)))
        except ValueError as exc:
            raise TopologyError(str(exc)) from None
    return found


def _cluster_state(nimbus: Optional[str]) -> tuple[NimbusAddress, ClusterSummary, dict[str, Any], Any]:
    address = nimbus_address(nimbus)
    with connect(address, LEADER_TIMEOUT_S) as client:
        return address, client.summary(), client.nimbus_conf(), _local_cluster(address)


# --- hetsched supervisors --------------------------------------------------------------------------------


def supervisors(
    nimbus: Optional[str] = NimbusOption,
    storm_yaml: Optional[List[Path]] = StormYamlOption,
    as_json: bool = JsonOption,
) -> None:
    """Each supervisor with its declared machine (id, type, cores), its slots, and what is wrong with its declaration."""
    try:
        address, summary, nimbus_conf, local = _cluster_state(nimbus)
        declarations = read_declarations(storm_yaml or [], local, address)
    except TopologyError as exc:
        raise fail(str(exc)) from None
    rows = supervisor_rows(summary, declarations, MetaKeys.from_nimbus_conf(nimbus_conf))
    strays = declarations_without_supervisor(summary, declarations)
    if as_json:
        print(json.dumps({"nimbus": str(address), "supervisors": [r.as_json() for r in rows],
                          "files_without_supervisor": [d.source for d in strays]}, indent=2))
        return
    print_supervisors(console, address, rows)
    for d in strays:
        console.print(f"{d.source}: Nimbus lists no supervisor on {d.host} (not running, or another "
                      "storm.local.hostname)", highlight=False, markup=False, soft_wrap=True)


def print_supervisors(out: Console, address: NimbusAddress, rows: list[SupervisorRow]) -> None:
    if not rows:
        out.print(f"Nimbus {address} lists no supervisors", highlight=False)
        return
    table = Table(title=f"supervisors of Nimbus {address}", title_justify="left")
    for column in ("host", "machine id", "type", "cores", "cpu capacity", "slots used", "free"):
        table.add_column(column, justify="left" if column in ("host", "machine id", "type") else "right")
    for r in rows:
        table.add_row(r.host, r.machine_id or "?", r.machine_type or "?", _number(r.cores), _number(r.cpu_capacity_cores),
                      f"{r.used_slots}/{r.slots}", str(r.free_slots))
    out.print(table)
    out.print("cores: declared in supervisor.scheduler.meta (the plugin's); cpu capacity: supervisor.cpu.capacity / 100 "
              "(only Storm's ResourceAwareScheduler reads it)", highlight=False)
    for r in rows:
        for fault in r.faults:
            out.print(f"  {r.host}: {fault}", highlight=False, markup=False, soft_wrap=True)


# --- hetsched placement ----------------------------------------------------------------------------------


def placement(
    name: str = typer.Argument(..., help="Name the topology runs under."),
    nimbus: Optional[str] = NimbusOption,
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planner for the predicted load (default: a compose cluster's own, published here, else the topology's hetsched.planner.url; none: no prediction)."),
    storm_yaml: Optional[List[Path]] = StormYamlOption,
    measure: float = typer.Option(5.0, "--measure", min=0.0, help="Seconds to measure each machine's CPU, where the cluster can (the local cluster); 0: not."),
    events: int = typer.Option(EVENTS_SHOWN, "--events", min=0, help="The topology's newest events to show (bound, repaired, machine-lost, evicted, ...), from the planner; 0: none."),
    as_json: bool = JsonOption,
    token: Optional[str] = TokenOption,
) -> None:
    """Where a running topology's executors are: component, executor, worker, machine; per machine its predicted and measured CPU; its input rate measured and predicted, the contingency for each machine's loss, and its last events."""
    try:
        address, summary, nimbus_conf, local = _cluster_state(nimbus)
        declarations = read_declarations(storm_yaml or [], local, address)
        running = next((t for t in summary.topologies if t.name == name), None)
        if running is None:
            names = ", ".join(sorted(t.name for t in summary.topologies)) or "none"
            raise TopologyError(f"no topology named {name!r} is running on Nimbus {address} (running: {names})")
        with connect(address, LEADER_TIMEOUT_S) as client:
            info = client.topology_info(running.id)
            topology_conf = client.topology_conf(running.id)
            user_topology = client.user_topology(running.id)
    except TopologyError as exc:
        raise fail(str(exc)) from None
    rows = supervisor_rows(summary, declarations, MetaKeys.from_nimbus_conf(nimbus_conf))
    machine_of_host = {r.host: r.machine_id for r in rows if r.machine_id}
    places = executor_places(info, machine_of_host)
    loads = machine_loads(places, {r.machine_id: r.machine_type for r in rows if r.machine_id and r.machine_type})
    notes: list[str] = []
    url, found_token = planner_of(address, topology_conf, planner)
    loads, predicted_rate = predicted(loads, places, rows, name, topology_conf, user_topology, url, notes,
                                      token or found_token)
    loads = measured(loads, local, measure, notes)
    shares = executor_shares(places, topology_conf.get(SHARES_KEY))
    recent = recent_input_rate(parse_topology_info(info))
    if recent is None:
        notes.append("no measured rate: no spout reports its counts of Nimbus's last 10 minutes yet")
    story = planner_story(name, topology_conf, url, token or found_token, events, notes)
    if as_json:
        print(json.dumps({"topology": name, "id": running.id, "nimbus": str(address),
                          "scheduler_status": info.sched_status or "",
                          "rate": {"measured": recent.input_rate if recent else None,
                                   "measured_window_s": recent.window_s if recent else None,
                                   "predicted": predicted_rate},
                          "plan": {"id": story.plan_id, "source": story.plan_source},
                          "contingencies": None if story.contingencies is None
                          else [c.model_dump(mode="json") for c in story.contingencies],
                          "running_contingency": None if story.running_contingency is None
                          else story.running_contingency.model_dump(mode="json"),
                          "events": [e.model_dump(mode="json") for e in story.events],
                          "executors": [{**asdict(p), **({"shares": s} if s else {})} for p, s in zip(places, shares)],
                          "machines": [asdict(m) for m in loads], "notes": notes}, indent=2))
        return
    print_placement(console, name, running.id, info.sched_status or "", places, loads, notes, shares,
                    lambda: print_story(console, story, recent, predicted_rate))


@dataclass(frozen=True)
class PlannerStory:
    """What the planner knows of a running topology: the plan it is placed by, that plan's contingencies, its events."""

    plan_id: str | None = None
    plan_source: str | None = None
    """bound (``/v1/assignments``) or conf (``hetsched.plan.id``)."""
    plan_rate: float | None = None
    contingencies: list[Contingency] | None = None
    """The contingencies that answer the next loss of what runs: the plan's, unless a contingency of it runs."""
    events: list[TopologyEvent] = field(default_factory=list)
    running_contingency: RunningContingency | None = None
    """The plan's contingency for a lost machine, where the plugin applied it and it runs instead of the plan."""


def planner_story(name: str, topology_conf: dict[str, Any], planner_url: str | None, token: str | None, events: int,
                  notes: list[str]) -> PlannerStory:
    """The plan bound to the topology (else its conf's ``hetsched.plan.id``) with its contingencies, and its ``events``
    newest events; what cannot be read is one line in ``notes``.

    Where the binding says the plugin applied the plan's contingency for a lost machine
    (``planner.service.overview.placement_now``), that contingency is what runs: the plan's contingencies are not
    the current ones, and a note says why they are not shown."""
    from planner.client import PlannerClient, PlannerClientError

    if not planner_url:
        notes.append("no contingencies or events: no planner (give --planner)")
        return PlannerStory()
    plan_id = source = None
    plan = None
    binding: dict[str, Any] | None = None
    found: list[TopologyEvent] = []
    with PlannerClient(planner_url, token, timeout_s=30.0) as client:
        try:
            binding = client.binding(name)
            plan_id, source = (binding["plan_id"], "bound") if binding else (topology_conf.get(keys.PLAN_ID), "conf")
            if plan_id is None:
                source = None
                notes.append(f"no contingencies: no plan is bound to {name} and its conf names none ({keys.PLAN_ID})")
            else:
                plan = client.get_plan(plan_id)
        except PlannerClientError as exc:
            notes.append(f"no contingencies: {str(exc).splitlines()[0]}")
        if events:
            try:
                found = client.events(name, events).events
            except PlannerClientError as exc:
                notes.append(f"no events: {str(exc).splitlines()[0]}")
    now = placement_now(plan, plan_id, binding.get("reason") if binding else None,
                        binding.get("created_at") if binding else None)
    if now.contingencies_note is not None:
        notes.append(now.contingencies_note)
    elif plan is not None and plan.contingencies is None:
        notes.append(f"no contingencies: plan {plan_id} was not planned to survive a loss (options.survive_loss)")
    return PlannerStory(plan_id, source, plan.input_rate if plan else None, now.contingencies, found,
                        now.running_contingency)


def executor_shares(places: list[ExecutorPlace], conf_value: Any) -> list[dict[str, float]]:
    """Per executor, the share of each weighted stream into its component it takes (``hetsched.grouping.shares``).

    As the weighted groupings split them: a machine's share (named by host or machine id) evenly over the
    component's executors there (by executor, not task; equal where every executor has as many tasks).
    """
    if not isinstance(conf_value, dict):
        return [{} for _ in places]
    together: dict[tuple[str, str], int] = {}
    for p in places:
        together[(p.component, p.host)] = together.get((p.component, p.host), 0) + 1
    result = []
    for p in places:
        mine: dict[str, float] = {}
        for stream, per_machine in conf_value.items():
            if not isinstance(per_machine, dict) or not str(stream).endswith(f"->{p.component}"):
                continue
            share = per_machine.get(p.host, per_machine.get(p.machine))
            if isinstance(share, (int, float)):
                mine[str(stream)] = float(share) / together[(p.component, p.host)]
        result.append(mine)
    return result


def running_shares(places: list[ExecutorPlace], conf_value: Any) -> list[StreamShares]:
    """The shares the workers run with (``hetsched.grouping.shares`` resolved over where the executors run, as the
    weighted groupings do: planner.stream_shares.task_weights), per ``from->to`` stream, in the order of ``places``;
    a stream split evenly, or named by its receiver alone, is left out (scored evenly)."""
    if not isinstance(conf_value, dict):
        return []
    result = []
    for stream, per_machine in conf_value.items():
        if "->" not in str(stream) or not isinstance(per_machine, dict):
            continue
        numbers = {str(k): float(v) for k, v in per_machine.items() if isinstance(v, (int, float)) and v >= 0}
        targets = [p for p in places if p.component == str(stream).split("->", 1)[1]]
        weights = task_weights([p.host if p.host in numbers else (p.machine or "") for p in targets], numbers)
        if weights is not None:
            result.append(StreamShares(stream=str(stream), shares=weights))
    return result


def predicted(loads: list[MachineLoad], places: list[ExecutorPlace], rows: list[SupervisorRow], name: str,
              topology_conf: dict[str, Any], user_topology: Any, planner_url: str | None,
              notes: list[str], token: str | None = None) -> tuple[list[MachineLoad], float | None]:
    """Each machine's CPU as the planner predicts it for this placement (POST /v1/evaluations), and the R it
    predicts, where it can.

    A catalog topology is described by the catalog; any other (Java, Flux) by the structure Nimbus keeps."""
    from planner.client import PlannerClient, PlannerClientError
    from planner.model import EvaluationRequest, InstanceAssignment, ProfileRef
    from observe.topology_graph import TopologyGraphError
    from observe.topology_graph import planner_topology as graph_topology
    from topologies.catalog import lookup, planner_topology

    url = planner_url
    profiles = topology_conf.get(keys.PROFILES)
    catalog_name = topology_conf.get(keys.TOPOLOGY)
    why_not = ("no planner (give --planner)" if not url else
               f"no profile set ({keys.PROFILES} is not in the topology's conf)" if not profiles else None)
    user = [p for p in places if not p.component.startswith("__")]
    unknown = sorted({p.host or "(not placed)" for p in user if not p.machine})
    if why_not is None and unknown:
        why_not = f"the machine of {', '.join(unknown)} is unknown (give its storm.yaml with --storm-yaml)"
    if why_not is not None or not url or not profiles:  # (url and profiles are set where why_not is None)
        notes.append(f"no predicted load: {why_not}")
        return loads, None
    try:
        request = EvaluationRequest(
            topology=(planner_topology(lookup(catalog_name), user_parallelism(places)) if catalog_name
                      else graph_topology(name, user_topology, topology_conf, user_parallelism(places))),
            cluster=declared_cluster(rows),
            profiles=ProfileRef(name=profiles),
            assignments=[InstanceAssignment(component=p.component, machine=p.machine) for p in user],
            shares=running_shares(user, topology_conf.get(SHARES_KEY)) or None,
        )
        with PlannerClient(url, token, timeout_s=30.0) as client:
            if client.get_profile_set(profiles).source.get("kind") == "hetsched.tune.placement":
                notes.append(f"no predicted load: profile set {profiles} holds stand-in costs that only place a "
                             "`hetsched tune` explore round (its next version, when the tune ends, is measured)")
                return loads, None
            evaluation = client.evaluate(request)
    except (PlannerClientError, TopologyError, TopologyGraphError, ValueError) as exc:
        notes.append(f"no predicted load: {str(exc).splitlines()[0]}")
        return loads, None
    by_machine = {m.id: m.utilization for m in evaluation.machines}
    notes.append(f"predicted: CPU percent of each machine at R = {evaluation.input_rate:.1f} tuples/s, the largest input "
                 f"rate this placement sustains (planner {url}, profile set {profiles}, machine capacity 100, no base load)")
    return [replace(m, predicted_percent=by_machine.get(m.machine)) for m in loads], evaluation.input_rate


def measured(loads: list[MachineLoad], local: Any, seconds: float, notes: list[str]) -> list[MachineLoad]:
    """Each machine's CPU over ``seconds``, in percent of its quota, where the cluster can tell (the local cluster)."""
    if seconds <= 0:
        return loads
    if local is None:
        notes.append("no measured load: only the local cluster's machines can be measured from here")
        return loads
    from cluster.errors import ClusterError
    from cluster.handle import LocalClusterHandle

    handle = LocalClusterHandle(local)
    ids = {m.id: m.cores for m in handle.machines()}
    wanted = [m for m in loads if m.machine in ids]
    try:
        with console.status(f"measuring CPU for {seconds:g} s"):
            start = {m.machine: handle.cpu_seconds(m.machine) for m in wanted}
            began = time.monotonic()
            time.sleep(seconds)
            used = {m.machine: handle.cpu_seconds(m.machine) - start[m.machine] for m in wanted}
            elapsed = time.monotonic() - began
    except ClusterError as exc:
        notes.append(f"no measured load: {exc}")
        return loads
    notes.append(f"measured: CPU percent of each machine's quota over {elapsed:.1f} s, everything on it "
                 "(supervisor, workers, Python), at the topology's present input rate")
    return [replace(m, measured_percent=100.0 * used[m.machine] / (elapsed * ids[m.machine])) if m.machine in used else m
            for m in loads]


def print_placement(out: Console, name: str, topology_id: str, status: str, places: list[ExecutorPlace],
                    loads: list[MachineLoad], notes: list[str], shares: list[dict[str, float]] | None = None,
                    story: Callable[[], None] | None = None) -> None:
    """The executors and machines, then ``story`` (the rates, contingencies and events), the status and the notes."""
    table = Table(title=f"{name} ({topology_id})", title_justify="left")
    weighted = shares is not None and any(shares)
    for column in ("component", "tasks", "worker", "machine") + (("share",) if weighted else ()):
        table.add_column(column)
    for n, p in enumerate(places):
        tasks = str(p.task_start) if p.task_start == p.task_end else f"{p.task_start}-{p.task_end}"
        row = [p.component, tasks, f"{p.host}:{p.port}" if p.host else "(not placed)", p.machine or "?"]
        if weighted and shares is not None:
            row.append(", ".join(f"{s.split('->')[0]} {v:.1%}" for s, v in shares[n].items()))
        table.add_row(*row)
    out.print(table)
    machines = Table(title="per machine", title_justify="left")
    for column in ("machine", "host", "type", "executors", "workers", "predicted %", "measured %"):
        machines.add_column(column, justify="left" if column in ("machine", "host", "type", "workers") else "right")
    for m in loads:
        machines.add_row(m.machine, m.host, m.machine_type or "?", str(m.executors), ", ".join(map(str, m.workers)),
                         _number(m.predicted_percent, ".1f"), _number(m.measured_percent, ".1f"))
    out.print(machines)
    if story is not None:
        story()
    if status:
        out.print(f"scheduler status: {status}", highlight=False, markup=False, soft_wrap=True)
    for note in notes:
        out.print(note, highlight=False, markup=False, soft_wrap=True)


def print_story(out: Console, story: PlannerStory, recent: RecentRate | None, predicted_rate: float | None) -> None:
    """The rate measured and predicted, the contingency for each machine's loss, the newest events."""
    measured_text = (f"{recent.input_rate:.2f} tuples/s (its spouts' emits over Nimbus's last {recent.window_s:.0f} s)"
                     if recent else "unknown")
    predicted_text = (f"{predicted_rate:.2f} tuples/s (the largest input rate this placement sustains)"
                      if predicted_rate is not None else "unknown")
    out.print(f"input rate R: measured {measured_text}; predicted {predicted_text}", highlight=False, markup=False,
              soft_wrap=True)
    if story.running_contingency is not None:
        out.print(running_contingency_line(story.running_contingency), highlight=False, markup=False, soft_wrap=True)
    if story.contingencies:
        where = "bound to it" if story.plan_source == "bound" else f"its conf's {keys.PLAN_ID}"
        table = Table(title=f"if a machine is lost: plan {story.plan_id} ({where}; {story.plan_rate:.2f} tuples/s with "
                            "every machine) moves its instances so", title_justify="left")
        for column in ("machine lost", "R after", "bottleneck after", "moves"):
            table.add_column(column, justify="right" if column == "R after" else "left")
        for c in story.contingencies:
            table.add_row(c.machine, f"{c.input_rate:.2f}", c.bottleneck or "", moves_text(c))
        out.print(table)
    if story.events:
        table = Table(title="events, newest first", title_justify="left")
        for column in ("time (UTC)", "event", "what happened"):
            table.add_column(column, overflow="fold")
        for e in story.events:
            table.add_row(e.at[:19].replace("T", " "), e.kind, e.sentence)
        out.print(table)


def running_contingency_line(running: RunningContingency) -> str:
    """What runs after the plugin applied a contingency: the machine lost, when, the rate it predicts, what moved."""
    when = f" at {running.lost_at[:19].replace('T', ' ')} UTC" if running.lost_at else ""
    if running.input_rate is None:
        what = f"plan {running.plan_id} stores no contingency for it"
    else:
        what = (f"predicted {running.input_rate:.2f} tuples/s"
                + (f" (bottleneck {running.bottleneck})" if running.bottleneck else "")
                + f"; moved {running.moved}: {moves_text(running.moves)}")
    return (f"running: plan {running.plan_id}'s contingency for machine {running.machine}, lost{when} (the plugin "
            f"applied it, not the plan's placement): {what}")


def moves_text(contingency: Contingency | list[ContingencyMove]) -> str:
    """Where a contingency moves which instances: ``spout #0, low #1 -> small-1; high #0 -> medium-1``."""
    by_target: dict[str, list[str]] = {}
    for m in (contingency.moves if isinstance(contingency, Contingency) else contingency):
        by_target.setdefault(m.machine, []).append(f"{m.component} #{m.index}")
    return "; ".join(f"{', '.join(instances)} -> {machine}" for machine, instances in by_target.items()) or "nothing moves"


def _number(value: float | None, spec: str = "g") -> str:
    return "" if value is None else format(value, spec)
