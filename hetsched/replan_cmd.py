"""``hetsched replan TOPOLOGY``: a better plan for a running topology, applied by a drained re-placement."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from hetsched.inventory import MetaKeys, SupervisorRow, executor_places, supervisor_rows
from hetsched.ops_cmd import (
    LEADER_TIMEOUT_S,
    JsonOption,
    NimbusOption,
    StormYamlOption,
    _cluster_state,
    planner_of,
    read_declarations,
)
from hetsched.replan import (
    BASE_LOAD_KEY,
    SHARES_KEY,
    ReplanError,
    RunningPlacement,
    current_evaluation_request,
    gain,
    placement_of_plan,
    plan_shares,
    plan_within_tasks,
    planner_cluster,
    replacement_line,
    runs_weighted,
    shares_line,
    shares_overrides,
)
from hetsched.errors import fail
from hetsched.tuning import TuneError
from observe.nimbus import NimbusAddress, NimbusError, TopologyNotRunning, connect
from observe.replacement import ReplacementError, replace_drained
from observe.topology_graph import TopologyGraphError
from observe.topology_graph import planner_topology as graph_topology
from planner.model import Topology
from planner.client import URL_ENV, PlannerClient, PlannerClientError
from topologies import conf as keys
from topologies.errors import TopologyError

console = Console()


@dataclass(frozen=True)
class RunningTopology:
    """A running topology as Nimbus keeps it, with the cluster it runs on: what replan and tune plan from."""

    address: NimbusAddress
    name: str
    rows: list[SupervisorRow]
    machine_of_host: dict[str, str]
    conf: dict[str, Any]
    now: RunningPlacement
    user_topology: Any

    def planner_topology(self) -> Topology:
        """The planner's topology from the structure Nimbus keeps, each component's executor count free."""
        return graph_topology(self.name, self.user_topology, self.conf, self.now.executors, fixed=False)


def read_running(nimbus: Optional[str], name: str, storm_yaml: Optional[List[Path]]) -> RunningTopology:
    """Topology ``name`` as it runs: its conf, structure and placement, and the supervisors' declared machines."""
    address, summary, nimbus_conf, local = _cluster_state(nimbus)
    running = next((t for t in summary.topologies if t.name == name), None)
    if running is None:
        names = ", ".join(sorted(t.name for t in summary.topologies)) or "none"
        raise TopologyNotRunning(f"no topology named {name!r} is running on Nimbus {address} (running: {names})")
    rows = supervisor_rows(summary, read_declarations(storm_yaml or [], local, address), MetaKeys.from_nimbus_conf(nimbus_conf))
    machine_of_host = {r.host: r.machine_id for r in rows if r.machine_id}
    with connect(address, LEADER_TIMEOUT_S) as client:
        info = client.topology_info(running.id)
        topology_conf = client.topology_conf(running.id)
        user_topology = client.user_topology(running.id)
    return RunningTopology(address, name, rows, machine_of_host, topology_conf,
                           RunningPlacement.of(executor_places(info, machine_of_host)), user_topology)


def replan(
    name: str = typer.Argument(..., help="Name the topology runs under."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the current and the new plan and the predicted gain; change nothing."),
    min_gain: float = typer.Option(0.10, "--min-gain", min=0.0, help="Apply the new plan only if its predicted input rate is at least this much higher (0.10: 10%)."),
    strategy: Optional[str] = typer.Option(None, "--strategy", help="Planner strategy (default: the planner's best)."),
    keep_counts: bool = typer.Option(False, "--keep-counts", help="Keep every component's executor count; only move executors."),
    max_drain: Optional[float] = typer.Option(None, "--max-drain", min=0.0, help="Seconds to wait for in-flight tuples after deactivating (default: the topology's topology.message.timeout.secs)."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Measure before and after; a plan that measures more than --noise under the placement it replaced is undone (drained)."),
    window: float = typer.Option(60.0, "--window", min=20.0, help="--verify: seconds of each measurement."),
    warmup: float = typer.Option(45.0, "--warmup", min=0.0, help="--verify: seconds after the re-placement before measuring."),
    noise: float = typer.Option(0.10, "--noise", min=0.0, max=0.9, help="--verify: shortfall under the starting placement still taken as noise (0.10: 10%)."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service (default: a compose cluster's own, published here, else the topology's hetsched.planner.url, else http://127.0.0.1:8765)."),
    nimbus: Optional[str] = NimbusOption,
    storm_yaml: Optional[List[Path]] = StormYamlOption,
    as_json: bool = JsonOption,
) -> None:
    """Plan a running topology again (new executor counts up to its task counts) and, if the predicted gain is worth
    a restart, bind the plan and re-place the topology drained: deactivate, wait for acks, rebalance, activate; then
    measure it and, if it runs worse than before, put it back where it was."""
    report: dict[str, Any] = {"topology": name}
    try:
        state = read_running(nimbus, name, storm_yaml)
        address, machine_of_host, now, topology_conf = state.address, state.machine_of_host, state.now, state.conf
        profiles = topology_conf.get(keys.PROFILES)
        if not profiles:
            raise ReplanError(f"topology {name!r} was not submitted for the planner (its conf lacks {keys.PROFILES}); "
                              "submit it with `hetsched submit --profiles`, give it that conf key, or profile and "
                              "place it with `hetsched tune`")
        from topologies.catalog import lookup, planner_topology

        # a catalog topology as the catalog says; any other (Java, Flux) as Nimbus keeps it, its counts free
        catalog_name = topology_conf.get(keys.TOPOLOGY)
        topology = planner_topology(lookup(catalog_name)) if catalog_name else state.planner_topology()
        url, token = planner_of(address, topology_conf, planner)
        with PlannerClient(url, token) as planner_client:
            base_load = planner_client.get_profile_set(profiles).source.get(BASE_LOAD_KEY) or {}
            cluster = planner_cluster(state.rows, base_load)
            weighted = runs_weighted(topology_conf)
            current = planner_client.evaluate(current_evaluation_request(topology, cluster, profiles, now, weighted))
            fixed = now.executors if keep_counts else None
            plan, capped = plan_within_tasks(planner_client.plan, topology, cluster, profiles, now.tasks, strategy, fixed,
                                             weighted)
            predicted_gain = gain(current.input_rate, plan.input_rate)
            report.update(current_rate=current.input_rate, current_bottleneck=current.bottleneck,
                          planned_rate=plan.input_rate, planned_bottleneck=plan.bottleneck, plan_id=plan.id,
                          gain=predicted_gain, executors_now=now.executors, executors_planned=plan.instances,
                          tasks=now.tasks, capped_at_tasks=capped, applied=False)
            if not as_json:
                _print_plans(name, now, current, plan, predicted_gain, capped)
            apply = not dry_run and predicted_gain >= min_gain
            if not dry_run and not apply:
                report["why_not_applied"] = f"predicted gain {predicted_gain:+.1%} is below --min-gain {min_gain:.0%}"
            if apply:
                reason = f"hetsched replan: predicted {current.input_rate:.2f} -> {plan.input_rate:.2f} tuples/s ({predicted_gain:+.1%})"
                assert plan.id is not None  # the service stores every plan it answers
                planner_client.bind(name, plan.id, reason)
        if apply and verify:
            _verified(state, topology, lambda: read_running(nimbus, name, storm_yaml), url, token, profiles, plan, reason,
                      report, window, warmup, noise, max_drain, as_json)
        elif apply:
            shares = shares_overrides(topology_conf.get(SHARES_KEY), plan_shares(plan, machine_of_host),
                                      machine_of_host)
            if shares and not as_json:
                console.print(shares_line(name, shares[SHARES_KEY]), highlight=False, soft_wrap=True)
            with connect(address, LEADER_TIMEOUT_S) as client:
                result = replace_drained(
                    client, name, placement_of_plan(plan), machine_of_host, max_drain_s=max_drain, conf_overrides=shares,
                    on_step=lambda step: None if as_json else console.print(f"{name}: {step}", highlight=False))
            report.update(applied=True, replacement={**asdict(result), "failed_during_drain": result.failed_during_drain,
                                                     "in_flight_at_rebalance": result.in_flight_at_rebalance},
                          shares_sent=shares.get(SHARES_KEY))
            if not as_json:
                _print_replacement(result)
    except (TopologyError, TopologyGraphError, ReplanError, PlannerClientError, NimbusError, ReplacementError,
            TuneError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        print(json.dumps(report, indent=2, default=str))
    elif dry_run:
        console.print("dry run: nothing changed", highlight=False)
    elif not report["applied"]:
        console.print(f"not applied: {report['why_not_applied']}", highlight=False)


def _verified(state: RunningTopology, topology: Topology, read: Callable[[], RunningTopology], url: str | None, token: str | None,
              profiles: str, plan, reason: str, report: dict[str, Any], window: float, warmup: float, noise: float,
              max_drain: float | None, as_json: bool) -> None:
    """Measure, re-place onto ``plan``, measure again, and undo a plan that measures worse (as ``hetsched tune`` does)."""
    from hetsched.tuning import Tuner, TuneSettings, rate_of
    from spark_profiling.tune import never_worse

    def say(line: str) -> None:
        if not as_json:
            console.print(line, highlight=False)

    settings = TuneSettings(store=Path("."), set_name=profiles, window_s=window, warmup_s=warmup, idle_s=0,
                            noise=noise, max_drain_s=max_drain)
    with PlannerClient(url, token) as client:
        tuner = Tuner(state, client, settings, say, read, graph=topology)
        before = tuner.measure("the running placement")
        try:
            tuner.place(placement_of_plan(plan), None, reason, plan=plan)
            tuner.wait(warmup, "warming up on the plan")
            after = tuner.measure("the plan")
        except BaseException:
            tuner.back_to_start("the re-placement did not finish")
            raise
        verdict = never_worse(rate_of(before), rate_of(after), noise)
        report.update(applied=True, measured_before=before.as_dict(), measured_after=after.as_dict(),
                      verdict=verdict.reason, kept=verdict.keep)
        if not verdict.keep:
            tuner.back_to_start(f"the plan {verdict.reason}")
            report["measured_back"] = tuner.report.back.as_dict() if tuner.report.back else None
        say(("kept: " if verdict.keep else "undone: ") + verdict.reason)


def _print_plans(name: str, now: RunningPlacement, current, plan, predicted_gain: float, capped: dict[str, int]) -> None:
    table = Table(title=f"{name}: running placement against the new plan {plan.id}", title_justify="left")
    for column in ("component", "executors now", "planned", "tasks", "machines now", "machines planned"):
        table.add_column(column, justify="left" if column.startswith(("component", "machines")) else "right")
    planned = placement_of_plan(plan)
    for component, machines in now.machines.items():
        table.add_row(component, str(len(machines)), str(plan.instances.get(component, "")), str(now.tasks[component]),
                      ", ".join(machines), ", ".join(planned.get(component, [])))
    console.print(table)
    console.print(f"predicted input rate: now {current.input_rate:.2f} tuples/s (bottleneck {current.bottleneck}), "
                  f"new plan {plan.input_rate:.2f} tuples/s (bottleneck {plan.bottleneck}): gain {predicted_gain:+.1%}",
                  highlight=False)
    if capped:
        console.print(f"capped at their task counts (spare tasks: `hetsched submit --spare-tasks`): {capped}", highlight=False)


def _print_replacement(result) -> None:
    console.print(replacement_line(result), highlight=False)
    console.print(f"scheduler: {result.scheduler_status}", highlight=False)
