"""The profiling experiment on a live cluster: every round submitted, stepped, sampled and killed.

One round: store the pinning plan, submit the topology under its own name with that plan, wait
until the plugin placed it as planned and every Python process runs, warm up, then step the
spout's rate (a rate file the spout re-reads) and record a sample of every task of a machine
each time that machine's worker reports new counts to Nimbus. Counts and CPU are then read at
nearly the same moment, so an interval's tuples and CPU seconds cover the same time.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from observe.counts import ExecutorCounts, TopologyCounts
from observe.machines import ClusterHandle, TaskProcess, load_average, machine_of_host, process_cpu_seconds
from observe.nimbus import Nimbus, NimbusError
from observe.progress import QuietReporter, Reporter
from observe.rates import CountSample, component_rates
from planner.client import PlannerClient, PlannerClientError
from planner.model import Topology
from spark_profiling.collector.attribution import attribute
from spark_profiling.collector.design import ACKER, Design, Round, ClusterMachine, design
from spark_profiling.collector.pinning import check_pinned, pin_request
from planner.durable import private_folder
from spark_profiling.collector.recorder import RecordWriter, TaskSample
from spark_profiling.collector.steps import (
    StepObservation, fractions, next_rate, predicted_capacity, refined_capacity, saturation,
)
from spark_profiling.errors import ProfilingError
from topologies import conf as keys
from topologies.catalog import lookup, planner_topology
from topologies.errors import TopologyError
from topologies.rate_control import RATE_FILE, write_rate
from topologies.submission import SubmitRequest
from topologies.submit import kill, running_topologies, submit

log = logging.getLogger(__name__)

PROFILING_CONF: dict[str, Any] = {"topology.acker.executors": 1}
"""One acker, pinned beside the spout, so a bolt's ``acked`` count says when Python processed a tuple
and ``topology.max.spout.pending`` bounds the tuples queued in front of a saturated machine."""


STARTUP_GUESS_S = 60.0
KILL_GUESS_S = 15.0
KILL_TIMEOUT_S = 180.0
DAEMON_CHECK_S = 10.0


@dataclass(frozen=True)
class ExperimentOptions:
    topology: str = "linear"
    """Catalog name of the topology to profile."""
    kinds: list[str] | None = None
    """Profile keys to measure (default: all of the topology's)."""
    types: list[str] | None = None
    """Machine types to measure on (default: all of the cluster's)."""
    steps: int = 5
    """Rate steps per round, the last past the estimated saturating rate."""
    spout_steps: int = 3
    """Rate steps of a spout round (its helpers do no work; the line is flat, range matters more)."""
    step_seconds: float = 20.0
    warmup_seconds: float = 20.0
    """After tuples reach every component, before the first recorded sample."""
    poll_seconds: float = 0.25
    rates: list[float] | None = None
    """Fixed spout rates (tuples/s) per step instead of fractions of the estimated saturating rate."""
    stop_at_saturation: bool = True
    conf: dict[str, Any] = field(default_factory=dict)
    """Extra topology conf (e.g. ``hetsched.cpu.ms.lowCompute``)."""
    name_prefix: str = "hetsched-profile"
    start_timeout_s: float = 300.0


@dataclass
class StepReport:
    step: int
    offered: float
    delivered: float | None = None
    handled: dict[str, float] = field(default_factory=dict)
    machine_cpu: dict[str, float] = field(default_factory=dict)
    saturated: list[str] = field(default_factory=list)
    load_average: list[float] = field(default_factory=list)


@dataclass
class RoundReport:
    index: int
    topology_name: str
    plan_id: str
    placement: dict[str, str]
    measured: dict[str, str]
    system: dict[str, str]
    capacity_guess: float
    steps: list[StepReport] = field(default_factory=list)
    startup_s: float = 0.0
    measured_s: float = 0.0
    records: int = 0


@dataclass
class ExperimentReport:
    run_id: str
    topology: str
    records_path: str
    started_at: str
    cpu_ms: dict[str, float]
    machines: dict[str, dict[str, Any]]
    pairs: list[tuple[str, str]]
    rounds: list[RoundReport] = field(default_factory=list)
    collection_s: float = 0.0
    load_average_start: list[float] = field(default_factory=list)
    load_average_end: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Machine:
    """One machine during a round: its tasks and the last sample its attribution started from."""

    spec: ClusterMachine
    tasks: dict[int, str]
    """User task id -> component."""
    marker: tuple | None = None
    last_machine_cpu: float | None = None
    last_process_cpu: dict[int, float] = field(default_factory=dict)
    last_moved: dict[int, float] = field(default_factory=dict)
    attributed: dict[int, float] = field(default_factory=dict)
    heartbeats: list[tuple[float, dict[int, ExecutorCounts], float]] = field(default_factory=list)
    """(ts, counts, machine CPU seconds) of every report seen."""


@dataclass
class _Reading:
    at: float
    machine_cpu: dict[str, float]
    process_cpu: dict[int, float | None]


def cluster_machines(cluster: ClusterHandle) -> list[ClusterMachine]:
    return [ClusterMachine(m.id, m.type, m.cores) for m in cluster.machines()]


def wait_for_processes(
    cluster: ClusterHandle,
    topology_id: str,
    tasks_by_machine: dict[str, dict[int, str]],
    timeout_s: float,
    tick: Callable[[], None] = lambda: None,
) -> dict[int, TaskProcess]:
    """Block until every task's Python process runs (``tasks_by_machine``: machine -> task id -> component)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found: dict[int, TaskProcess] = {}
        for machine_id, tasks in tasks_by_machine.items():
            found.update({t: p for t, p in cluster.task_processes(machine_id, topology_id).items()
                          if tasks.get(t) == p.component})
        missing = [f"{c} (task {t})" for tasks in tasks_by_machine.values() for t, c in tasks.items() if t not in found]
        if not missing:
            return found
        if time.monotonic() > deadline:
            raise ProfilingError(
                f"the Python processes of {', '.join(missing)} of {topology_id} did not start within {timeout_s:.0f} s "
                f"on {cluster.name} (see its worker logs)."
            )
        tick()
        time.sleep(1.0)


def configured_cpu_ms(extra_conf: dict[str, Any]) -> dict[str, float]:
    """CPU ms per tuple of each compute profile, as the topology will be submitted."""
    cpu = dict(keys.DEFAULT_CPU_MS)
    for key, value in extra_conf.items():
        if key.startswith(keys.CPU_MS_PREFIX):
            cpu[key[len(keys.CPU_MS_PREFIX):]] = float(value)
    return cpu


class Experiment:
    """A whole profiling run: the design's rounds, one after another, into one records file."""

    def __init__(
        self,
        cluster: ClusterHandle,
        planner_url: str,
        out_dir: Path,
        options: ExperimentOptions,
        reporter: Reporter | None = None,
        planner_token: str | None = None,
        run_id: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.planner_url = planner_url
        self.planner_token = planner_token
        self.out_dir = Path(out_dir)
        self.options = options
        self.reporter = reporter or QuietReporter()
        self.entry = lookup(options.topology)
        self.graph: Topology = planner_topology(self.entry)
        self.cpu_ms = configured_cpu_ms(options.conf)
        self.design: Design = design(self.graph, cluster_machines(cluster), options.kinds, options.types, self.cpu_ms)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.run_id = run_id or f"{stamp}-{self.entry.name}-{uuid.uuid4().hex[:6]}"
        self.records_path = self.out_dir / f"records-{self.run_id}.jsonl"
        self.address = cluster.nimbus
        self.inputs: dict[str, list[str]] = {c.id: [] for c in self.graph.components if c.kind == "bolt"}
        for s in self.graph.streams:
            self.inputs[s.target].append(s.source)
        self.spouts = [c.id for c in self.graph.components if c.kind == "spout"]
        self._started = 0.0
        self._startups: list[float] = []

    # ---- the whole run ----------------------------------------------------------------------

    def run(self) -> ExperimentReport:
        self._require_quotas()
        self._check_planner()
        self._check_alone()
        private_folder(self.out_dir)
        report = ExperimentReport(
            run_id=self.run_id,
            topology=self.entry.name,
            records_path=str(self.records_path),
            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            cpu_ms={p: ms for p, ms in self.cpu_ms.items() if p in self.design.profiles.values()},
            machines={m.id: {"type": m.type, "cores": m.cores} for m in self.design.machines.values()},
            pairs=self.design.pairs(),
            load_average_start=load_average(),
        )
        self._started = time.monotonic()
        steps = sorted({len(self.options.rates) if self.options.rates else self._steps_of(r) for r in self.design.rounds})
        self.reporter.log(
            f"profiling {self.entry.name}: {len(report.pairs)} pairs in {len(self.design.rounds)} rounds of up to "
            f"{' or '.join(map(str, steps))} steps of {self.options.step_seconds:g} s; records to {self.records_path}"
        )
        with RecordWriter(self.records_path, self.run_id) as writer:
            for done, round_ in enumerate(self.design.rounds):
                report.rounds.append(self._run_round(round_, writer, done))
        report.collection_s = round(time.monotonic() - self._started, 1)
        report.load_average_end = load_average()
        return report

    def _step_count(self) -> int:
        """Steps of a round, on average over the design's rounds."""
        if self.options.rates:
            return len(self.options.rates)
        return round(sum(self._steps_of(r) for r in self.design.rounds) / len(self.design.rounds))

    def _require_daemons(self) -> None:
        """Fail at once, not at a timeout, when a supervisor (or Nimbus) of the cluster has stopped."""
        stopped = self.cluster.stopped_daemons()
        if stopped:
            raise ProfilingError(
                f"{', '.join(stopped)} of {self.cluster.name} stopped while a round started "
                "(see 'hetsched cluster logs'); restart the cluster and profile again."
            )

    def _require_quotas(self) -> None:
        """Machine CPU is measured against each machine's quota: every machine must have one."""
        unlimited = [m.id for m in self.cluster.machines() if self.cluster.cpu_quota_cores(m.id) is None]
        if unlimited:
            raise ProfilingError(
                f"{', '.join(unlimited)} of {self.cluster.name} {'has' if len(unlimited) == 1 else 'have'} no CPU quota: "
                "machine CPU cannot be measured and the machines are not heterogeneous; profiling needs a cluster "
                "started with cgroups."
            )

    def _check_alone(self) -> None:
        """Refuse to measure next to other topologies: their CPU would count as ours."""
        try:
            others = [t.name for t in running_topologies(self.address)]
        except TopologyError as exc:
            raise ProfilingError(str(exc)) from None
        if others:
            raise ProfilingError(
                f"profiling needs the cluster to itself, but {', '.join(others)} "
                f"{'is' if len(others) == 1 else 'are'} running on it; kill {'it' if len(others) == 1 else 'them'} first."
            )

    def _check_planner(self) -> None:
        try:
            with PlannerClient(self.planner_url, self.planner_token) as client:
                client.health()
        except PlannerClientError as exc:
            raise ProfilingError(f"the planner the plugin reads plans from is not answering: {exc}") from None

    # ---- one round --------------------------------------------------------------------------

    def _run_round(self, round_: Round, writer: RecordWriter, rounds_done: int) -> RoundReport:
        name = f"{self.options.name_prefix}-{self.entry.name}-r{round_.index}"
        placed = ", ".join(f"{c}@{m}" for c, m in round_.placement.items())
        self.reporter.log(f"round {round_.index}/{len(self.design.rounds)}: {placed}")
        plan_id = self._store_plan(round_)
        steps = self.options.rates or fractions(self._steps_of(round_))
        cpu_ms = self._round_cpu_ms(round_)
        capacity = predicted_capacity(self.design, round_, cpu_ms)
        rate = self.options.rates[0] if self.options.rates else next_rate(0, steps, capacity, None)
        rate_file = self.out_dir / f"rate-{self.run_id}-r{round_.index}.json"
        write_rate(rate_file, rate)
        report = RoundReport(round_.index, name, plan_id, dict(round_.placement), dict(round_.measured),
                             dict(round_.system), round(capacity, 2))
        started = time.monotonic()
        starting = self._starting(rounds_done, started)
        self.reporter.status(f"round {round_.index}: submitting {name}")
        topology_id = self._submit(name, plan_id, rate_file, cpu_ms)
        processes: dict[int, TaskProcess] = {}
        try:
            machines = self._wait_placed(topology_id, round_, starting)
            self.reporter.status(f"round {round_.index}: waiting for the Python processes of {name}")
            processes = wait_for_processes(
                self.cluster, topology_id, {m: s.tasks for m, s in machines.items()}, self.options.start_timeout_s,
                tick=starting,
            )
            sampler = _Sampler(self, round_, topology_id, name, machines, processes, writer)
            self.reporter.status(f"round {round_.index}: warming up at {rate:g} tuples/s")
            sampler.warm_up(self.options.warmup_seconds, self.options.start_timeout_s, tick=starting)
            report.startup_s = round(time.monotonic() - started, 1)
            self._startups.append(report.startup_s)
            history: list[StepObservation] = []
            measuring = time.monotonic()
            for k in range(len(steps)):
                if k > 0:
                    rate = self.options.rates[k] if self.options.rates else next_rate(k, steps, capacity, rate)
                write_rate(rate_file, rate)
                self.reporter.status(f"round {round_.index}, step {k + 1}/{len(steps)}: {rate:g} tuples/s")
                step_start, step_start_wall = time.monotonic(), time.time()
                sampler.run_step(k, rate, step_start + self.options.step_seconds,
                                 tick=self._stepping(rounds_done, k, step_start))
                observation = sampler.observation(rate, step_start_wall)
                step_report = StepReport(k + 1, rate, load_average=load_average())
                if observation is not None:
                    history.append(observation)
                    step_report.delivered = round(observation.delivered, 2)
                    step_report.handled = {c: round(v, 2) for c, v in observation.handled.items()}
                    step_report.machine_cpu = {m: round(v, 1) for m, v in observation.machine_cpu.items()}
                    step_report.saturated = saturation(observation, self.inputs, self.spouts, round_)
                    capacity = refined_capacity(self.design, round_, history, capacity)
                report.steps.append(step_report)
                self.reporter.log(self._step_line(round_, step_report))
                if step_report.saturated and self.options.stop_at_saturation:
                    break
            report.measured_s = round(time.monotonic() - measuring, 1)
            report.records = sampler.records
        finally:
            self.reporter.status(f"round {round_.index}: killing {name}")
            self._kill(name, [p.pid for p in processes.values()])
            if "sampler" in locals():
                sampler.close()
        return report

    def _progress(self, rounds_done: int, left_in_round_s: float) -> None:
        """Report seconds done and the estimated total: this round's rest, then whole rounds at the pace so far."""
        startup = sum(self._startups) / len(self._startups) if self._startups else STARTUP_GUESS_S
        per_round = startup + self._step_count() * self.options.step_seconds + KILL_GUESS_S
        rounds_after = len(self.design.rounds) - rounds_done - 1
        done = time.monotonic() - self._started
        self.reporter.progress(done, done + left_in_round_s + rounds_after * per_round)

    def _starting(self, rounds_done: int, started: float) -> Callable[[], None]:
        checked = [time.monotonic()]

        def tick() -> None:
            if time.monotonic() - checked[0] >= DAEMON_CHECK_S:
                checked[0] = time.monotonic()
                self._require_daemons()
            startup = sum(self._startups) / len(self._startups) if self._startups else STARTUP_GUESS_S
            waited = time.monotonic() - started
            self._progress(rounds_done, max(5.0, startup - waited) + self._step_count() * self.options.step_seconds
                           + KILL_GUESS_S)
        return tick

    def _stepping(self, rounds_done: int, step: int, step_start: float) -> Callable[[], None]:
        def tick() -> None:
            in_step = max(0.0, self.options.step_seconds - (time.monotonic() - step_start))
            after = (self._step_count() - step - 1) * self.options.step_seconds
            self._progress(rounds_done, in_step + after + KILL_GUESS_S)
        return tick

    def _step_line(self, round_: Round, step: StepReport) -> str:
        cpu = ", ".join(f"{m} {v:.0f}%" for m, v in step.machine_cpu.items()) or "no complete interval"
        handled = ", ".join(f"{c} {v:.1f}/s" for c, v in step.handled.items())
        line = (f"round {round_.index} step {step.step}: offered {step.offered:g}/s, delivered "
                f"{'-' if step.delivered is None else f'{step.delivered:.1f}'}/s; {handled}; CPU {cpu}; "
                f"load {step.load_average[0]:g}")
        if step.saturated:
            line += "; saturated: " + "; ".join(step.saturated)
        return line

    def _store_plan(self, round_: Round) -> str:
        try:
            with PlannerClient(self.planner_url, self.planner_token) as client:
                plan = client.plan(pin_request(self.graph, round_))
        except PlannerClientError as exc:
            raise ProfilingError(f"the planner did not store the plan of round {round_.index}: {exc}") from None
        check_pinned(plan, round_)
        if plan.id is None:
            raise ProfilingError(f"the planner answered the plan of round {round_.index} without storing it (no id)")
        return plan.id

    def _round_cpu_ms(self, round_: Round) -> dict[str, float]:
        """CPU ms per tuple of each compute profile in this round: 0 for the helpers of a spout round."""
        if not round_.idle_helpers:
            return self.cpu_ms
        measured = {self.design.profiles[c] for c in round_.measured}
        return {p: (ms if p in measured else 0.0) for p, ms in self.cpu_ms.items()}

    def _steps_of(self, round_: Round) -> int:
        return self.options.spout_steps if round_.idle_helpers else self.options.steps

    def _submit(self, name: str, plan_id: str, rate_file: Path, cpu_ms: dict[str, float]) -> str:
        conf = {**PROFILING_CONF, **self.options.conf, **{keys.cpu_ms_key(p): ms for p, ms in cpu_ms.items()},
                RATE_FILE: str(rate_file.resolve())}
        request = SubmitRequest(topology=self.entry.name, name=name, plan_id=plan_id, planner_url=self.planner_url,
                                conf=conf, sample_rate=1.0)
        try:
            result = submit(request, self.address, force=True)
        except TopologyError as exc:
            raise ProfilingError(f"submitting {name} failed: {exc}") from None
        if result.topology_id is None:
            raise ProfilingError(f"Nimbus does not list {name} after submitting it.")
        return result.topology_id

    def _kill(self, name: str, pids: list[int]) -> None:
        """Kill the round's topology and wait until its Python processes are gone, so the next round runs alone."""
        try:
            kill(name, self.address, wait=True)
        except TopologyError as exc:
            self.reporter.log(f"could not kill {name}: {exc}")
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while any(process_cpu_seconds(p) is not None for p in pids) and time.monotonic() < deadline:
            time.sleep(0.5)

    def _wait_placed(self, topology_id: str, round_: Round, tick: Callable[[], None]) -> dict[str, _Machine]:
        """The round's machines with their tasks, once every executor runs where the round says."""
        hosts = machine_of_host(self.cluster)
        deadline = time.monotonic() + self.options.start_timeout_s
        try:
            with Nimbus(self.address) as nimbus:
                while not (counts := nimbus.counts(topology_id)).placed:
                    if time.monotonic() > deadline:
                        raise ProfilingError(
                            f"{topology_id} was not placed within {self.options.start_timeout_s:.0f} s "
                            f"(scheduler: {counts.scheduler_status or 'no status'})."
                        )
                    tick()
                    time.sleep(1.0)
        except NimbusError as exc:
            raise ProfilingError(str(exc)) from None
        wrong = [f"{t.component} on {hosts.get(t.host, t.host)}" for t in counts.executors.values()
                 if hosts.get(t.host) != round_.placement.get(t.component)]
        wrong += [f"{c} on {hosts.get(h, h)}" for c, system_hosts in counts.system.items() if c == ACKER
                  for h in system_hosts if hosts.get(h) != round_.system.get(c)]
        if wrong:
            raise ProfilingError(
                f"{topology_id} does not run where the pinning plan says ({'; '.join(wrong)}); Nimbus must run the "
                f"hetsched plugin with hetsched.planner.url set to the planner at {self.planner_url}. "
                f"Scheduler status: {counts.scheduler_status or 'none'}."
            )
        machines: dict[str, _Machine] = {}
        for t in counts.executors.values():
            machine_id = hosts[t.host]
            state = machines.setdefault(machine_id, _Machine(self.design.machines[machine_id], {}))
            state.tasks[t.task_start] = t.component
        return machines


class _Sampler:
    """Polls Nimbus and the CPU counters of one round; records a machine's tasks at each of its worker's reports."""

    def __init__(self, experiment: Experiment, round_: Round, topology_id: str, topology_name: str,
                 machines: dict[str, _Machine], processes: dict[int, TaskProcess], writer: RecordWriter) -> None:
        self.x = experiment
        self.round = round_
        self.topology_id = topology_id
        self.topology_name = topology_name
        self.machines = machines
        self.processes = processes
        self.writer = writer
        self.quota = {m: experiment.cluster.cpu_quota_cores(m) for m in machines}
        self.nimbus = Nimbus(experiment.address)
        self.roles = {c.id: c.kind for c in experiment.graph.components}
        self.samples: list[CountSample] = []
        """The counts of every poll of the current step (and the last one before it), by wall-clock time."""
        self.previous: _Reading | None = None
        self.recording = False
        self.rate = 0.0
        self.step = 0
        self.records = 0

    def close(self) -> None:
        self.nimbus.close()

    # ---- phases -----------------------------------------------------------------------------

    def warm_up(self, warmup_s: float, timeout_s: float, tick: Callable[[], None]) -> None:
        """Until tuples reach every component, then ``warmup_s`` more (JIT, caches, queues settle)."""
        deadline = time.monotonic() + timeout_s
        flowing_since = None
        while True:
            counts = self._poll()
            if flowing_since is None and counts and all(t.processed > 0 for t in counts.executors.values()):
                flowing_since = time.monotonic()
            if flowing_since is not None and time.monotonic() - flowing_since >= warmup_s:
                return
            if time.monotonic() > deadline:
                idle = [t.component for t in (counts.executors.values() if counts else []) if t.processed == 0]
                raise ProfilingError(
                    f"tuples did not reach {', '.join(idle) or 'every component'} of {self.topology_name} "
                    f"within {timeout_s:.0f} s."
                )
            tick()
            time.sleep(self.x.options.poll_seconds)

    def run_step(self, step: int, rate: float, until: float, tick: Callable[[], None]) -> None:
        self.recording = True
        self.rate = rate
        self.step = step + 1
        self.samples = self.samples[-1:]
        while time.monotonic() < until:
            self._poll()
            tick()
            time.sleep(self.x.options.poll_seconds)

    def observation(self, offered: float, since: float) -> StepObservation | None:
        """Rates since ``since`` (unix time), each executor between its own stats steps (:mod:`observe.rates`),
        and each machine's CPU between the first and last report of its worker."""
        samples = [s for s in self.samples if s.at >= since]
        handled = {r.component: r.per_second for r in component_rates(samples, self.roles, lambda e: e.processed)
                   if r.measured_executors}
        emitted = {r.component: r.per_second for r in component_rates(samples, self.roles, lambda e: e.emitted)
                   if r.measured_executors}
        machine_cpu: dict[str, float] = {}
        for machine_id, state in self.machines.items():
            beats = [b for b in state.heartbeats if b[0] >= since]
            if len(beats) < 2:
                continue
            (t0, _c0, m0), (t1, _c1, m1) = beats[0], beats[-1]
            if t1 > t0:
                machine_cpu[machine_id] = 100.0 * (m1 - m0) / (t1 - t0) / state.spec.cores
        if not machine_cpu:
            return None
        delivered = sum(emitted.get(s, 0.0) for s in self.x.spouts)
        return StepObservation(offered=offered, delivered=delivered, handled=handled, emitted=emitted,
                               machine_cpu=machine_cpu)

    # ---- sampling ---------------------------------------------------------------------------

    def _read(self) -> _Reading:
        return _Reading(
            at=time.time(),
            machine_cpu={m: self.x.cluster.cpu_seconds(m) for m in self.machines},
            process_cpu={task: process_cpu_seconds(p.pid) for task, p in self.processes.items()},
        )

    def _poll(self) -> TopologyCounts | None:
        try:
            counts = self.nimbus.counts(self.topology_id)
        except NimbusError as exc:  # one missed poll is no harm; the next opens a new connection
            log.debug("poll failed: %s", exc)
            return None
        now = self._read()
        self.samples.append(CountSample(now.at, counts))
        previous = self.previous or now
        self.previous = now
        for machine_id, state in self.machines.items():
            tasks = {t: counts.executors[t] for t in state.tasks if t in counts.executors}
            marker = tuple((t, c.uptime_s, c.executed, c.acked, c.emitted) for t, c in sorted(tasks.items()))
            if marker == state.marker or not tasks:
                continue
            first = state.marker is None
            state.marker = marker
            if first:
                continue  # a report seen at the first poll may be old: start from the next one
            self._heartbeat(machine_id, state, tasks, previous, now)
        return counts

    def _heartbeat(self, machine_id: str, state: _Machine, tasks: dict[int, ExecutorCounts],
                   before: _Reading, after: _Reading) -> None:
        """A new report of the machine's worker: the moment is halfway between the two polls around it."""
        ts = (before.at + after.at) / 2
        machine_cpu = (before.machine_cpu[machine_id] + after.machine_cpu[machine_id]) / 2
        process_cpu: dict[int, float] = {}
        for task in tasks:
            a, b = before.process_cpu.get(task), after.process_cpu.get(task)
            if a is None or b is None:
                self._rediscover(machine_id, state, task)
                continue
            process_cpu[task] = (a + b) / 2
        state.heartbeats.append((ts, tasks, machine_cpu))
        moved = {t: float(c.processed + c.emitted) for t, c in tasks.items()}
        if state.last_machine_cpu is not None:
            common = [t for t in process_cpu if t in state.last_process_cpu]
            shares = attribute(
                machine_cpu - state.last_machine_cpu,
                {t: process_cpu[t] - state.last_process_cpu[t] for t in common},
                {t: moved[t] - state.last_moved.get(t, moved[t]) for t in common},
            )
            for t, cpu in shares.items():
                state.attributed[t] = state.attributed.get(t, 0.0) + cpu
        state.last_machine_cpu = machine_cpu
        state.last_process_cpu = process_cpu
        state.last_moved = moved
        if self.recording:
            self._write(machine_id, state, tasks, ts, machine_cpu, process_cpu)

    def _write(self, machine_id: str, state: _Machine, tasks: dict[int, ExecutorCounts], ts: float,
               machine_cpu: float, process_cpu: dict[int, float]) -> None:
        alone = len(state.tasks) == 1
        for task, counts in tasks.items():
            if self.round.measured.get(counts.component) != machine_id or task not in process_cpu:
                continue
            if task not in state.attributed:
                continue
            process = self.processes[task]
            self.writer.write(TaskSample(
                ts=round(ts, 3),
                topology=self.topology_name,
                component=counts.component,
                profile=self.x.design.profiles[counts.component],
                task_id=task,
                pid=process.pid,
                worker_id=process.worker_id,
                machine=machine_id,
                machine_type=state.spec.type,
                machine_cores=state.spec.cores,
                rate_step=self.rate,
                executed=counts.processed,
                emitted=counts.emitted,
                cpu_seconds=round(state.attributed[task], 6),
                machine_cpu_seconds=round(machine_cpu, 6),
                machine_quota_cores=self.quota[machine_id],
                process_cpu_seconds=round(process_cpu[task], 6),
                cpu_basis="machine" if alone else "shared",
                round=self.round.index,
                step=self.step,
            ))
            self.records += 1

    def _rediscover(self, machine_id: str, state: _Machine, task: int) -> None:
        """A task's process is gone (worker restart): find its new one; its records start a new series."""
        found = self.x.cluster.task_processes(machine_id, self.topology_id)
        if task in found and found[task].component == state.tasks[task] and found[task].pid != self.processes[task].pid:
            self.x.reporter.log(f"task {task} ({state.tasks[task]}) on {machine_id} has a new process {found[task].pid}")
            self.processes[task] = found[task]
            state.attributed.pop(task, None)
            state.last_process_cpu.pop(task, None)
