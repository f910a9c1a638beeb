"""``hetsched bench --scenario multi-tenant``: three topologies share the cluster, under each scheduler in turn.

Linear (priority 0), Diamond (1) and Star (2), each with a guaranteed minimum input rate, are
submitted one after another on the default cluster. After a warm-up, one window measures every
tenant at once: its input rate (spout tuples/s), whether its minimum holds, its share of the
cluster's CPU (its workers' and their subprocesses' CPU seconds over the cluster's cores), and the
weighted throughput. Then Star becomes priority 0, the way each scheduler allows:

- ``dps``: its trigger, the priority file (``hetsched.dps.priorities.file``);
- ``resource_aware``, ``ras-priority``: Storm's rebalance with ``topology.priority`` overridden;
- ``planned``, ``planned-strict``: the planner's ``PUT /v1/tenants/{topology}/priority`` (the ledger); a
  tenant the planner refused is not in the ledger (404), so Storm's rebalance overrides its
  ``topology.priority``, with which the plugin asks for its admission again;
- ``sps`` (static by design) and ``default`` (no priorities): nothing changes, said so.

Under ``planned`` (the planner's weighted shares) and ``planned-strict`` (its strict shares; the bench
restarts its planning service in that mode) every tenant's spout is paced at the rate the ledger gives
it, as docs/model.md says a share must be kept to: the bench reads ``GET /v1/ledger`` every few seconds
and writes each tenant's rate into its ``hetsched.spout.rate.file``. A tenant whose machines no other
tenant uses (``isolated_tenants``) is not paced (``{"rate": null}`` in its rate file): pacing keeps a share from the others,
and alone on its machines it takes from no one, so flow control sets its pace as it does for the
baselines, and the ledger's rate is the least it is planned to get. The baselines' spouts are free
(flow control sets their pace), as those schedulers expect. The cluster is the spec's with 3 worker
slots per machine (``slots``), so that slots never decide who runs: every scheduler can place all three.

The bench keeps sampling: how long until each tenant is re-placed and runs again, the rates at the
end, the tuples failed since the change, and every tenant's input rate over time.

The result is ``multi-tenant.json`` in the output folder, rewritten after every scheduler; a rerun
into the same folder replaces only the schedulers it runs (e.g. ``--schedulers planned`` after the
ledger is merged) and keeps the others.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import httpx
import psutil

from bench import measure, scenario_files, scenario_run
from bench.errors import BenchError
from bench.experiment import _cluster_up, _load_profiles, versions
from bench.planner_service import PlannerService
from bench.profiles import fill_pass_through_alphas
from bench.run import RunContext, _belongs, submit
from bench.schedulers import CLUSTER_SCHEDULER, RunSpec, tenant_spec
from bench.settings import BenchSettings
from cluster.errors import ClusterError
from cluster.local import LocalCluster
from cluster.spec import MAX_SLOTS_PER_MACHINE, load_spec
from observe.counts import TopologyCounts
from observe.nimbus import Nimbus, NimbusError, connect
from observe.progress import QuietReporter, Reporter
from observe.rates import CountSample, component_rates, unmeasured
from planner.client import PlannerClient, PlannerClientError
from planner.model import PlanRequest, ProfileRef
from planner.profiles import machine_base_load
from topologies.catalog import lookup, planner_topology
from topologies.errors import TopologyError
from topologies.measure import roles
from topologies.rate_control import RATE_FILE, UNPACED, write_rate

RESULT_FILE = "multi-tenant.json"
TENANTS = (("linear", 0), ("diamond", 1), ("star", 2))
"""(topology, priority) in submission order; 0 is the most important (Storm's ``topology.priority``)."""
CHANGED = ("star", 0)
"""The priority change mid-run: Star becomes as important as Linear."""
SCHEDULERS = ("default", "resource_aware", "ras-priority", "sps", "dps", "planned", "planned-strict")
PLANNED_MODES = {"planned": "weighted", "planned-strict": "strict"}
"""hetsched's entries and the planning service's share mode each runs with (planner.tenancy)."""
DEFAULT_SLOTS = 3
"""Worker slots per machine: the default spec's 2 leave a third tenant none under the plugin (one worker per
tenant per machine), so slots, not the schedulers, would decide; 3 lets every scheduler place all three."""
PLANNER_TIMEOUT_MS = 60_000
"""Nimbus's ``hetsched.planner.timeout.ms`` under the planned entries: one plan takes 1 to 3 s on this busy 2-core
host and a tenant beside others is planned many times (docs/model.md, "Parting the machines"), up to 9 s here;
the plugin's 30 s default would do, 60 s leaves room for a slower host. The bench scores placements, not planning
latency."""
LEDGER_EVERY_S = 5.0
"""How often the bench reads the ledger and re-paces the planned tenants' spouts."""
DEFAULT_MIN_SHARE = 0.25
"""Each tenant's minimum rate, by default: this share of the rate its plan alone on the cluster predicts."""
MESSAGE_TIMEOUT_S = 30
"""Storm's default: a tuple lost in the re-placement fails (and is counted) within the after-phase."""
SAMPLE_S = 1.0
SERIES_STEP_S = 5.0
SERIES_SPAN_S = 20.0
"""The rate over time: spout tuples over the trailing 20 s (two stats steps), every 5 s."""
UNPLACED_GRACE_S = 45.0


def priority_weight(priority: int) -> float:
    """A tenant's weight in the weighted throughput: 1 / (1 + priority) (priority 0 weighs 1, 1 a half, 2 a third)."""
    return 1.0 / (1.0 + priority)


@dataclass(frozen=True)
class ScenarioSettings:
    out_dir: Path
    schedulers: tuple[str, ...] = SCHEDULERS
    profiles: str = "default-cluster"
    min_rates: dict[str, float] = field(default_factory=dict)
    """Topology -> guaranteed input rate, tuples/s; a tenant not named gets DEFAULT_MIN_SHARE of its solo plan's."""
    window_s: float = 30.0
    warmup_s: float = 20.0
    after_s: float = 120.0
    """How long the bench watches after the priority change; the rates after are those of its last window_s."""
    start_timeout_s: float = 300.0
    max_spout_pending: int = 100
    spec_path: Path | None = None
    port_base: int | None = None
    slots: int = DEFAULT_SLOTS
    """Worker slots of every machine (the spec's own are replaced)."""

    def __post_init__(self) -> None:
        if not isinstance(self.slots, int) or not 1 <= self.slots <= MAX_SLOTS_PER_MACHINE:
            raise BenchError(f"slots must be a whole number from 1 to {MAX_SLOTS_PER_MACHINE}, not {self.slots!r}")
        scenario_run.check_schedulers("multi-tenant", self.schedulers, SCHEDULERS)
        for name, value, low in (("--window", self.window_s, 15.0), ("--warmup", self.warmup_s, 0.0),
                                 ("--after", self.after_s, self.window_s)):
            if not isinstance(value, (int, float)) or value < low:
                raise BenchError(f"{name} must be at least {low:g} s, not {value!r}")
        bad = {t: r for t, r in self.min_rates.items() if t not in dict(TENANTS) or not r > 0}
        if bad:
            raise BenchError(f"--min-rates: {', '.join(f'{t}={r}' for t, r in bad.items())} is not a positive rate "
                             f"of {', '.join(dict(TENANTS))}")


def parse_min_rates(text: str | None) -> dict[str, float]:
    """``"linear=8,star=2.5"`` -> {"linear": 8.0, "star": 2.5}; a fault is one sentence."""
    rates: dict[str, float] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        try:
            rates[name.strip().lower()] = float(value)
        except ValueError:
            raise BenchError(f"--min-rates wants topology=tuples/s pairs, not {part.strip()!r}") from None
        if not sep:
            raise BenchError(f"--min-rates wants topology=tuples/s pairs, not {part.strip()!r}")
    return rates


# ---- pure maths over samples ----------------------------------------------------------------------------


def placement_of(counts: TopologyCounts) -> dict[int, str] | None:
    """Executor (first task) -> host:port, or None while any executor is unplaced."""
    if not counts.placed:
        return None
    return {task: f"{e.host}:{e.port}" for task, e in counts.executors.items()}


def spout_total(counts: TopologyCounts, field_name: str) -> int:
    return sum(getattr(e, field_name) for e in counts.executors.values() if e.is_spout)


def rate_series(samples: list[CountSample], origin: float) -> list[tuple[float, float]]:
    """(seconds since ``origin``, input rate over the trailing SERIES_SPAN_S) every SERIES_STEP_S.

    The input rate as in the window: tuples/s per spout component (the mean over a topology's spouts)."""
    if not samples:
        return []
    points: list[tuple[float, float]] = []
    at = samples[0].at + SERIES_SPAN_S
    while at <= samples[-1].at:
        now = max((s for s in samples if s.at <= at), key=lambda s: s.at)
        then = max((s for s in samples if s.at <= at - SERIES_SPAN_S), key=lambda s: s.at)
        seconds = now.at - then.at
        spouts = len({e.component for e in now.counts.executors.values() if e.is_spout}) or 1
        emitted = spout_total(now.counts, "emitted") - spout_total(then.counts, "emitted")
        rate = emitted / spouts / seconds if seconds > 0 else 0.0
        points.append((round(at - origin, 1), round(max(0.0, rate), 3)))
        at += SERIES_STEP_S
    return points


def window_rate(samples: list[CountSample], start: float, end: float, component_roles: dict[str, str]) -> dict[str, Any]:
    """A tenant's rates between two moments: input (spout) and sink tuples/s, which components did nothing."""
    inside = [s for s in samples if start <= s.at <= end and s.counts.executors]
    if len(inside) < 2:
        return {"input_rate": 0.0, "sink_throughput": 0.0, "idle": list(component_roles)}
    rates = component_rates(inside, component_roles)
    spouts = [r.per_second for r in rates if r.role == "spout"]
    return {
        "input_rate": round(sum(spouts) / len(spouts), 3) if spouts else 0.0,
        "sink_throughput": round(sum(r.per_second for r in rates if r.role == "sink"), 3),
        "idle": unmeasured(rates),
    }


def replacement(samples: list[CountSample], changed_at: float) -> dict[str, Any]:
    """When, after the change, the tenant lost its workers (``unplaced_s``), when its placement first differed
    (fully placed) and when its spouts moved again."""
    before = [s for s in samples if s.at <= changed_at]
    old = placement_of(before[-1].counts) if before else None
    unplaced_at = None
    for s in samples:
        if s.at <= changed_at:
            continue
        now = placement_of(s.counts)
        if now is None and old is not None and unplaced_at is None:
            unplaced_at = s.at
        if now is not None and now != old:
            moved_at = s.at
            base = spout_total(s.counts, "emitted")
            resumed = next((t.at for t in samples if t.at > s.at and spout_total(t.counts, "emitted") > base), None)
            return {"moved": True, "replaced_s": round(moved_at - changed_at, 1),
                    "running_again_s": None if resumed is None else round(resumed - changed_at, 1),
                    "unplaced_s": None if unplaced_at is None else round(unplaced_at - changed_at, 1)}
    return {"moved": False, "replaced_s": None, "running_again_s": None,
            "unplaced_s": None if unplaced_at is None else round(unplaced_at - changed_at, 1)}


def failed_since(samples: list[CountSample], changed_at: float) -> int:
    """Tuple trees the spouts failed (timeouts included) from the change to the last sample that had spouts.

    A tenant whose workers are all taken away loses its tuples in flight uncounted (at most
    ``topology.max.spout.pending`` per spout task): ``unplaced_s`` says when that happened."""
    before = [s for s in samples if s.at <= changed_at]
    with_spouts = [s for s in samples if any(e.is_spout for e in s.counts.executors.values())]
    after = with_spouts[-1] if with_spouts else None
    if not before or after is None:
        return 0
    return max(0, spout_total(after.counts, "failed") - spout_total(before[-1].counts, "failed"))


def ledger_rates(ledger: dict[str, Any], names: list[str]) -> dict[str, float]:
    """The rate the ledger gives each of ``names``: its share (0 when refused); a tenant it does not list or leaves
    unbounded (``rate`` null) is left out, so its spout keeps its pace."""
    rates = {}
    for t in ledger.get("tenants", []):
        if t["topology"] in names and (t["status"] == "refused" or t.get("rate") is not None):
            rates[t["topology"]] = 0.0 if t["status"] == "refused" else float(t["rate"])
    return rates


def isolated_tenants(ledger: dict[str, Any]) -> set[str]:
    """The admitted tenants that share none of their machines (by the ledger's loads) with another tenant."""
    users: dict[str, set[str]] = {}
    for m in ledger.get("machines", []):
        users[m["id"]] = {t for t, load in m.get("loads", {}).items() if load > 0}
    admitted = {t["topology"] for t in ledger.get("tenants", []) if t["status"] != "refused"}
    return {t for t in admitted
            if any(t in u for u in users.values()) and all(u == {t} for u in users.values() if t in u)}


def weighted_throughput(rates: dict[str, float], priorities: dict[str, int]) -> float:
    """Sum over tenants of priority_weight(priority) x input rate, tuples/s."""
    return round(sum(priority_weight(priorities[t]) * r for t, r in rates.items()), 3)


# ---- the priority change ----------------------------------------------------------------------------------


def rebalance_conf(nimbus: Nimbus, name: str, overrides: dict[str, Any], wait_s: int = 0) -> None:
    """Storm's rebalance of ``name`` with topology conf overrides (``storm rebalance -t``)."""
    nimbus.rebalance(name, wait_s, conf_overrides=overrides)


def change_priority(scheduler: str, name: str, priority: int, nimbus: Nimbus, planner_url: str,
                    dps_file: Path) -> str:
    """Make the tenant ``name`` priority ``priority`` the way ``scheduler`` allows; what was done, one sentence."""
    if scheduler == "dps":
        current = json.loads(dps_file.read_text()) if dps_file.is_file() else {}
        dps_file.write_text(json.dumps({**current, name: priority}))
        return f"DPS trigger: {dps_file.name} now gives {name} priority {priority}"
    if scheduler in ("resource_aware", "ras-priority"):
        rebalance_conf(nimbus, name, {"topology.priority": priority})
        return f"Storm rebalance of {name} with topology.priority {priority}"
    if scheduler in PLANNED_MODES:
        try:
            answer = httpx.put(f"{planner_url}/v1/tenants/{name}/priority", json={"priority": priority}, timeout=30)
        except httpx.HTTPError as exc:
            return f"the planner did not take the change: {exc}"
        if answer.status_code == 404:
            # not in the ledger (refused at admission): the plugin asks the planner again every round with the
            # topology's own topology.priority, so that is where the new priority goes
            rebalance_conf(nimbus, name, {"topology.priority": priority})
            return (f"the planner has no tenant {name} (404: refused at admission): Storm rebalance of {name} with "
                    f"topology.priority {priority}, so the plugin asks for its admission again at that priority")
        return f"planner PUT /v1/tenants/{name}/priority answered {answer.status_code}"
    if scheduler == "sps":
        return "SPS is static: priorities as submitted, nothing changed"
    return "Storm's DefaultScheduler has no priorities: nothing changed"


# ---- the live run ----------------------------------------------------------------------------------------


@dataclass
class TenantRun:
    topology: str
    priority: int
    min_rate: float
    name: str
    note: str
    topology_id: str | None = None
    status: str = "not submitted"
    sched_status: str = ""
    samples: list[CountSample] = field(default_factory=list)
    cpu_before: float = 0.0
    cpu_after: float = 0.0
    refusal: str = ""
    """The last scheduler status that said the tenant is not admitted (a status that follows may say it waits)."""
    rate_file: Path | None = None
    """Planned entries: the spout's ``hetsched.spout.rate.file``, which the bench keeps at the ledger's rate."""
    paced: list[tuple[float, float]] = field(default_factory=list)
    """(monotonic time, tuples/s) of every rate written into ``rate_file``; UNPACED where it was left unpaced."""
    joint: list[dict[str, Any]] = field(default_factory=list)
    """Each time the planner planned it again beside a newcomer: the plugin's status then, and when it was
    placed by the new plan (monotonic seconds; None while not yet)."""


class LedgerPacer:
    """Paces the planned tenants' spouts at their ledger rates: reads the ledger every LEDGER_EVERY_S, writes changes."""

    def __init__(self, planner_url: str, tenants: list[TenantRun]) -> None:
        self.url = planner_url
        self.tenants = [t for t in tenants if t.rate_file is not None]
        self.next_at = 0.0
        self.last: dict[str, Any] | None = None
        self.fault = ""

    def follow(self, now: float, force: bool = False) -> None:
        if not self.tenants or (now < self.next_at and not force):
            return
        self.next_at = now + LEDGER_EVERY_S
        try:
            answer = httpx.get(f"{self.url}/v1/ledger", timeout=10)
            answer.raise_for_status()
            self.last = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            self.fault = f"reading the ledger failed: {exc}"
            return
        rates = ledger_rates(self.last, [t.name for t in self.tenants])
        alone = isolated_tenants(self.last)
        for t in self.tenants:
            rate = UNPACED if t.name in alone else rates.get(t.name)
            if rate is not None and t.rate_file is not None and (not t.paced or t.paced[-1][1] != round(rate, 3)):
                write_rate(t.rate_file, rate)
                t.paced.append((now, round(rate, 3)))


def _tenant_cpu(topology_id: str | None) -> float:
    """CPU seconds so far of the tenant's workers and their subprocesses (streamparse's Python components)."""
    if topology_id is None:
        return 0.0
    total = 0.0
    for p in psutil.process_iter(["cmdline"]):
        if _belongs(p, topology_id):
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    return total


def _read(nimbus: Nimbus, tenants: list[TenantRun], pacer: LedgerPacer | None = None) -> None:
    now = time.monotonic()
    if pacer is not None:
        pacer.follow(now)
    for t in tenants:
        if t.topology_id is None:
            continue
        try:
            counts = nimbus.counts(t.topology_id)
        except NimbusError:
            continue
        t.samples.append(CountSample(now, counts))
        t.sched_status = counts.scheduler_status or t.sched_status
        if "not admitted" in t.sched_status:
            t.refusal = t.sched_status
        _follow_joint(t, now)


JOINT_STATUS = "hetsched: planned again beside "
"""The plugin's status of a running topology the planner planned again beside a newcomer, until it is re-placed."""


def _follow_joint(t: TenantRun, now: float) -> None:
    """Notes a joint re-plan of ``t`` when the plugin's status first names it, and when the new plan placed it."""
    pending = t.joint[-1] if t.joint and t.joint[-1]["placed_at"] is None else None
    if t.sched_status.startswith(JOINT_STATUS):
        if pending is None or pending["status"] != t.sched_status:
            t.joint.append({"status": t.sched_status, "seen_at": now, "placed_at": None})
    elif pending is not None and "bound plan" in t.sched_status and t.samples and t.samples[-1].counts.placed:
        pending["placed_at"] = now


def _wait_joint(nimbus: Nimbus, tenants: list[TenantRun], timeout_s: float, reporter: Reporter, scheduler: str,
                pacer: LedgerPacer) -> None:
    """Until every tenant the planner planned again beside a newcomer is placed by its new plan (drained first)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _read(nimbus, tenants, pacer)
        waiting = [t.name for t in tenants if t.joint and t.joint[-1]["placed_at"] is None]
        if not waiting:
            return
        reporter.status(f"{scheduler}: waiting for {', '.join(waiting)} to be re-placed beside the newcomer")
        time.sleep(SAMPLE_S)
    reporter.log(f"[yellow]{scheduler}: a tenant planned again was not re-placed within {timeout_s:g} s; "
                 "measuring anyway[/yellow]")


def _watch(nimbus: Nimbus, tenants: list[TenantRun], seconds: float, what: str, reporter: Reporter,
           pacer: LedgerPacer | None = None) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        _read(nimbus, tenants, pacer)
        reporter.status(f"{what} ({left:.0f} s left)")
        time.sleep(min(SAMPLE_S, max(0.0, left)))


def run_scheduler(scheduler: str, cluster: LocalCluster, planner_url: str, profile_set, plans: dict, min_rates: dict,
                  settings: ScenarioSettings, reporter: Reporter) -> dict[str, Any]:
    """One scheduler's part: cluster up, the tenants in, window, priority change, after; the cluster down."""
    out = Path(settings.out_dir)
    dps_file = out / "dps-priorities.json"
    dps_file.unlink(missing_ok=True)
    bench_settings = BenchSettings(out_dir=out, window_s=max(15.0, settings.window_s), warmup_s=settings.warmup_s,
                                   max_spout_pending=settings.max_spout_pending, message_timeout_s=MESSAGE_TIMEOUT_S)
    cluster_model = cluster.spec.planner_cluster(machine_base_load(profile_set))
    reference = cluster_model.machine_types[0]
    specs: list[RunSpec] = [
        tenant_spec(scheduler, lookup(topology), plans[topology], priority, min_rates[topology], bench_settings,
                    profile_set.entries, reference.name, reference.cores or 1.0, profile_set.name)
        for topology, priority in TENANTS]
    rates_dir = out / "rates"
    if scheduler in PLANNED_MODES:
        rates_dir.mkdir(exist_ok=True)
        specs = [replace(s, conf={**s.conf, "hetsched.planner.url": planner_url,
                                  RATE_FILE: str(rates_dir / f"{s.name}.json")}) for s in specs]
    tenants = [TenantRun(s.topology, p, min_rates[s.topology], s.name, s.note,
                         rate_file=rates_dir / f"{s.name}.json" if scheduler in PLANNED_MODES else None)
               for s, (_, p) in zip(specs, TENANTS)]
    for t in tenants:
        if t.rate_file is not None:
            t.rate_file.unlink(missing_ok=True)
    pacer = LedgerPacer(planner_url, tenants)
    ledgers: dict[str, Any] = {}
    machine_cpu: dict[str, dict[str, float]] = {}
    record: dict[str, Any] = {"scheduler": scheduler, "started_at": scenario_files.now(), "error": None}
    _cluster_up(cluster, CLUSTER_SCHEDULER[scheduler], planner_url, reporter, dps_priorities=dps_file,
                extra_conf={"hetsched.planner.timeout.ms": PLANNER_TIMEOUT_MS} if scheduler in PLANNED_MODES else None)
    ctx = RunContext(cluster, planner_url, profile_set.name, settings.window_s, settings.warmup_s,
                     settings.start_timeout_s, reporter)
    cores = sum(m.cores for m in ctx.handle.machines())
    try:
        with connect(ctx.handle.nimbus) as nimbus:
            for spec, tenant in zip(specs, tenants):
                reporter.status(f"{scheduler}: submitting {spec.name}")
                tenant.topology_id, _, _ = submit(spec, ctx)
                tenant.status = "submitted"
                reporter.log(f"{scheduler}: submitted {spec.name} (priority {tenant.priority}, "
                             f"minimum {tenant.min_rate:.1f} tuples/s): {spec.note}")
                _wait_placed(nimbus, tenant, reporter, scheduler)
                pacer.follow(time.monotonic(), force=True)
                _read(nimbus, tenants, pacer)
                if scheduler in PLANNED_MODES:
                    _wait_joint(nimbus, tenants, settings.start_timeout_s, reporter, scheduler, pacer)
            _wait_running(nimbus, tenants, settings.start_timeout_s, reporter, scheduler)
            _watch(nimbus, tenants, settings.warmup_s, f"{scheduler}: warming up", reporter, pacer)
            pacer.follow(time.monotonic(), force=True)
            ledgers["window"] = pacer.last
            window_start = time.monotonic()
            for t in tenants:
                t.cpu_before = _tenant_cpu(t.topology_id)
            machines_before = _machine_seconds(ctx)
            _watch(nimbus, tenants, settings.window_s, f"{scheduler}: measuring every tenant", reporter, pacer)
            window_end = time.monotonic()
            machine_cpu["window"] = _machine_pct(ctx, machines_before, window_end - window_start)
            for t in tenants:
                t.cpu_after = _tenant_cpu(t.topology_id)
            changed_name = next(t.name for t in tenants if t.topology == CHANGED[0])
            change_note = change_priority(scheduler, changed_name, CHANGED[1], nimbus, planner_url, dps_file)
            changed_at = time.monotonic()
            pacer.follow(changed_at, force=True)
            reporter.log(f"{scheduler}: priority change: {change_note}")
            _watch(nimbus, tenants, settings.after_s - settings.window_s, f"{scheduler}: after the priority change",
                   reporter, pacer)
            machines_before = _machine_seconds(ctx)
            last_start = time.monotonic()
            _watch(nimbus, tenants, settings.window_s, f"{scheduler}: after the priority change, last window",
                   reporter, pacer)
            end = time.monotonic()
            machine_cpu["after"] = _machine_pct(ctx, machines_before, end - last_start)
            ledgers["after"] = pacer.last
            changed = next(t for t in tenants if t.topology == CHANGED[0])
            if changed.topology_id is not None:
                record["changed_conf_priority"] = nimbus.topology_conf(changed.topology_id).get("topology.priority")
    except (BenchError, NimbusError, TopologyError, ClusterError, PlannerClientError, OSError) as exc:
        record["error"] = str(exc)
        reporter.log(f"[red]{scheduler}: {exc}[/red]")
        window_start = window_end = changed_at = end = time.monotonic()
        change_note = "not reached"
    finally:
        scenario_run.kill_topologies(ctx, [(t.name, t.topology_id) for t in tenants if t.topology_id], reporter,
                                     "every tenant")
    if pacer.fault:
        reporter.log(f"[yellow]{scheduler}: {pacer.fault}[/yellow]")
    priorities_after = {t.topology: (CHANGED[1] if t.topology == CHANGED[0] else t.priority) for t in tenants}
    origin = window_start
    rows = []
    for t in tenants:
        roles_ = roles(lookup(t.topology))
        before = window_rate(t.samples, window_start, window_end, roles_)
        after = window_rate(t.samples, end - settings.window_s, end, roles_)
        window = window_end - window_start
        rows.append({
            "topology": t.topology, "name": t.name, "topology_id": t.topology_id, "note": t.note,
            "priority": t.priority, "priority_after": priorities_after[t.topology], "min_rate": round(t.min_rate, 3),
            "sched_status": t.sched_status, "status": t.status, "refusal": t.refusal,
            "input_rate": before["input_rate"], "sink_throughput": before["sink_throughput"], "idle": before["idle"],
            "min_met": before["input_rate"] >= t.min_rate,
            "ledger_rate": ledger_rates(ledgers.get("window") or {}, [t.name]).get(t.name),
            "cpu_share": round((t.cpu_after - t.cpu_before) / window / cores, 4) if window > 0 and cores else 0.0,
            "after": {**after, "min_met": after["input_rate"] >= t.min_rate,
                      "ledger_rate": ledger_rates(ledgers.get("after") or {}, [t.name]).get(t.name),
                      "paced_again_s": next((round(at - changed_at, 1) for at, _ in t.paced if at > changed_at), None),
                      **replacement(t.samples, changed_at), "failed_since_change": failed_since(t.samples, changed_at)},
            "series": rate_series(t.samples, origin),
            "joint_replans": [{"status": j["status"], "at_s": round(j["seen_at"] - origin, 1),
                               "placed_after_s": None if j["placed_at"] is None else round(j["placed_at"] - j["seen_at"], 1)}
                              for j in t.joint],
        })
    record.update({
        "tenants": rows, "cores": cores, "window_s": round(window_end - window_start, 1),
        "machine_cpu": machine_cpu, "ledger": ledgers,
        "paced": {t.topology: [(round(at - origin, 1), r if r != UNPACED else None) for at, r in t.paced]
                  for t in tenants if t.rate_file},
        "change": {"topology": CHANGED[0], "priority": CHANGED[1], "how": change_note,
                   "at_s": round(changed_at - origin, 1)},
        "weighted_throughput": weighted_throughput({r["topology"]: r["input_rate"] for r in rows},
                                                   {r["topology"]: r["priority"] for r in rows}),
        "weighted_throughput_after": weighted_throughput({r["topology"]: r["after"]["input_rate"] for r in rows},
                                                         priorities_after),
        "minimums_met": sum(r["min_met"] for r in rows),
        "failed_since_change": sum(r["after"]["failed_since_change"] for r in rows),
        "finished_at": scenario_files.now(),
    })
    return record


def _machine_seconds(ctx: RunContext) -> dict[str, float]:
    return {m.id: ctx.handle.cpu_seconds(m.id) for m in ctx.handle.machines()}


def _machine_pct(ctx: RunContext, before: dict[str, float], seconds: float) -> dict[str, float]:
    """Each machine's CPU since ``before``, percent of its quota (its cgroup's usage)."""
    after = _machine_seconds(ctx)
    return {c.machine: round(c.utilization, 1) for c in measure.machine_cpu(before, after, seconds, ctx.machines)}


def _wait_placed(nimbus: Nimbus, tenant: TenantRun, reporter: Reporter, scheduler: str) -> None:
    """Until Nimbus placed every executor of the tenant, or it says (after a grace) it will not: then on."""
    start = time.monotonic()
    while True:
        _read(nimbus, [tenant])
        last = tenant.samples[-1].counts if tenant.samples else None
        if last is not None and last.placed:
            tenant.status = "placed"
            return
        if time.monotonic() - start > UNPLACED_GRACE_S:
            tenant.status = "not placed"
            reporter.log(f"[yellow]{scheduler}: {tenant.name} not placed after {UNPLACED_GRACE_S:g} s: "
                         f"{tenant.sched_status or 'no scheduler status'}[/yellow]")
            return
        reporter.status(f"{scheduler}: waiting for {tenant.name} to be placed")
        time.sleep(2.0)


def _wait_running(nimbus: Nimbus, tenants: list[TenantRun], timeout_s: float, reporter: Reporter, scheduler: str) -> None:
    """Until every placed tenant's components all handled tuples (a tenant left without nodes is not waited for)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _read(nimbus, tenants)
        waiting = [t for t in tenants if t.status in ("placed", "running")
                   and t.samples and not all(t.samples[-1].counts.totals().get(c, 0) > 0
                                             for c in roles(lookup(t.topology)))]
        for t in tenants:
            if t.status == "placed" and t not in waiting:
                t.status = "running"
        if not waiting:
            return
        reporter.status(f"{scheduler}: waiting for {', '.join(t.name for t in waiting)} to handle tuples")
        time.sleep(2.0)
    reporter.log(f"[yellow]{scheduler}: some tenants handled no tuple within {timeout_s:g} s; measuring anyway[/yellow]")


def run_scenario(settings: ScenarioSettings, reporter: Reporter | None = None,
                 on_saved: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Every scheduler of ``settings`` in turn on one cluster (restarted per scheduler) and one planner; the result."""
    reporter = reporter or QuietReporter()
    out = Path(settings.out_dir).resolve()  # Nimbus (DPS's priority file) and the spouts (rate files) read in it
    settings = replace(settings, out_dir=out)  # by absolute path, from their own working folders
    spec = with_slots(load_spec(settings.spec_path), settings.slots)
    scenario_run.results_folder(out)  # after the spec's refusals, so a refused run leaves no empty folder
    path = out / RESULT_FILE
    data: dict[str, Any] = read_result(path) if path.is_file() else {"scenario": "multi-tenant", "runs": {}}
    data.update({"started_at": scenario_files.now(), "settings": scenario_files.settings_dict(settings), "versions": versions(), "error": None,
                 "tenants": [{"topology": t, "priority": p} for t, p in TENANTS],
                 "change": {"topology": CHANGED[0], "priority": CHANGED[1]}})
    cluster = scenario_run.scenario_cluster(spec, out, settings.port_base)
    planner = PlannerService(out / "planner.db", out / "planner.log")
    with scenario_run.recorded_errors(data, cluster, lambda: planner.stop()):  # the planner last started
        profile_set, origin = _load_profiles(BenchSettings(out_dir=out, profiles=settings.profiles), spec)
        profile_set, _ = fill_pass_through_alphas(profile_set, [t for t, _ in TENANTS])
        data["profiles"] = origin
        if cluster.is_running():
            raise BenchError(f"a cluster already runs in {cluster.layout.home}; bring it down first")
        planner_url = planner.start()
        plans, min_rates = _plans(planner_url, profile_set, spec, settings)
        data["solo_plans"] = {t: {"id": p.id, "input_rate": round(p.input_rate, 3), "strategy": p.strategy}
                              for t, p in plans.items()}
        data["min_rates"] = {t: round(r, 3) for t, r in min_rates.items()}
        for scheduler in settings.schedulers:
            mode = PLANNED_MODES.get(scheduler)
            if mode is not None and mode != planner.share_mode:
                planner.stop()
                planner = PlannerService(out / "planner.db", out / "planner.log", share_mode=mode)
                planner_url = planner.start()
                reporter.log(f"planning service restarted with {mode} shares at {planner_url}")
            reporter.log(f"scheduler {scheduler}: bringing the cluster up")
            try:
                data["runs"][scheduler] = run_scheduler(scheduler, cluster, planner_url, profile_set, plans,
                                                        min_rates, settings, reporter)
            finally:
                cluster.down()
            scenario_files.save(path, data)
            if on_saved:
                on_saved(data)
    return scenario_run.finish(path, data)


def with_slots(spec, slots: int):
    """The spec with ``slots`` worker slots on every machine type."""
    return spec.model_copy(update={"machine_types": [t.model_copy(update={"slots": slots})
                                                     for t in spec.machine_types]})


def _plans(planner_url: str, profile_set, spec, settings: ScenarioSettings):
    """Each tenant's plan alone on the whole cluster: its instance counts, and its default minimum rate."""
    cluster_model = spec.planner_cluster(machine_base_load(profile_set))
    plans, min_rates = {}, {}
    with PlannerClient(planner_url) as client:
        client.put_profile_set(profile_set)
        for topology, _ in TENANTS:
            entry = lookup(topology)
            plans[topology] = client.plan(PlanRequest(topology=planner_topology(entry), cluster=cluster_model,
                                                      profiles=ProfileRef(name=profile_set.name)))
            min_rates[topology] = settings.min_rates.get(topology, DEFAULT_MIN_SHARE * plans[topology].input_rate)
    return plans, min_rates


def read_result(path: Path) -> dict[str, Any]:
    return scenario_files.read_result(path, "multi-tenant")
