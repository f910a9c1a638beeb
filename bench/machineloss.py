"""``hetsched bench --scenario machine-loss``: one machine lost and returned under each scheduler in turn.

Linear runs on the default cluster as the ordinary bench submits it for each scheduler (``planned``:
the hetsched plugin and its plan; ``planned-contingency``: the same plan with a contingency per machine, applied by
the plugin without asking the planner; ``default``: Storm's DefaultScheduler with the plan's instance
counts; ``resource_aware``: Storm's RAS with CPU points). After the warm-up and a window, one
supervisor machine (``--victim``, the largest by default) is killed with its workers, as a power cut
would; it stays down (``--down``), comes back, and the bench watches (``--after``). Throughout, every
executor's counts are read every second. From them:

- the input rate over time (spout tuples/s over the trailing 20 s), with the events marked;
- ``noticed_s``: when Nimbus first showed the executors that ran on the victim elsewhere or unplaced;
  ``replaced_s``: when every executor ran again on the machines left; ``recovered_s``: when the input
  rate over a trailing 20 s wholly after the kill first reached 90% of what the smaller cluster then
  sustained;
- the rate before, on the smaller cluster and after the return, each next to the planner's
  prediction for the placement Storm ran then (``POST /v1/evaluations``), and the smaller cluster's
  best plan (a fresh ``POST /v1/plans`` without the victim);
- ``moved_back_s``: when executors ran on the returned machine again (only a scheduler that re-plans
  moves a running topology);
- where the seconds from the kill went, from Storm's logs (:mod:`bench.recovery`): declared dead, assigned, the
  new workers created, their JVMs up, their executors ready;
- the spouts' tuple trees: failed (replayed by the spout) from the kill to the return and from the
  return to the end, the tuples the spout gave up on (its log), and after the end a drain
  (deactivated until every tuple tree emitted is acked or failed) that says none is left in flight.

Nimbus runs with ``nimbus.supervisor.timeout.secs`` and ``nimbus.task.timeout.secs`` 20 (so a lost
machine is noticed within the scenario), ``nimbus.task.launch.secs`` 120 (Nimbus counts an executor
alive, heartbeat or not, until this long after it was assigned: 240 s by default; the kill comes at
least that long after the placement) and ``blacklist.scheduler.tolerance.time.secs`` and
``blacklist.scheduler.resume.time.secs`` 30 (Storm's BlacklistScheduler keeps a returned machine out
until its missed heartbeats are older than the tolerance time, 300 s by default, and re-checks every
resume time, 1800 s by default), the plugin with ``hetsched.replan.min.interval.secs`` 60; all are
recorded in the result. Runs alternate the schedulers (``--repeats``), the median and range are
reported. The result is ``machine-loss.json`` in the output folder, rewritten after every run.
"""
from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from bench import recovery, scenario_files, scenario_run
from bench.errors import BenchError
from bench.experiment import _cluster_up, _load_profiles, versions
from bench.planner_service import PlannerService
from bench.profiles import fill_pass_through_alphas
from bench.run import RunContext, submit
from bench.schedulers import RunSpec, plan_counts, run_specs
from bench.settings import BenchSettings
from cluster.errors import ClusterError
from cluster.local import LocalCluster
from cluster.spec import ClusterSpec, load_spec
from observe.counts import TopologyCounts
from observe.machines import machine_of_host
from observe.nimbus import Nimbus, NimbusError, connect
from observe.progress import QuietReporter, Reporter
from observe.rates import CountSample
from planner.client import PlannerClient, PlannerClientError
from planner.model import (Cluster, EvaluationRequest, InstanceAssignment, Plan, PlanOptions, PlanRequest, ProfileRef,
                           SurviveLoss)
from planner.profiles import machine_base_load
from topologies import conf as keys
from topologies.catalog import lookup, planner_topology
from topologies.errors import TopologyError

RESULT_FILE = "machine-loss.json"
TOPOLOGY = "linear"
SCHEDULERS = ("planned", "planned-contingency", "default", "resource_aware")
CONTINGENCY = "planned-contingency"
"""``planned``'s plan with a contingency per machine (``options.survive_loss``, objective ``nominal``: the same counts
and placement), which the plugin applies in the round it learns of the loss without asking the planner."""
MESSAGE_TIMEOUT_S = 30
"""Storm's default: a tuple lost with the victim fails (and is replayed) within the down phase."""
NIMBUS_CONF = {
    "nimbus.supervisor.timeout.secs": 20,
    "nimbus.task.timeout.secs": 20,
    "nimbus.task.launch.secs": 120,
    "blacklist.scheduler.tolerance.time.secs": 30,
    "blacklist.scheduler.resume.time.secs": 30,
    "hetsched.replan.min.interval.secs": 60,
    "hetsched.replan.min.gain": 0.10,
}
"""Nimbus's storm.yaml extras of every run (the plugin's keys are ignored by Storm's own schedulers)."""
SAMPLE_S = 1.0
SERIES_STEP_S = 5.0
SERIES_SPAN_S = 20.0
RECOVERED_SHARE = 0.9
UNPLACED_GRACE_S = 45.0
GAVE_UP = re.compile(r"after it exceeded retry limit")
"""What pystorm's ReliableSpout logs when it stops replaying a tuple (it then pretends the tuple was acked)."""


@dataclass(frozen=True)
class ScenarioSettings:
    out_dir: Path
    schedulers: tuple[str, ...] = SCHEDULERS
    repeats: int = 1
    profiles: str = "default-cluster"
    victim: str | None = None
    """The machine killed; default: the spec's largest (the one a plan loads most)."""
    warmup_s: float = 30.0
    window_s: float = 40.0
    """The rate of each phase is taken over its last window_s."""
    down_s: float = 150.0
    after_s: float = 240.0
    start_timeout_s: float = 300.0
    max_spout_pending: int = 100
    spec_path: Path | None = None
    port_base: int | None = None

    def __post_init__(self) -> None:
        scenario_run.check_schedulers("machine-loss", self.schedulers, SCHEDULERS)
        if not isinstance(self.repeats, int) or not 1 <= self.repeats <= 20:
            raise BenchError(f"--repeats must be a whole number from 1 to 20, not {self.repeats!r}")
        for name, value, low in (("--window", self.window_s, 20.0), ("--warmup", self.warmup_s, 0.0),
                                 ("--down", self.down_s, self.window_s + 30.0),
                                 ("--after", self.after_s, self.window_s + 30.0)):
            if not isinstance(value, (int, float)) or value < low:
                raise BenchError(f"{name} must be at least {low:g} s, not {value!r}")


# ---- pure maths over samples ----------------------------------------------------------------------------

Key = tuple[int, str, int]
"""An executor incarnation: first task, host, port (a restarted worker counts from 0 again)."""


@dataclass(frozen=True)
class Interval:
    """What the spouts did between two readings (every incarnation's counts since the one before)."""

    at: float
    seconds: float
    emitted: int
    acked: int
    failed: int


def intervals(samples: list[CountSample]) -> list[Interval]:
    """Spout deltas between consecutive samples; an executor that restarted (new host or port, or counts that went
    back) contributes its counts from 0, so a restart never makes a negative rate."""
    found: list[Interval] = []
    last: dict[Key, tuple[int, int, int]] = {}
    for i, s in enumerate(samples):
        now: dict[Key, tuple[int, int, int]] = {}
        emitted = acked = failed = 0
        for e in s.counts.executors.values():
            if not e.is_spout or not e.host:
                continue
            key = (e.task_start, e.host, e.port)
            value = (e.emitted, e.acked, e.failed)
            before = last.get(key, (0, 0, 0))
            if any(v < b for v, b in zip(value, before)):
                before = (0, 0, 0)
            emitted += value[0] - before[0]
            acked += value[1] - before[1]
            failed += value[2] - before[2]
            now[key] = value
        last = now
        if i:
            found.append(Interval(s.at, s.at - samples[i - 1].at, emitted, acked, failed))
    return found


def spout_components(samples: list[CountSample]) -> int:
    return max((len({e.component for e in s.counts.executors.values() if e.is_spout}) for s in samples), default=1) or 1


def rate_between(steps: list[Interval], start: float, end: float, spouts: int) -> float:
    """Input rate (spout tuples/s per spout component) over (start, end]."""
    inside = [s for s in steps if start < s.at <= end]
    seconds = sum(s.seconds for s in inside)
    return sum(s.emitted for s in inside) / spouts / seconds if seconds > 0 else 0.0


def rate_series(steps: list[Interval], origin: float, spouts: int) -> list[tuple[float, float]]:
    """(seconds since ``origin``, input rate over the trailing SERIES_SPAN_S) every SERIES_STEP_S."""
    if not steps:
        return []
    points = []
    at = steps[0].at - steps[0].seconds + SERIES_SPAN_S
    while at <= steps[-1].at:
        points.append((round(at - origin, 1), round(rate_between(steps, at - SERIES_SPAN_S, at, spouts), 3)))
        at += SERIES_STEP_S
    return points


def first_at(series: list[tuple[float, float]], after_s: float, reaching: float) -> float | None:
    """The first point of the series after ``after_s`` whose rate reaches ``reaching``."""
    return next((t for t, rate in series if t > after_s and rate >= reaching), None)


def hosts_of(counts: TopologyCounts) -> set[str]:
    return {e.host for e in counts.executors.values() if e.host}


def noticed(samples: list[CountSample], killed_at: float, victim_host: str) -> float | None:
    """The first reading after the kill in which no executor is shown on the victim (moved or waiting)."""
    return next((s.at for s in samples if s.at > killed_at and s.counts.executors
                 and victim_host not in hosts_of(s.counts)), None)


def replaced(samples: list[CountSample], killed_at: float, victim_host: str, executors: int) -> float | None:
    """The first reading after the kill with all ``executors`` placed, none on the victim (Nimbus lists only the
    executors a scheduler assigned, so a count short of the one before the kill is a placement not yet made)."""
    return next((s.at for s in samples if s.at > killed_at and s.counts.placed
                 and len(s.counts.executors) >= executors and victim_host not in hosts_of(s.counts)), None)


def unplaced_while_down(run: dict[str, Any]) -> int:
    """Executors the scheduler left unplaced at the end of the down phase (from the recorded placements)."""
    placements = run.get("placements") or {}
    count = lambda where: sum(len(ms) for ms in (placements.get(where) or {}).values())  # noqa: E731
    return max(0, count("before") - count("down"))


def moved_back(samples: list[CountSample], returned_at: float, victim_host: str) -> float | None:
    """The first reading after the return with an executor on the returned machine."""
    return next((s.at for s in samples if s.at > returned_at and victim_host in hosts_of(s.counts)), None)


def tally(steps: list[Interval], start: float, end: float) -> dict[str, int]:
    inside = [s for s in steps if start < s.at <= end]
    return {"emitted": sum(s.emitted for s in inside), "acked": sum(s.acked for s in inside),
            "failed": sum(s.failed for s in inside)}


def in_flight(counts: TopologyCounts) -> int:
    """Tuple trees the live spout executors emitted and got neither an ack nor a fail for yet."""
    spouts = [e for e in counts.executors.values() if e.is_spout]
    return max(0, sum(e.emitted - e.acked - e.failed for e in spouts))


def placement(counts: TopologyCounts, machines: dict[str, str]) -> dict[str, list[str]]:
    """Component -> machine of each executor in task order (unplaced executors left out)."""
    found: dict[str, list[str]] = {}
    for e in sorted(counts.executors.values(), key=lambda e: e.task_start):
        if e.host:
            found.setdefault(e.component, []).append(machines.get(e.host, e.host))
    return found


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scheduler: median and range of each figure over its runs that finished."""
    figures = ("rate_before", "rate_down", "rate_after", "predicted_down", "smaller_cluster_plan", "recovered_s",
               "replaced_s", "moved_back_s", "failed_down", "failed_after", "gave_up", "in_flight_end")
    out: dict[str, dict[str, Any]] = {}
    for scheduler in dict.fromkeys(r["scheduler"] for r in runs):
        done = [{**r, "replaced_s": None, "recovered_s": None} if unplaced_while_down(r) else r
                for r in runs if r["scheduler"] == scheduler and not r.get("error")]
        row: dict[str, Any] = {"runs": len(done)}
        for name in figures + recovery.STEPS + RETURN_FIGURES:
            values = [v for v in (_figure(r, name) for r in done) if isinstance(v, (int, float))]
            row[name] = ({"median": round(statistics.median(values), 3), "min": min(values), "max": max(values),
                          "n": len(values)} if values else None)
        out[scheduler] = row
    return out


def return_figures(run: dict[str, Any]) -> dict[str, float | None]:
    """From a run's rate series, how the return went: ``restored_s``, when the trailing 20 s rate wholly after the
    return first reached 90% of the rate at the end; ``lowest_after``, the lowest trailing 20 s rate after the return
    (0: a stall of 20 s or more)."""
    series, returned, final = run.get("series") or [], run.get("returned_at_s"), run.get("rate_after")
    if not series or returned is None or not final:
        return {"restored_s": None, "lowest_after": None}
    after = returned + SERIES_SPAN_S - 0.05
    restored = first_at(series, after, RECOVERED_SHARE * final)
    lowest = min((rate for t, rate in series if t > after), default=None)
    return {"restored_s": None if restored is None else round(restored - returned, 1), "lowest_after": lowest}


RETURN_FIGURES = ("restored_s", "lowest_after")


def _figure(run: dict[str, Any], name: str) -> Any:
    """A run's figure by name; the recovery steps are kept together under ``recovery_steps``, the return's figures
    are computed from the series (so a result written before them has them too)."""
    if name in recovery.STEPS:
        return (run.get("recovery_steps") or {}).get(name)
    if name in RETURN_FIGURES:
        return return_figures(run)[name]
    return run.get(name)


# ---- the live run ----------------------------------------------------------------------------------------


@dataclass
class Watch:
    """Every reading of the topology, and the events, on one clock (time.monotonic)."""

    nimbus: Nimbus
    topology_id: str
    samples: list[CountSample] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)
    statuses: list[tuple[float, str]] = field(default_factory=list)

    def read(self) -> TopologyCounts | None:
        try:
            counts = self.nimbus.counts(self.topology_id)
        except NimbusError:
            return None
        now = time.monotonic()
        self.samples.append(CountSample(now, counts))
        if counts.scheduler_status and (not self.statuses or self.statuses[-1][1] != counts.scheduler_status):
            self.statuses.append((now, counts.scheduler_status))
        return counts

    def for_(self, seconds: float, what: str, reporter: Reporter) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.read()
            reporter.status(f"{what} ({left:.0f} s left)")
            time.sleep(min(SAMPLE_S, max(0.0, left)))

    def event(self, what: str, reporter: Reporter) -> float:
        now = time.monotonic()
        self.events.append((now, what))
        reporter.log(what)
        return now


def default_victim(spec: ClusterSpec) -> str:
    """The machine of the spec's largest type (most cores; the first of them)."""
    largest = max(spec.machine_types, key=lambda t: t.cpu_cores)
    return next(m for m, t in spec.machine_ids() if t.name == largest.name)


def run_once(scheduler: str, spec: RunSpec, cluster: LocalCluster, planner_url: str, profile_set, victim: str,
             settings: ScenarioSettings, reporter: Reporter) -> dict[str, Any]:
    """One scheduler's run: cluster up, Linear in, warm-up, the kill, down, the return, after, drain; cluster down."""
    record: dict[str, Any] = {"scheduler": scheduler, "victim": victim, "note": spec.note, "started_at": scenario_files.now(),
                              "error": None}
    _cluster_up(cluster, spec.cluster_scheduler, planner_url, reporter, extra_conf=NIMBUS_CONF)
    ctx = RunContext(cluster, planner_url, profile_set.name, settings.window_s, settings.warmup_s,
                     settings.start_timeout_s, reporter, base_load=machine_base_load(profile_set))
    machines = machine_of_host(ctx.handle)
    victim_host = next(h for h, m in machines.items() if m == victim)
    watch: Watch | None = None
    try:
        with connect(ctx.handle.nimbus) as nimbus:
            spec, topology_id = _submit_placed(spec, ctx, nimbus, reporter)
            placed_at = time.monotonic()
            record["note"] = spec.note
            watch = Watch(nimbus, topology_id)
            _wait_running(watch, settings.start_timeout_s, reporter, scheduler)
            origin = watch.event(f"{scheduler}: running", reporter)
            watch.for_(settings.warmup_s + settings.window_s, f"{scheduler}: warm-up and the window before", reporter)
            launch_left = placed_at + NIMBUS_CONF["nimbus.task.launch.secs"] + 10 - time.monotonic()
            if launch_left > 0:
                watch.for_(launch_left, f"{scheduler}: until Nimbus's launch grace has passed", reporter)
            before = placement(watch.samples[-1].counts, machines)
            killed = cluster.kill_machine(victim)
            killed_wall = time.time()
            killed_at = watch.event(f"{scheduler}: killed {victim} ({len(killed)} processes)", reporter)
            watch.for_(settings.down_s, f"{scheduler}: {victim} down", reporter)
            down = placement(watch.samples[-1].counts, machines)
            cluster.restart_stopped_supervisors(timeout_s=300, report=reporter.log)
            returned_at = watch.event(f"{scheduler}: {victim} back, registered with Nimbus", reporter)
            record["recovery_steps"] = _recovery_steps(cluster, topology_id, victim, killed_wall,
                                                       killed_wall + (returned_at - killed_at))
            watch.for_(settings.after_s, f"{scheduler}: after {victim} returned", reporter)
            after = placement(watch.samples[-1].counts, machines)
            end = time.monotonic()
            record["drain"] = _drain(nimbus, spec.name, watch, reporter)
        record.update(_figures(watch, origin, killed_at, returned_at, end, victim_host, settings))
        record["gave_up"] = _gave_up(cluster, topology_id)
        record["placements"] = {"before": before, "down": down, "after": after}
        record["in_flight_end"] = record["drain"]["in_flight"]
        record.update(_predictions(ctx, cluster.spec, profile_set.name, victim, before, down, after))
    except (BenchError, NimbusError, TopologyError, ClusterError, PlannerClientError, OSError) as exc:
        record["error"] = str(exc)
        reporter.log(f"[red]{scheduler}: {exc}[/red]")
    finally:
        record["nimbus_log"] = _nimbus_log(cluster)
        if watch is not None:
            record["statuses"] = [(round(t - watch.samples[0].at, 1), s) for t, s in watch.statuses] if watch.samples else []
            record["events"] = [(round(t - watch.samples[0].at, 1), e) for t, e in watch.events] if watch.samples else []
        scenario_run.kill_topologies(ctx, [(spec.name, None)], reporter, spec.name)
    record["finished_at"] = scenario_files.now()
    return record


def _submit_placed(spec: RunSpec, ctx: RunContext, nimbus: Nimbus, reporter: Reporter) -> tuple[RunSpec, str]:
    """Submit; where Storm cannot place it as declared (RAS: CPU points), again with the points scaled down."""
    for attempt in [spec] + [spec.scaled(s) for s in spec.fallback_scales]:
        topology_id, _, _ = submit(attempt, ctx)
        start = time.monotonic()
        while True:
            counts = nimbus.counts(topology_id)
            if counts.placed:
                reporter.log(f"{attempt.scheduler}: {attempt.name} placed ({attempt.note})")
                return attempt, topology_id
            if time.monotonic() - start > UNPLACED_GRACE_S and counts.scheduler_status:
                reporter.log(f"[yellow]{attempt.scheduler}: not placed ({counts.scheduler_status})[/yellow]")
                break
            if time.monotonic() - start > ctx.start_timeout_s:
                raise BenchError(f"Storm placed no executor of {attempt.name} within {ctx.start_timeout_s:g} s")
            time.sleep(2.0)
        nimbus.kill(attempt.name, wait_s=0)
        nimbus.wait_gone(attempt.name, 120)
    raise BenchError(f"Storm could not place {spec.name}, not even with its CPU points scaled down")


def _wait_running(watch: Watch, timeout_s: float, reporter: Reporter, scheduler: str) -> None:
    components = set(lookup(TOPOLOGY).component_ids)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        counts = watch.read()
        if counts is not None and counts.placed and all(counts.totals().get(c, 0) > 0 for c in components):
            return
        reporter.status(f"{scheduler}: waiting for every component to handle tuples")
        time.sleep(2.0)
    raise BenchError(f"some component of {TOPOLOGY} handled no tuple within {timeout_s:g} s")


def _drain(nimbus: Nimbus, name: str, watch: Watch, reporter: Reporter) -> dict[str, Any]:
    """Deactivate, and wait until no tuple tree is in flight (or the message timeout and two stats steps pass)."""
    nimbus.deactivate(name)
    start = time.monotonic()
    left = None
    while time.monotonic() - start < MESSAGE_TIMEOUT_S + 25:
        counts = watch.read()
        if counts is not None:
            left = in_flight(counts)
            if left == 0 and time.monotonic() - start > 10:
                break
        reporter.status(f"draining {name}: {left if left is not None else '?'} tuple trees in flight")
        time.sleep(SAMPLE_S)
    return {"in_flight": left, "seconds": round(time.monotonic() - start, 1)}


def _figures(watch: Watch, origin: float, killed_at: float, returned_at: float, end: float, victim_host: str,
             settings: ScenarioSettings) -> dict[str, Any]:
    steps = intervals(watch.samples)
    spouts = spout_components(watch.samples)
    executors = max((len(s.counts.executors) for s in watch.samples if s.at <= killed_at), default=0)
    series = rate_series(steps, origin, spouts)
    rate_down = rate_between(steps, returned_at - settings.window_s, returned_at, spouts)
    after_kill = killed_at - origin + SERIES_SPAN_S - 0.05  # the trailing window wholly after the kill
    complete = replaced(watch.samples, killed_at, victim_host, executors) is not None
    recovered = first_at(series, after_kill, RECOVERED_SHARE * rate_down) if rate_down > 0 and complete else None
    back = moved_back(watch.samples, returned_at, victim_host)

    def since(at: float | None, ref: float) -> float | None:
        return None if at is None else round(at - ref, 1)

    return {
        "rate_before": round(rate_between(steps, killed_at - settings.window_s, killed_at, spouts), 3),
        "rate_down": round(rate_down, 3),
        "rate_after": round(rate_between(steps, end - settings.window_s, end, spouts), 3),
        "noticed_s": since(noticed(watch.samples, killed_at, victim_host), killed_at),
        "replaced_s": since(replaced(watch.samples, killed_at, victim_host, executors), killed_at),
        "recovered_s": None if recovered is None else round(recovered - (killed_at - origin), 1),
        "moved_back_s": since(back, returned_at),
        "killed_at_s": round(killed_at - origin, 1), "returned_at_s": round(returned_at - origin, 1),
        "end_s": round(end - origin, 1),
        "failed_before": tally(steps, origin, killed_at)["failed"],
        "failed_down": tally(steps, killed_at, returned_at)["failed"],
        "failed_after": tally(steps, returned_at, end)["failed"],
        "acked": tally(steps, origin, end)["acked"],
        "series": series,
    }


def _recovery_steps(cluster: LocalCluster, topology_id: str, victim: str, killed_wall: float,
                    returned_wall: float) -> dict[str, Any]:
    """Where the seconds from the kill went (:mod:`bench.recovery`), from Nimbus's, the surviving supervisors' and
    their workers' logs; a log that cannot be read is said, not fatal."""
    survivors = [m.id for m in cluster.layout.machines if m.id != victim]
    try:
        logs = recovery.Logs(
            nimbus=cluster.log_file("nimbus").read_text(errors="replace"),
            supervisors=tuple(cluster.log_file(m).read_text(errors="replace") for m in survivors),
            workers=tuple(f.read_text(errors="replace") for m in survivors for f in cluster.worker_logs(m)
                          if topology_id in str(f)))
    except (OSError, ClusterError) as exc:
        return {"error": f"not read: {exc}"}
    return recovery.steps(logs, topology_id, killed_wall, returned_wall)


NIMBUS_LOG_LINES = re.compile(r"hetsched:|not alive|[Bb]lacklist")


def _nimbus_log(cluster: LocalCluster) -> list[str] | str:
    """What Nimbus said of the plugin, dead executors and the blacklist (the next run's Nimbus overwrites its log)."""
    try:
        text = cluster.log_file("nimbus").read_text(errors="replace")
    except (OSError, ClusterError) as exc:
        return f"not read: {exc}"
    return [line[:600] for line in text.splitlines() if NIMBUS_LOG_LINES.search(line)][-200:]


def _gave_up(cluster: LocalCluster, topology_id: str) -> int:
    """Tuples the spout stopped replaying (pystorm's log line), over the topology's worker logs on every machine."""
    count = 0
    for m in cluster.layout.machines:
        for log_file in cluster.worker_logs(m.id):
            if topology_id in str(log_file):
                count += len(GAVE_UP.findall(log_file.read_text(errors="replace")))
    return count


def _predictions(ctx: RunContext, spec: ClusterSpec, profile_set: str, victim: str, before: dict, down: dict,
                 after: dict) -> dict[str, Any]:
    """The planner's prediction for each phase's placement, and the best plan of the cluster without the victim."""
    entry = lookup(TOPOLOGY)
    cluster = spec.planner_cluster(ctx.base_load)
    smaller = Cluster(machine_types=cluster.machine_types, machines=[m for m in cluster.machines if m.id != victim])
    found: dict[str, Any] = {}
    with PlannerClient(ctx.planner_url) as client:
        for phase, where in (("before", before), ("down", down), ("after", after)):
            if {c: len(ms) for c, ms in where.items()} != {c: len(ms) for c, ms in before.items()} or not where:
                found[f"predicted_{phase}"] = None
                continue
            assignments = [InstanceAssignment(component=c, machine=m) for c, ms in where.items() for m in ms]
            evaluation = client.evaluate(EvaluationRequest(topology=planner_topology(entry), cluster=cluster,
                                                           profiles=ProfileRef(name=profile_set),
                                                           assignments=assignments))
            found[f"predicted_{phase}"] = round(evaluation.input_rate, 3)
        plan = client.plan(PlanRequest(topology=planner_topology(entry), cluster=smaller,
                                       profiles=ProfileRef(name=profile_set)))
        found["smaller_cluster_plan"] = round(plan.input_rate, 3)
    return found


def run_scenario(settings: ScenarioSettings, reporter: Reporter | None = None,
                 on_saved: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Every scheduler in turn, ``repeats`` rounds, one planner; the cluster restarted for every run."""
    reporter = reporter or QuietReporter()
    out = Path(settings.out_dir)
    path = out / RESULT_FILE
    spec = load_spec(settings.spec_path)
    victim = settings.victim or default_victim(spec)
    if victim not in dict(spec.machine_ids()):
        raise BenchError(f"--victim {victim!r} is no machine of the cluster; its machines are "
                         f"{', '.join(m for m, _ in spec.machine_ids())}")
    scenario_run.results_folder(out)  # after the refusals, so a refused run leaves no empty folder
    data: dict[str, Any] = {"scenario": "machine-loss", "started_at": scenario_files.now(), "settings": scenario_files.settings_dict(settings),
                            "nimbus_conf": NIMBUS_CONF, "versions": versions(), "topology": TOPOLOGY,
                            "victim": victim, "runs": [], "error": None}
    cluster = scenario_run.scenario_cluster(spec, out, settings.port_base)
    planner = PlannerService(out / "planner.db", out / "planner.log")
    with scenario_run.recorded_errors(data, cluster, planner.stop):
        storm_schedulers = tuple(dict.fromkeys("planned" if s == CONTINGENCY else s for s in settings.schedulers))
        bench_settings = BenchSettings(out_dir=out, topologies=(TOPOLOGY,), schedulers=storm_schedulers,
                                       profiles=settings.profiles, window_s=settings.window_s,
                                       warmup_s=settings.warmup_s, max_spout_pending=settings.max_spout_pending,
                                       message_timeout_s=MESSAGE_TIMEOUT_S)
        profile_set, origin = _load_profiles(bench_settings, spec)
        profile_set, _ = fill_pass_through_alphas(profile_set, [TOPOLOGY])
        data["profiles"] = origin
        if cluster.is_running():
            raise BenchError(f"a cluster already runs in {cluster.layout.home}; bring it down first")
        planner_url = planner.start()
        specs = _specs(planner_url, profile_set, spec, bench_settings, CONTINGENCY in settings.schedulers)
        data["plan"] = {"id": specs["planned"].plan_id, "parallelism": specs["planned"].parallelism}
        if CONTINGENCY in specs:
            data["contingency_plan"] = {"id": specs[CONTINGENCY].plan_id, "parallelism": specs[CONTINGENCY].parallelism}
        for round_ in range(settings.repeats):
            order = settings.schedulers if round_ % 2 == 0 else tuple(reversed(settings.schedulers))
            for scheduler in order:
                reporter.log(f"round {round_ + 1}/{settings.repeats}, {scheduler}: bringing the cluster up")
                try:
                    run = run_once(scheduler, specs[scheduler], cluster, planner_url, profile_set, victim,
                                   settings, reporter)
                finally:
                    cluster.down()
                data["runs"].append({**run, "round": round_ + 1})
                data["summary"] = summary(data["runs"])
                scenario_files.save(path, data)
                if on_saved:
                    on_saved(data)
    data["summary"] = summary(data["runs"])
    return scenario_run.finish(path, data)


def _specs(planner_url: str, profile_set, spec: ClusterSpec, settings: BenchSettings,
           contingency: bool) -> dict[str, RunSpec]:
    """Linear as the ordinary bench submits it for each scheduler (``settings.schedulers``: Storm's and ``planned``),
    from one plan for the whole cluster; with ``contingency`` also ``planned-contingency``, from that plan again with
    a contingency per machine."""
    cluster = spec.planner_cluster(machine_base_load(profile_set))
    entry = lookup(TOPOLOGY)
    request = PlanRequest(topology=planner_topology(entry), cluster=cluster, profiles=ProfileRef(name=profile_set.name))
    with PlannerClient(planner_url) as client:
        client.put_profile_set(profile_set)
        plan = client.plan(request)
        surviving = None
        if contingency:
            surviving = client.plan(request.model_copy(update={"options": PlanOptions(
                survive_loss=SurviveLoss(objective="nominal"))}))
    reference = cluster.machine_types[0]
    runs = {r.scheduler: _with_profiles(r, profile_set.name)
            for r in run_specs(settings, entry, plan, profile_set.entries, len(cluster.machines), reference.name,
                               reference.cores or 1.0, planner_url, profile_set.name)}
    if surviving is not None:
        runs[CONTINGENCY] = contingency_spec(runs["planned"], surviving)
    return runs


def contingency_spec(planned: RunSpec, surviving: Plan) -> RunSpec:
    """``planned``'s run bound to the plan with contingencies (its own counts: ``nominal`` keeps the strategy's)."""
    if not surviving.contingencies:
        raise BenchError(f"the planner stored no contingencies with plan {surviving.id}, so {CONTINGENCY} cannot run")
    machines = ", ".join(c.machine for c in surviving.contingencies)
    return replace(planned, scheduler=CONTINGENCY, name=planned.name.replace("planned", CONTINGENCY),
                   parallelism=plan_counts(surviving), plan_id=surviving.id,
                   note=f"hetsched plugin, plan {surviving.id} ({surviving.strategy}) with a contingency for each of "
                        f"{machines}, applied in the round the loss is seen")


def _with_profiles(run: RunSpec, profile_set: str) -> RunSpec:
    """``planned`` also names its profile set, so the plugin can plan it again (repair, return) beyond its stored plan."""
    if run.scheduler not in ("planned", CONTINGENCY):
        return run
    return replace(run, conf={**run.conf, keys.PROFILES: profile_set}, profiles=profile_set)


def read_result(path: Path) -> dict[str, Any]:
    return scenario_files.read_result(path, "machine-loss")
