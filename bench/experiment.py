"""The whole bench: its planner, the cluster, the plans, every run, and the cluster down again, always.

Runs are grouped by what Nimbus must run: the plugin cluster first (``default``,
``default-naive`` and ``planned``; the plugin schedules a topology without a
profile set exactly like Storm's DefaultScheduler), then, if asked for, the same
cluster restarted with Storm's Resource Aware Scheduler. Whatever happens (a
failed run, a lost supervisor, Ctrl-C, SIGTERM), the cluster and the planner are
stopped and the results so far are written.

The result is written as the bench goes (``bench.json`` in the output folder, atomically, 0600 in a
0700 folder): when it starts, once its runs are laid out, after every run, and at the end with
``complete`` true. A bench killed outright (SIGKILL, power) keeps every run it finished; the cluster
it started is then left running (``hetsched cluster down --home OUT/cluster --purge``).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import getpass
import os
import platform
import signal
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from bench import report
from bench.bounds import fluid_bound, full_quota_bound
from bench.errors import BenchError
from planner.durable import private_folder, write_atomic
from bench.planner_service import PlannerService
from bench.profiles import fill_pass_through_alphas, load_profile_set, require_pairs
from bench.run import BenchCluster, RunContext, RunResult, run, utc_now
from bench.schedulers import (PHASES, POOLS_FILE, RunSpec, nimbus_setup, plan_request, run_specs, user_pools,
                              weightable, weighted_fallback)
from bench.settings import BenchSettings
from cluster.errors import ClusterError
from cluster.handle import LocalClusterHandle
from cluster.layout import port_span
from cluster.local import LocalCluster
from cluster.ports import free_port_base
from cluster.spec import ClusterSpec, load_spec
from cluster.storm_home import STORM_VERSION
from observe.progress import QuietReporter, Reporter
from planner.client import TOKEN_ENV, PlannerClient, PlannerClientError
from planner.model import Plan, ProfileSet
from planner.errors import PlanningError
from planner.profiles import MACHINE_BASE_LOAD, fill_by_machine_speed, machine_base_load
from topologies.catalog import lookup
from topologies.errors import TopologyError

REPO = Path(__file__).resolve().parents[1]
CLUSTER_START_TIMEOUT_S = 420.0


@dataclass
class BenchResult:
    settings: BenchSettings
    started_at: str
    spec: ClusterSpec
    finished_at: str | None = None
    planner_url: str | None = None
    cluster_home: Path | None = None
    profile_set: ProfileSet | None = None
    profile_origin: str | None = None
    plans: dict[str, Plan] = field(default_factory=dict)
    weighted_plans: dict[str, Plan] = field(default_factory=dict)
    """Per topology, the plan made with weighted shares that ``planned-weighted`` runs."""
    bounds: dict[str, float | None] = field(default_factory=dict)
    """Per topology, the LP fluid bound on R (:func:`bench.bounds.fluid_bound`)."""
    compute_bounds: dict[str, float | None] = field(default_factory=dict)
    """Per topology, the compute bound on R (:func:`bench.bounds.full_quota_bound`)."""
    runs: list[RunResult] = field(default_factory=list)
    expected_runs: list[tuple[str, str]] = field(default_factory=list)
    """(topology, scheduler) of every run laid out, in the order they run."""
    complete: bool = False
    """The bench got to its end (every run recorded, run or not, and the cluster brought down)."""
    saved_to: Path | None = None
    """Where the result was last written; None while it could not be."""
    error: str | None = None
    """Why the bench stopped early (the runs it did not reach say so too)."""
    interrupted: bool = False
    load_average: dict[str, list[float]] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    elapsed_s: float = 0.0


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled like Ctrl-C so the cluster comes down."""


@contextlib.contextmanager
def _signals_interrupt():
    """SIGTERM/SIGHUP raise in the main thread like Ctrl-C does, for the length of the bench."""
    def raise_interrupt(signum, _frame):
        raise _Terminated(f"signal {signal.Signals(signum).name}")

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, raise_interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_bench(settings: BenchSettings, reporter: Reporter | None = None,
              measure_profiles: Callable[[LocalCluster, str, Path, list[str]], tuple[ProfileSet, str]] | None = None,
              cluster: BenchCluster | None = None, planner_url: str | None = None) -> BenchResult:
    """Run the bench; the result holds every run, failed ones with their reason.

    By default the bench starts its own planner and cluster and always stops both. Given a running
    ``cluster`` (with the plugin asking ``planner_url``), it uses them and leaves them running;
    runs that need another scheduler on Nimbus then fail, saying so.
    ``measure_profiles(cluster, planner_url, out_dir, topologies)`` makes the profile set for
    ``settings.profile_now`` (the collector and Spark job of spark_profiling by default).
    """
    reporter = reporter or QuietReporter()
    started = time.monotonic()
    out = Path(settings.out_dir)
    spec = load_spec(settings.spec_path)
    result = BenchResult(settings=settings, started_at=utc_now(), spec=spec, versions=versions())
    result.load_average["start"] = list(os.getloadavg())
    try:
        private_folder(out)
    except OSError as exc:
        raise BenchError(f"cannot make the results folder {out}: {exc.strerror or exc}") from None
    own_cluster = cluster is None
    on_compose = settings.cluster == "compose"
    if cluster is None:
        home = Path(settings.home) if settings.home else out / "cluster"
        if on_compose:
            from cluster.compose_cluster import PORTS_NEEDED, ComposeCluster

            cluster = ComposeCluster(spec, home=home, port_base=settings.port_base or free_port_base(PORTS_NEEDED))
        else:
            port_base = settings.port_base or free_port_base(port_span(len(spec.machine_ids())))
            cluster = LocalCluster(spec, home=home, port_base=port_base)
    else:
        spec = cluster.spec
        result.spec = spec
    result.cluster_home = cluster.layout.home
    save(result, started)
    # The compose cluster brings its own planner (Nimbus reaches it by service name), reached here on 127.0.0.1.
    planner = PlannerService(out / "planner.db", out / "planner.log") if planner_url is None and not on_compose else None
    token_before = os.environ.get(TOKEN_ENV)
    specs: list[RunSpec] = []
    cluster_started = False
    """Only a cluster this bench started is brought down (never one it found running)."""
    with _signals_interrupt():
        try:
            loaded = None if settings.profile_now else _load_profiles(settings, spec)
            if loaded is not None:
                result.profile_set, result.profile_origin = loaded
            if own_cluster and cluster.is_running():
                raise BenchError(f"a cluster already runs in {cluster.layout.home}; bring it down first "
                                 f"('hetsched cluster down --home {cluster.layout.home}')")
            if planner is not None:
                reporter.status("starting the planning service")
                result.planner_url = planner.start()
                reporter.log(f"planner at {result.planner_url} (database {planner.db_path})")
            else:
                result.planner_url = planner_url
            phase_up = None
            if own_cluster:
                cluster_started = True
                _cluster_up(cluster, "plugin", result.planner_url, reporter)
                phase_up = "plugin"
                if not isinstance(cluster, LocalCluster):
                    result.planner_url = cluster.planner_url
                    reporter.log(f"planner at {result.planner_url} (the compose cluster's)")
            planner_at = result.planner_url
            if planner_at is None:
                raise BenchError("no planner to plan with: give a planner URL with a running cluster")
            if loaded is None:
                if not isinstance(cluster, LocalCluster):
                    raise BenchError("profiling now (--profile-now) needs the local cluster (--cluster local)")
                reporter.status(f"profiling {', '.join(settings.topologies)} on every machine type (--profile-now)")
                measure = measure_profiles or functools.partial(measure_profiles_now, reporter=reporter,
                                                                conf=settings.topology_conf)
                loaded = measure(cluster, planner_at, out / "profiling", list(settings.topologies))
                result.profile_set, result.profile_origin = loaded
                _require_profiles(loaded[0], settings, spec, result.profile_origin)
            profile_set = result.profile_set = _adjust_profiles(loaded[0], settings, spec, result.profile_origin or "", reporter)
            specs = _plan(settings, spec, result, profile_set, planner_at, reporter)
            result.expected_runs = [(s.topology, s.scheduler) for s in _in_run_order(specs)]
            save(result, started)
            for phase in PHASES:
                phase_specs = [s for s in specs if s.cluster_scheduler == phase]
                if not phase_specs:
                    continue
                running = cluster.status().scheduler
                if running != nimbus_setup(phase, None, pools=_pools(cluster)).scheduler and not own_cluster:
                    for s in phase_specs:
                        result.runs.append(RunResult(
                            s.topology, s.scheduler, s.name, s.note, dict(s.parallelism), s.plan_id,
                            reason=f"needs Nimbus running {phase}, the given cluster runs {running} "
                                   "(the bench restarts Nimbus only on a cluster of its own)"))
                    save(result, started)
                    continue
                if own_cluster and phase_up != phase:
                    if on_compose:  # Nimbus alone is recreated: the planner keeps the profile set and plans
                        reporter.log(f"recreating Nimbus running {phase}")
                    else:
                        reporter.log(f"restarting the cluster with Nimbus running {phase}")
                        cluster.down()
                    _cluster_up(cluster, phase, planner_at, reporter)
                    phase_up = phase
                ctx = RunContext(cluster, planner_at, profile_set.name, settings.window_s,
                                 settings.warmup_s, settings.start_timeout_s, reporter,
                                 machine_base_load(profile_set),
                                 cluster_planner_url=getattr(cluster, "cluster_planner_url", None),
                                 settle_max_s=settings.settle_max_s)
                for s in phase_specs:
                    reporter.log(f"run {len(result.runs) + 1}/{len(specs)}: {s.topology} with {s.scheduler} ({s.note})")
                    result.runs.append(run(s, ctx, plan_of(result, s)))
                    save(result, started)
                    reporter.log(f"run {len(result.runs)}/{len(specs)} recorded in {result.saved_to}")
        except KeyboardInterrupt as exc:
            result.interrupted = True
            result.error = f"interrupted ({str(exc) or 'Ctrl-C'})"
        except (BenchError, ClusterError, TopologyError, PlannerClientError) as exc:
            result.error = str(exc)
        finally:
            if cluster_started or planner is not None:
                reporter.status("bringing the cluster down" if cluster_started else "stopping the planner")
                _shutdown(cluster if cluster_started else None, planner, result)
            if on_compose:
                _restore_env(TOKEN_ENV, token_before)
            save(result, started, quiet=True)
    done = {(r.topology, r.scheduler) for r in result.runs}
    for s in specs:
        if (s.topology, s.scheduler) not in done:
            result.runs.append(RunResult(s.topology, s.scheduler, s.name, s.note, dict(s.parallelism), s.plan_id,
                                         reason=f"not run: {result.error or 'the bench stopped'}"))
    result.load_average["end"] = list(os.getloadavg())
    result.finished_at = utc_now()
    result.complete = True
    try:
        save(result, started)
    except BenchError as exc:
        if str(exc) not in (result.error or ""):
            result.error = f"{result.error}; {exc}" if result.error else str(exc)
    return result


def _in_run_order(specs: list[RunSpec]) -> list[RunSpec]:
    """The plugin's runs first, then Resource Aware Scheduler's (Nimbus restarted once), as :func:`run_bench` runs them."""
    return [s for phase in PHASES for s in specs if s.cluster_scheduler == phase]


def save(result: BenchResult, started: float, quiet: bool = False) -> None:
    """Write the result so far over ``OUT/bench.json`` in one step; ``quiet`` keeps a failure to itself
    (the caller is already stopping, and the last good version stays on disk)."""
    result.elapsed_s = round(time.monotonic() - started, 1)
    path = Path(result.settings.out_dir) / report.RESULT_FILE
    try:
        report.write_json(report.result_dict(result), path)
    except BenchError:
        result.saved_to = None
        if quiet:
            return
        raise
    result.saved_to = path


def _shutdown(cluster: BenchCluster | None, planner: PlannerService | None, result: BenchResult) -> None:
    """Cluster down, then planner down (those the bench started); a second Ctrl-C meanwhile is ignored."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to ignore
        previous = None
    try:
        if cluster is not None:
            try:
                if not isinstance(cluster, LocalCluster):  # the containers' logs go with them
                    cluster.save_logs(cluster.layout.home / "logs")
                cluster.down()
            except ClusterError as exc:
                note = f"bringing the cluster down failed: {exc}"
                result.error = f"{result.error}; {note}" if result.error else note
        if planner is not None:
            planner.stop()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _pools(cluster: BenchCluster) -> dict:
    """The submitting user guaranteed the whole cluster's CPU and memory (``ras-priority``)."""
    machines = cluster.layout.machines
    return user_pools(getpass.getuser(), sum(m.cpu_capacity for m in machines),
                      float(sum(m.memory_mb for m in machines)))


def _cluster_up(cluster: BenchCluster, phase: str, planner_url: str | None, reporter: Reporter,
                dps_priorities: Path | None = None, extra_conf: dict | None = None) -> None:
    """Bring the cluster up with Nimbus set up for ``phase`` (bench.schedulers.PHASES), plus ``extra_conf`` in storm.yaml."""
    setup = nimbus_setup(phase, getattr(cluster, "cluster_planner_url", None) or planner_url, dps_priorities, _pools(cluster))
    scheduler = setup.scheduler
    reporter.status(f"bringing the cluster up ({phase}); workers' first start can take minutes on a busy host")
    conf_dir = cluster.layout.home / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    for name, text in setup.conf_files.items():
        (conf_dir / name).write_text(text)
    if not setup.conf_files:
        for stale in conf_dir.glob(POOLS_FILE):
            stale.unlink()
    status = cluster.up(scheduler=scheduler, conf={**setup.conf, **(extra_conf or {})}, timeout_s=CLUSTER_START_TIMEOUT_S,
                        report=reporter.log)
    if hasattr(cluster, "planner_token"):  # the compose cluster's planner wants the token it was given
        os.environ[TOKEN_ENV] = cluster.planner_token()
    if not status.heterogeneous:
        raise BenchError("the cluster has no CPU quotas (cgroups not writable): it is not heterogeneous")
    reporter.log(f"cluster up ({scheduler}) in {cluster.layout.home}: "
                 + ", ".join(f"{s.machine_id} {s.cpu_cores:g} cores" for s in status.supervisors))


def _load_profiles(settings: BenchSettings, spec: ClusterSpec) -> tuple[ProfileSet, str]:
    profile_set, path = load_profile_set(settings.profiles)
    origin = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    _require_profiles(profile_set, settings, spec, origin)
    return profile_set, origin


def _require_profiles(profile_set: ProfileSet, settings: BenchSettings, spec: ClusterSpec, origin: str) -> None:
    if not settings.fill_by_speed:  # else checked once filled (_adjust_profiles)
        require_pairs(profile_set, _kinds(settings), {t.name for t in spec.machine_types}, origin)
    try:
        machine_base_load(profile_set)
    except PlanningError as exc:
        raise BenchError(f"{origin}: {exc}") from None


def _kinds(settings: BenchSettings) -> set[str]:
    return {k for t in settings.topologies for k in lookup(t).profiles().values()}


def _adjust_profiles(profile_set: ProfileSet, settings: BenchSettings, spec: ClusterSpec, origin: str,
                     reporter: Reporter) -> ProfileSet:
    """Lacking pairs estimated by machine speed (``--fill-by-speed``) and alpha of pass-through kinds profiled only
    as sinks (see bench.profiles.fill_pass_through_alphas), each said aloud."""
    if settings.fill_by_speed:
        machine_types = {t.name for t in spec.machine_types}
        profile_set, filled = fill_by_machine_speed(profile_set, _kinds(settings), machine_types)
        for note in filled:
            reporter.log(f"[yellow]profile set {profile_set.name}: {note}[/yellow]")
        require_pairs(profile_set, _kinds(settings), machine_types, origin)
    adjusted, notes = fill_pass_through_alphas(profile_set, list(settings.topologies))
    for note in notes:
        reporter.log(f"[yellow]profile set {adjusted.name}: {note}[/yellow]")
    return adjusted


def _plan(settings: BenchSettings, spec: ClusterSpec, result: BenchResult, profile_set: ProfileSet, planner_url: str,
          reporter: Reporter) -> list[RunSpec]:
    """Store the profile set, plan every topology for this cluster, and lay out every run (the plans go into ``result``)."""
    base_load = machine_base_load(profile_set)
    if base_load:
        reporter.log("planning on capacity 100 less each machine type's base load from the profile set: "
                     + ", ".join(f"{t} {b:.1f}%" for t, b in sorted(base_load.items())))
    cluster_model = spec.planner_cluster(base_load)
    reference = cluster_model.machine_types[0]
    specs: list[RunSpec] = []
    with PlannerClient(planner_url) as client:
        client.put_profile_set(profile_set)
        for name in settings.topologies:
            entry = lookup(name)
            plan = client.plan(plan_request(entry, cluster_model, profile_set.name, settings.strategy))
            result.plans[entry.name] = plan
            reporter.log(f"plan {plan.id} for {entry.name} ({plan.strategy}): R = {plan.input_rate:.2f} tuples/s, "
                         + ", ".join(f"{c} x{n}" for c, n in plan.instances.items()))
            weighted = None
            if "planned-weighted" in settings.schedulers:
                if weightable(entry):  # its own plan: counts, placement and shares chosen together
                    weighted = client.plan(plan_request(entry, cluster_model, profile_set.name, settings.strategy,
                                                        weighted_shares=True))
                    result.weighted_plans[entry.name] = weighted
                    reporter.log(f"plan {weighted.id} for {entry.name} with weighted shares ({weighted.strategy}): "
                                 f"R = {weighted.input_rate:.2f} tuples/s, "
                                 + ", ".join(f"{c} x{n}" for c, n in weighted.instances.items()))
                if (fallback := weighted_fallback(entry.name, weighted)) is not None:
                    reporter.log(f"[yellow]{fallback}[/yellow]")
            result.bounds[entry.name] = fluid_bound(entry, cluster_model, profile_set.entries)
            result.compute_bounds[entry.name] = full_quota_bound(entry, spec, profile_set.entries)
            specs += run_specs(settings, entry, plan, profile_set.entries, len(cluster_model.machines),
                               reference.name, reference.cores or 1.0, planner_url, profile_set.name, weighted)
    return specs


def plan_of(result: BenchResult, spec: RunSpec) -> Plan | None:
    """The plan a run places: ``planned-weighted``'s own where it runs one, else its topology's."""
    weighted = result.weighted_plans.get(spec.topology)
    if weighted is not None and spec.plan_id == weighted.id:
        return weighted
    return result.plans.get(spec.topology)


def measure_profiles_now(cluster: LocalCluster, planner_url: str, out_dir: Path, topologies: list[str],
                         reporter: Reporter | None = None, conf: dict | None = None) -> tuple[ProfileSet, str]:
    """Profile every kind of work of the bench's topologies on this cluster (spark_profiling's collector + Spark)."""
    from spark_profiling.collector.runner import ExperimentOptions
    from spark_profiling.collector.workflow import profile
    from spark_profiling.errors import ProfilingError

    covered: set[str] = set()
    entries = []
    name = f"bench-profiled-{dt.datetime.now().strftime('%Y%m%dT%H%M%S')}"
    base_load: dict[str, float] = {}
    source: dict[str, Any] = {"kind": "hetsched bench --profile-now", "runs": [], MACHINE_BASE_LOAD: base_load}
    for topology in topologies:
        kinds = [k for k in dict.fromkeys(lookup(topology).profiles().values()) if k not in covered]
        if not kinds:
            continue
        try:
            done = profile(LocalClusterHandle(cluster), planner_url, out_dir, ExperimentOptions(topology=topology, kinds=kinds, conf=dict(conf or {})),
                           reporter=reporter)
        except ProfilingError as exc:
            raise BenchError(f"profiling {topology} failed: {exc}") from None
        if done.profile_set is None:
            raise BenchError(f"profiling {topology} gave no profile set")
        entries += [e for e in done.profile_set.entries if e.profile in kinds]
        for machine_type, percent in machine_base_load(done.profile_set).items():
            base_load[machine_type] = min(percent, base_load.get(machine_type, percent))
        covered |= set(kinds)
        source["runs"].append({"topology": topology, "profile_path": str(done.profile_path),
                               "source": done.profile_set.source})
    profile_set = ProfileSet(name=name, entries=entries, source=source)
    path = out_dir / f"{name}.json"
    try:
        write_atomic(path, profile_set.model_dump_json(indent=2) + "\n")
    except OSError as exc:
        raise BenchError(f"cannot write the profile set {path}: {exc.strerror or exc}") from None
    return profile_set, str(path)


def versions() -> dict[str, str]:
    """What the numbers were measured with."""
    found = {"storm": STORM_VERSION, "python": platform.python_version(), "platform": platform.platform()}
    for package in ("hetsched", "streamparse", "matplotlib"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    found["java"] = (java.stderr or java.stdout).splitlines()[0] if (java.stderr or java.stdout) else "unknown"
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    if git.returncode == 0:
        found["git_commit"] = git.stdout.strip()
    found["cpus"] = str(os.cpu_count())
    return found
