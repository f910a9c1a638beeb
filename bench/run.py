"""One run of a bench: submit a topology as a scheduler wants it, wait until it runs, warm up, measure, kill.

A run that fails (not scheduled, a component that never handles a tuple, a
supervisor lost, Nimbus gone) comes back as a failed :class:`RunResult` with the
reason; the topology is killed whatever happened.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import psutil

from bench import measure
from bench.errors import BenchError
from bench.placement import ActualPlacement, from_topology_info, placement_shares, plan_mismatches
from bench.schedulers import RunSpec
from cluster.errors import ClusterError
from cluster.handle import LocalClusterHandle
from cluster.local import LocalCluster
from observe.machines import ClusterHandle, machine_of_host
from observe.counts import parse_topology_info
from observe.nimbus import Nimbus, connect
from observe.progress import QuietReporter, Reporter
from observe.rates import ComponentRate, CountSample, ExecutorRate, component_rates, executor_rates, unmeasured
from observe.window import sample_window
from planner.client import PlannerClient, PlannerClientError
from planner.model import Cluster, Evaluation, EvaluationRequest, Plan, PlanOptions, ProfileRef
from topologies.catalog import lookup, planner_topology
from topologies.errors import TopologyError
from topologies.jar import build_jar
from topologies.measure import roles
from topologies.submission import SubmitRequest, build_submission

if TYPE_CHECKING:
    from cluster.compose_cluster import ComposeCluster
from topologies.conf import PLANNER_URL as PLANNER_URL_KEY
from topologies.submit import KILL_TIMEOUT_S, apply_plan
from topologies.weighted_grouping import with_hosts
from planner.stream_shares import CONF_KEY as SHARES_KEY

BenchCluster: TypeAlias = "LocalCluster | ComposeCluster"
"""The clusters a bench runs on: the local one, or the compose one (which loads Docker's tooling when used)."""

log = logging.getLogger(__name__)

POLL_S = 2.0
WORKERS_GONE_TIMEOUT_S = 90.0


UNPLACED_GRACE_S = 45.0
"""A topology still without executors this long after the submit, with a scheduler status, will not be placed."""


class Unschedulable(BenchError):
    """The scheduler says it cannot place the topology (e.g. RAS: not enough CPU for the declared points)."""


@dataclass
class RunResult:
    """Everything one run measured, or why it failed."""

    topology: str
    scheduler: str
    name: str
    note: str
    parallelism: dict[str, int]
    plan_id: str | None = None
    status: str = "failed"
    reason: str | None = None
    topology_id: str | None = None
    placement: ActualPlacement | None = None
    plan_mismatches: list[str] = field(default_factory=list)
    measured: measure.Throughputs | None = None
    components: list[ComponentRate] = field(default_factory=list)
    executors: list[tuple[str, ExecutorRate]] = field(default_factory=list)
    """(machine id, what the executor did) of every executor measured in the window."""
    machines: list[measure.MachineCpu] = field(default_factory=list)
    predicted: measure.Throughputs | None = None
    predicted_machines: dict[str, float] = field(default_factory=dict)
    predicted_bottleneck: str | None = None
    failed_share: float = 0.0
    start_s: float | None = None
    """From submit until every component handled tuples."""
    settle_s: float = 0.0
    """Waited after the warm-up for a steady window (:func:`_settle`), seconds."""
    window_utc: tuple[str, str] | None = None
    """When the measurement window started and ended (ISO 8601, UTC): what a sampler beside the bench lines up with."""
    load_average: dict[str, list[float]] = field(default_factory=dict)
    conf: dict[str, Any] = field(default_factory=dict)
    unschedulable: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def flow_imbalance(self) -> float | None:
        """:func:`bench.measure.flow_imbalance` of the window, None without a measurement and a prediction."""
        return measure.flow_imbalance(self.measured, self.predicted) if self.measured and self.predicted else None


@dataclass
class RunContext:
    cluster: BenchCluster
    planner_url: str
    profile_set: str
    window_s: float
    warmup_s: float
    start_timeout_s: float
    reporter: Reporter = field(default_factory=QuietReporter)
    base_load: dict[str, float] = field(default_factory=dict)
    """Machine type -> base load, percent (planner.profiles.machine_base_load): planned on, and added back to predicted CPU."""
    cluster_planner_url: str | None = None
    """The planner as Nimbus and the workers reach it, where that differs from ``planner_url`` (the compose
    cluster's planner by service name); what goes into the topology's conf."""
    settle_max_s: float = 0.0
    """After the warm-up, the longest a run waits for a steady window (:func:`_settle`); 0: no wait."""

    @property
    def handle(self) -> ClusterHandle:
        """What the runs read of the cluster (Nimbus, machines, CPU); the cluster itself is only restarted."""
        if isinstance(self.cluster, LocalCluster):
            return LocalClusterHandle(self.cluster)
        return self.cluster.handle()

    @property
    def machines(self) -> dict[str, tuple[str, float]]:
        return {m.id: (m.type, m.cores) for m in self.handle.machines()}


def run(spec: RunSpec, ctx: RunContext, plan: Plan | None = None) -> RunResult:
    """Run one topology under one scheduler; never raises for a failed run.

    Ctrl-C passes through without the kill: the bench brings the whole cluster down then.
    """
    result = _attempt(spec, ctx, plan)
    for scale in spec.fallback_scales:
        if not result.unschedulable:
            break
        ctx.reporter.log(f"{spec.topology}/{spec.scheduler}: Storm could not place it ({result.reason}); "
                         f"trying again with {scale:.0%} of the declared CPU")
        result = _attempt(spec.scaled(scale), ctx, plan)
    return result


def _attempt(spec: RunSpec, ctx: RunContext, plan: Plan | None) -> RunResult:
    result = RunResult(spec.topology, spec.scheduler, spec.name, spec.note, dict(spec.parallelism), spec.plan_id)
    try:
        _run(spec, ctx, plan, result)
        result.status = "ok"
    except Unschedulable as exc:
        result.reason = str(exc)
        result.unschedulable = True
    except (BenchError, TopologyError, ClusterError, PlannerClientError) as exc:
        result.reason = str(exc)
    except (OSError, TimeoutError) as exc:
        result.reason = f"{type(exc).__name__}: {exc}"
    _kill_quietly(spec.name, ctx, result)
    if result.reason:
        ctx.reporter.log(f"[red]{spec.topology}/{spec.scheduler} failed:[/red] {result.reason}")
    return result


def _run(spec: RunSpec, ctx: RunContext, plan: Plan | None, result: RunResult) -> None:
    entry = lookup(spec.topology)
    _require_healthy(ctx.cluster, ctx.reporter)
    ctx.reporter.status(f"{spec.topology}/{spec.scheduler}: submitting")
    submitted_at = time.monotonic()
    result.topology_id, result.parallelism, result.conf = submit(spec, ctx)
    placement = _wait_until_running(spec, ctx, result.topology_id, entry, submitted_at)
    result.start_s = round(time.monotonic() - submitted_at, 1)
    result.placement = placement
    if plan is not None and spec.scheduler in ("planned", "planned-weighted"):
        result.plan_mismatches = plan_mismatches(placement, plan)
    ctx.reporter.log(f"{spec.topology}/{spec.scheduler}: running after {result.start_s:g} s on "
                     + ", ".join(f"{m} ({len(cs)} executors)" for m, cs in sorted(placement.machines_used().items())))
    _predict(ctx, entry, placement, result, spec.conf.get(SHARES_KEY))
    label = f"{spec.topology}/{spec.scheduler}"
    _sleep(ctx, ctx.warmup_s, f"{label}: warming up")
    if result.predicted is not None:
        result.settle_s = _settle(ctx, result.topology_id, roles(entry), result.predicted, label)

    load_start = list(os.getloadavg())
    cpu_before = _cpu_seconds(ctx)
    started, started_utc = time.monotonic(), utc_now()
    samples = _window_samples(ctx, result.topology_id, roles(entry), f"{spec.topology}/{spec.scheduler}")
    rates = component_rates(samples, roles(entry))
    window = time.monotonic() - started
    cpu_after = _cpu_seconds(ctx)
    result.window_utc = (started_utc, utc_now())
    result.load_average = {"start": load_start, "end": list(os.getloadavg())}
    _require_healthy(ctx.cluster, ctx.reporter, restart=False)
    with Nimbus(ctx.handle.nimbus) as nimbus:
        after = _placement(ctx, nimbus, result.topology_id)
    if after is None or after.executors != placement.executors:
        raise BenchError("Storm moved executors during the measurement window (a worker or supervisor was lost)")
    idle = unmeasured(rates)
    if idle:
        raise BenchError(f"{', '.join(idle)} handled no tuples during the {ctx.window_s:g} s window")

    result.components = rates
    machines = machine_of_host(ctx.handle)
    result.executors = [(machines.get(e.host, e.host), e) for e in executor_rates(samples, roles(entry))]
    result.measured = measure.measured_throughputs(rates)
    result.failed_share = measure.failed_share(rates)
    result.machines = measure.machine_cpu(cpu_before, cpu_after, window, ctx.machines)
    imbalance = result.flow_imbalance
    if imbalance is not None and abs(imbalance) > measure.STEADY_WITHIN:
        ctx.reporter.log(f"[yellow]{spec.topology}/{spec.scheduler}: not steady[/yellow]: its sinks ran "
                         f"{imbalance:+.0%} off the placement's flow from what its spouts emitted; its rates are a "
                         "transient (tuples piled up inside the topology)")
    if failed := measure.failed_trees(rates):
        ctx.reporter.log(f"[yellow]{spec.topology}/{spec.scheduler}: not steady[/yellow]: {failed} of its spouts' "
                         "tuple trees failed (timed out) in the window; its spouts emit past what the placement "
                         "sustains as the timeouts free their pending slots")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


SETTLE_STEP_S = 30.0
"""The windows in which :func:`_settle` looks at the flow: three of Nimbus' 10 s count steps."""


def _settle(ctx: RunContext, topology_id: str, component_roles: dict[str, str], predicted: measure.Throughputs,
            label: str) -> float:
    """Wait until two :data:`SETTLE_STEP_S` windows in a row are steady (:func:`bench.measure.steady`: the flow
    within :data:`bench.measure.STEADY_WITHIN`, no tree failed; one alone passes by chance near the edge), at most
    ``ctx.settle_max_s``; the seconds waited.

    A placement that leaves a multi-lang bolt short of CPU fills a queue in front of it while the spouts still
    have pending tuples to spare: until ``max.spout.pending`` binds, the spouts emit faster than the placement
    sustains, for minutes where the pending tuples are many (docs/results/README.md, "Steady windows").
    """
    if ctx.settle_max_s <= 0:
        return 0.0
    started = time.monotonic()
    imbalance: float | None = None
    steady_windows = 0
    with Nimbus(ctx.handle.nimbus) as nimbus:
        while (waited := time.monotonic() - started) < ctx.settle_max_s:
            step = min(SETTLE_STEP_S, max(15.0, ctx.settle_max_s - waited))
            samples = sample_window(nimbus, topology_id, step, component_roles, on_sample=lambda _s, elapsed, length:
                                    ctx.reporter.status(f"{label}: waiting for a steady flow ({waited + elapsed:.0f} s)"))
            rates = component_rates(samples, component_roles)
            if unmeasured(rates):
                continue
            imbalance = measure.flow_imbalance(measure.measured_throughputs(rates), predicted)
            failed = measure.failed_trees(rates)
            if measure.steady(imbalance, failed):
                steady_windows += 1
                if steady_windows == 2:
                    return round(time.monotonic() - started, 1)
                continue
            steady_windows = 0
            why = f"{failed} tuple trees failed" if failed else f"the sinks' flow {imbalance:+.0%} off the spouts'"
            ctx.reporter.log(f"{label}: not steady yet after {time.monotonic() - started:.0f} s ({why}); "
                             f"waiting up to {ctx.settle_max_s:g} s")
    ctx.reporter.log(f"[yellow]{label}: not steady after {ctx.settle_max_s:g} s[/yellow]; measuring anyway")
    return round(time.monotonic() - started, 1)


def _window_samples(ctx: RunContext, topology_id: str, component_roles: dict[str, str], label: str) -> list[CountSample]:
    """Sample every executor's counts through the window (rates are taken between each executor's own stats steps).

    A worker on a machine at its full quota can report its counts late; where some component's counts
    have not moved by the end of the window, the window goes on, up to twice its length, said aloud.
    """
    def extended(still: list[str], length_s: float) -> None:
        ctx.reporter.log(f"{label}: the counts of {', '.join(still)} have not moved in {ctx.window_s:g} s; "
                         f"extending the window to {length_s:g} s")

    with Nimbus(ctx.handle.nimbus) as nimbus:
        samples = sample_window(
            nimbus, topology_id, ctx.window_s, component_roles, extend_to_s=2 * ctx.window_s,
            on_sample=lambda _s, elapsed, length: ctx.reporter.status(f"{label}: measuring {elapsed:.0f}/{length:g} s"),
            on_extend=extended,
        )
    return samples


def submit(spec: RunSpec, ctx: RunContext) -> tuple[str, dict[str, int], dict[str, Any]]:
    """Submit the run's topology (replacing a leftover of the same name); its id, parallelism and conf."""
    conf = dict(spec.conf)
    if SHARES_KEY in conf:  # workers know machines by host: the plan's machine ids become the cluster's hosts
        conf[SHARES_KEY] = with_hosts(conf[SHARES_KEY], {m.id: m.host for m in ctx.handle.machines()})
    request = SubmitRequest(
        topology=spec.topology, name=spec.name, parallelism={} if spec.plan_id else dict(spec.parallelism),
        conf=conf, plan_id=spec.plan_id, profiles=spec.profiles,
        planner_url=ctx.planner_url if spec.plan_id else None,
    )
    submission = build_submission(apply_plan(request))
    if spec.plan_id and ctx.cluster_planner_url:  # the plan was fetched from here; the plugin asks from the cluster
        submission.conf[PLANNER_URL_KEY] = ctx.cluster_planner_url
    for component, extra in spec.component_conf.items():
        common = (submission.topology.spouts.get(component) or submission.topology.bolts[component]).common
        common.json_conf = json.dumps({**json.loads(common.json_conf or "{}"), **extra})
    with connect(ctx.handle.nimbus) as nimbus:
        if nimbus.find(spec.name) is not None:
            nimbus.kill(spec.name, wait_s=0)
            nimbus.wait_gone(spec.name, KILL_TIMEOUT_S)
        with tempfile.TemporaryDirectory(prefix="hetsched-bench-jar-") as tmp:
            location = nimbus.upload_jar(build_jar(Path(tmp) / f"{spec.topology}.jar"))
        nimbus.submit(submission.name, location, submission.conf, submission.topology)
        running = nimbus.find(submission.name)
    if running is None:
        raise BenchError(f"Nimbus does not list {spec.name} right after accepting it")
    return running.id, submission.parallelism, submission.conf


def _placement(ctx: RunContext, nimbus: Nimbus, topology_id: str) -> ActualPlacement | None:
    return from_topology_info(nimbus.topology_info(topology_id), machine_of_host(ctx.handle))


def _wait_until_running(spec: RunSpec, ctx: RunContext, topology_id: str, entry, submitted_at: float) -> ActualPlacement:
    """Block until Nimbus has placed every executor and every component has handled a tuple."""
    deadline = submitted_at + ctx.start_timeout_s
    component_roles = roles(entry)
    placement: ActualPlacement | None = None
    waiting: list[str] = list(component_roles)
    last_health = 0.0
    with connect(ctx.handle.nimbus) as nimbus:
        while True:
            info = nimbus.topology_info(topology_id)
            placement = from_topology_info(info, machine_of_host(ctx.handle))
            if placement is not None:
                handled = parse_topology_info(info).totals()
                waiting = [c for c in component_roles if handled.get(c, 0) == 0]
                if not waiting:
                    return placement
            elapsed = time.monotonic() - submitted_at
            ctx.reporter.status(f"{spec.topology}/{spec.scheduler}: starting ({elapsed:.0f} s; "
                                + ("not yet placed" if placement is None else f"waiting for {', '.join(waiting)}") + ")")
            status = info.sched_status or ""
            if placement is None and time.monotonic() - submitted_at > UNPLACED_GRACE_S and status:
                raise Unschedulable(f"Storm did not place it: {status}")
            if time.monotonic() > deadline:
                if placement is None:
                    raise BenchError(f"Storm placed no executor within {ctx.start_timeout_s:g} s"
                                     + (f" (scheduler: {status})" if status else ""))
                raise BenchError(f"{', '.join(waiting)} handled no tuple within {ctx.start_timeout_s:g} s of the submit")
            if time.monotonic() - last_health > 10:
                _require_healthy(ctx.cluster, ctx.reporter)
                last_health = time.monotonic()
            time.sleep(POLL_S)


def _require_healthy(cluster: BenchCluster, reporter: Reporter, restart: bool = True) -> None:
    """Every daemon up. Before the window, a supervisor that halted is restarted (Storm's daemons are
    fail-fast, made to run under supervision), said aloud; after it, or anything else lost, fails the run."""
    if restart and cluster.restart_stopped_supervisors(report=reporter.log):
        reporter.log("[yellow]the next run starts on restarted supervisors[/yellow]")
    status = cluster.status()
    if status.stopped_daemons:
        raise BenchError(f"the cluster lost {', '.join(status.stopped_daemons)}")
    unregistered = [s.machine_id for s in status.supervisors if s.supervisor_id is None]
    if unregistered:
        raise BenchError(f"Nimbus no longer lists the supervisor of {', '.join(unregistered)}")


def _cpu_seconds(ctx: RunContext) -> dict[str, float]:
    return {m.id: ctx.handle.cpu_seconds(m.id) for m in ctx.handle.machines()}


def prediction_request(entry, placement: ActualPlacement, cluster: Cluster, profiles: ProfileRef,
                       parallelism: dict[str, int] | None = None,
                       shares: Mapping[str, Mapping[str, float]] | None = None) -> EvaluationRequest:
    """What scores a run's placement: every run is free-running, so its spouts are held by max.spout.pending at
    its largest rate and charged no idle polling (``spouts_held``, docs/model.md); Storm's ackers are in it, each
    charged its machine type's idle executor thread (docs/model.md, "Idle executor threads"). ``shares`` (the run's
    ``hetsched.grouping.shares``, by machine id) split its streams as the weighted groupings do on that placement."""
    topology, assignments = placement.with_system(planner_topology(entry, parallelism))
    return EvaluationRequest(topology=topology, cluster=cluster, profiles=profiles, assignments=assignments,
                             options=PlanOptions(spouts_held=True), shares=placement_shares(placement, shares) or None)


def predicted_machine_cpu(evaluation: Evaluation, placement: ActualPlacement, base_load: dict[str, float]) -> dict[str, float]:
    """Machine -> the percent of its quota the prediction charges it: its load, plus its type's base load (an idle
    worker JVM and the supervisor) where a worker runs; a machine with no executor is charged nothing."""
    hosting = placement.machines_used()
    return {m.id: round(m.utilization + (base_load.get(m.type, 0.0) if m.id in hosting else 0.0), 2)
            for m in evaluation.machines}


def _predict(ctx: RunContext, entry, placement: ActualPlacement, result: RunResult,
             shares: Mapping[str, Mapping[str, float]] | None = None) -> None:
    """The placement's largest rate as the planner predicts it (:func:`prediction_request`), with the run's shares."""
    request = prediction_request(entry, placement, ctx.cluster.spec.planner_cluster(ctx.base_load),
                                 ProfileRef(name=ctx.profile_set), shares=shares)
    with PlannerClient(ctx.planner_url) as client:
        evaluation = client.evaluate(request)
    result.predicted = measure.predicted_throughputs(evaluation, entry.spout_ids)
    result.predicted_machines = predicted_machine_cpu(evaluation, placement, ctx.base_load)
    result.predicted_bottleneck = evaluation.bottleneck


def _sleep(ctx: RunContext, seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ctx.reporter.status(f"{what} ({left:.0f} s left)")
        time.sleep(min(1.0, left))


def _kill_quietly(name: str, ctx: RunContext, result: RunResult) -> None:
    """Kill the run's topology and wait until its workers are gone; a failure here is added to the reason."""
    ctx.reporter.status(f"{result.topology}/{result.scheduler}: killing {name}")
    try:
        with connect(ctx.handle.nimbus, leader_timeout_s=30) as nimbus:
            if nimbus.find(name) is not None:
                nimbus.kill(name, wait_s=0)
                nimbus.wait_gone(name, KILL_TIMEOUT_S)
        if result.topology_id:
            _wait_workers_gone(result.topology_id)
    except (TopologyError, BenchError, OSError) as exc:
        note = f"could not kill {name}: {exc}"
        result.reason = f"{result.reason}; {note}" if result.reason else note
        if result.status == "ok":
            result.status = "failed"


def _wait_workers_gone(topology_id: str) -> None:
    """Supervisors stop a killed topology's workers on their next sync; the next run must not share the CPU."""
    deadline = time.monotonic() + WORKERS_GONE_TIMEOUT_S
    while time.monotonic() < deadline:
        left = [p for p in psutil.process_iter(["cmdline"]) if _belongs(p, topology_id)]
        if not left:
            return
        time.sleep(1.0)
    raise BenchError(f"workers of {topology_id} still run {WORKERS_GONE_TIMEOUT_S:g} s after the kill")


def _belongs(process: psutil.Process, topology_id: str) -> bool:
    try:
        cmdline = process.info["cmdline"] or []
        if any(topology_id in arg for arg in cmdline):
            return True
        return any(topology_id == part for part in process.cwd().split("/")) if "streamparse_run" in " ".join(cmdline) else False
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
