"""Submitting Java topologies: an app's main class (``--jar``/``--class``) or a Flux file (``--flux``), with the plan
and the workers' metrics as for the streamparse topologies.

The topology is built by Java, so its executor counts are the app's: for a Flux file they are rewritten to the
plan's instance counts (in a copy of the file), for an app jar they stay what the app declares and the Nimbus
plugin places those executors by plan. Everything else hetsched adds to a topology's conf (the plan id, the
profile set, each component's profile key, the metrics hook) goes in through ``storm.options``, which
StormSubmitter puts over the conf the app submits.
"""
from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from observe.nimbus import NimbusAddress, connect
from topologies import conf as keys
from topologies import flux_topology as flux_file
from topologies import plans
from topologies.errors import TopologyError
from topologies.storm_client import ClientRun, check_jar, check_main_class, run_client
from topologies.submission import check_options, metrics_conf, option_conf
from topologies.weighted_grouping import shares_conf, weight_flux_document, weighted_streams
from planner.stream_shares import CONF_KEY

log = logging.getLogger(__name__)

KILL_TIMEOUT_S = 180.0
LISTED_TIMEOUT_S = 20.0
"""How long a topology the client JVM submitted may take to appear in Nimbus's list."""


@dataclass
class JavaSubmitRequest:
    """A ``hetsched submit --jar ... --class ...`` or ``--flux ...``; None means the app's or Storm's default."""

    jar: Path | None = None
    main_class: str | None = None
    args: list[str] = field(default_factory=list)
    flux: Path | None = None
    flux_filter: Path | None = None
    env_filter: bool = False
    name: str | None = None
    """Flux only: run under this name instead of the file's."""
    plan_id: str | None = None
    profiles: str | None = None
    planner_url: str | None = None
    profile_keys: dict[str, str] = field(default_factory=dict)
    """Component id -> profile key (``hetsched.component.profiles``), over a Flux file's own."""
    conf: dict[str, Any] = field(default_factory=dict)
    workers: int | None = None
    sample_rate: float = keys.DEFAULT_STATS_SAMPLE_RATE
    metrics: bool = True
    metrics_url: str | None = None
    weighted_grouping: bool = False
    """Flux only: the plan's shares into ``hetsched.grouping.shares``, the streams they weight onto the weighted groupings."""
    hosts: dict[str, str] = field(default_factory=dict)
    """Machine id -> host, for naming machines in the shares as workers see them."""


@dataclass
class JavaSubmitResult:
    name: str | None
    topology_id: str | None
    main_class: str
    executors: dict[str, int]
    """Each component's executor count as Nimbus has it (empty when the topology was not found)."""
    planned: dict[str, int] | None
    """The plan's instance counts, with ``--plan``."""
    profiles: dict[str, str]
    conf: dict[str, Any]
    """What went in through ``storm.options``."""
    nimbus: str
    replaced: bool = False

    def unplanned(self) -> dict[str, tuple[int, int | None]]:
        """Components whose executor count differs from the plan's: component -> (executors, planned)."""
        if self.planned is None:
            return {}
        names = sorted(set(self.executors) | set(self.planned))
        return {c: (self.executors.get(c, 0), self.planned.get(c)) for c in names
                if self.executors.get(c, 0) != self.planned.get(c)}


def parse_profile_keys(text: str | None) -> dict[str, str]:
    """``count=wordCount,cpu=cpuWork`` -> ``{"count": "wordCount", "cpu": "cpuWork"}``."""
    result: dict[str, str] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        component, sep, key = (part.strip() for part in item.partition("="))
        if not sep or not component or not key:
            raise TopologyError(f"--profile-keys entry {item!r} is not component=profileKey")
        if component in result:
            raise TopologyError(f"--profile-keys names {component!r} twice")
        result[component] = key
    return result


def check_request(request: JavaSubmitRequest) -> None:
    if (request.main_class is None) == (request.flux is None):
        raise TopologyError("give either --class (with --jar) or --flux")
    if request.main_class is not None and request.jar is None:
        raise TopologyError(f"--class {request.main_class} needs --jar: the app jar that holds it")
    if request.main_class is not None and request.name is not None:
        raise TopologyError("--name applies to --flux only: an app's main class names its own topology")
    if request.flux is None and (request.flux_filter is not None or request.env_filter):
        raise TopologyError("--filter and --env-filter apply to --flux only")
    check_options(request.workers, request.sample_rate, request.name)


def java_conf(request: JavaSubmitRequest, component_profiles: dict[str, str],
              base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings ``storm.options`` carries: ``--conf``, then the explicit options, then what hetsched always sets.

    ``base`` is the conf the topology sets itself where known (a Flux file's ``config``), so hooks it names are kept.
    """
    conf: dict[str, Any] = dict(request.conf)
    conf.update(option_conf(request.sample_rate, None, request.workers, request.plan_id, request.profiles,
                            request.planner_url if request.plan_id is not None else None))
    if component_profiles:
        conf[keys.COMPONENT_PROFILES] = dict(component_profiles)
    if request.metrics:
        conf.update(metrics_conf({**(base or {}), **conf}, request.metrics_url))
    return conf


def _storm_home(flux: bool) -> tuple[Path, list[Path]]:
    """STORM_HOME and, for a Flux file, Flux's jars: assembled from Maven Central on first use."""
    from cluster.errors import ClusterError
    from cluster.storm_home import ensure_flux, ensure_storm_home

    try:
        return ensure_storm_home(quiet=True), (ensure_flux() if flux else [])
    except ClusterError as exc:
        raise TopologyError(str(exc)) from None


def plan_client_run(request: JavaSubmitRequest, workdir: Path, storm_home: Path, flux_jars: list[Path],
                    plan: Any = None) -> tuple[ClientRun, str | None, dict[str, int] | None, dict[str, str]]:
    """The client JVM for the request: (run, topology name where known, planned counts, profile keys)."""
    planned: dict[str, int] | None = None
    if request.flux is None:
        jar = check_jar(request.jar, "the app jar")  # type: ignore[arg-type]
        run = ClientRun(request.main_class, list(request.args), jar, [jar])  # type: ignore[arg-type]
        check_main_class(run.main_class, run, storm_home)
        if plan is not None:
            planned = {c: n for c, n in plan.instances.items() if not c.startswith("__")}
        profiles = dict(request.profile_keys)
        return _with_options(run, request, profiles), None, planned, profiles

    flux = flux_file.read_flux(request.flux, request.flux_filter, request.env_filter)
    unknown = sorted(set(request.profile_keys) - set(flux.component_ids))
    if unknown:
        raise TopologyError(f"--profile-keys names {', '.join(unknown)}, not a component of {flux.name} "
                            f"({', '.join(flux.component_ids)})")
    if plan is not None:
        planned = plans.plan_instances(plan, flux.name, flux.component_ids)
    profiles = {**flux.profiles(), **request.profile_keys}
    name = request.name.strip() if request.name else flux.name
    document = flux_file.with_plan(flux, planned or {}, name)
    if request.weighted_grouping:
        if plan is None or not plan.shares:
            raise TopologyError("--weighted-grouping needs a plan with shares: make it with weighted shares "
                                "(options.weighted_shares: true, in `hetsched plan --options`)")
        shares = shares_conf(plan, request.hosts)
        request.conf[CONF_KEY] = shares
        document = weight_flux_document(document, weighted_streams({CONF_KEY: shares}))
    copy = flux_file.write_flux(document, workdir / f"{name}.yaml")
    jars = [check_jar(request.jar, "the app jar")] if request.jar is not None else []
    storm_jar = jars[0] if jars else flux_jars[0]
    run = ClientRun(flux_file.FLUX_MAIN, flux_file.flux_args(copy, request.flux_filter, request.env_filter),
                    storm_jar, list(flux_jars) + jars)
    return _with_options(run, request, profiles, flux.config), name, planned, profiles


def _with_options(run: ClientRun, request: JavaSubmitRequest, profiles: dict[str, str],
                  base: dict[str, Any] | None = None) -> ClientRun:
    return ClientRun(run.main_class, run.args, run.storm_jar, run.class_path, java_conf(request, profiles, base))


def submit_java(request: JavaSubmitRequest, address: NimbusAddress, force: bool = False,
                leader_timeout_s: float = 60.0) -> JavaSubmitResult:
    """Run the app's main class (or Flux) against this cluster's Nimbus and report what Nimbus then runs."""
    check_request(request)
    for attribute in ("jar", "flux", "flux_filter"):  # absolute, as the JVM and Flux see them
        if getattr(request, attribute) is not None:
            setattr(request, attribute, Path(getattr(request, attribute)).expanduser().absolute())
    plan = None
    if request.plan_id is not None:
        plan = plans.fetch_plan(request.plan_id, request.planner_url)
        request.profiles = request.profiles or plans.plan_profiles_name(plan)
    home, flux_jars = _storm_home(request.flux is not None)
    with tempfile.TemporaryDirectory(prefix="hetsched-java-") as tmp:
        run, name, planned, profiles = plan_client_run(request, Path(tmp), home, flux_jars, plan)
        with connect(address, leader_timeout_s) as nimbus:
            leader = nimbus.summary().leader
            before = {t.id for t in nimbus.topologies()}
            replaced = False
            if name is not None:
                running = nimbus.find(name)
                if running is not None and not force:
                    raise TopologyError(f"a topology named {name!r} is already running ({running.id}, {running.status}); "
                                        "use --force to kill and replace it, or --name to run another copy")
                if running is not None:
                    log.info("killing the running %s (%s) before submitting", name, running.id)
                    nimbus.kill(name, wait_s=0)
                    nimbus.wait_gone(name, KILL_TIMEOUT_S)
                    before.discard(running.id)
                    replaced = True
        run_client(run, address, home, leader=leader)
    with connect(address, leader_timeout_s) as nimbus:
        started = _wait_listed(nimbus, name, before)
        executors = nimbus.component_parallelism(started.id) if started is not None else {}
        if started is not None:  # the keys the plugin and the hook will use: the app may set its own
            named = nimbus.topology_conf(started.id).get(keys.COMPONENT_PROFILES) or {}
            profiles = {c: str(named.get(c, c)) for c in executors} if isinstance(named, dict) else profiles
    log.info("submitted %s as %s", run.main_class, started.name if started else name)
    return JavaSubmitResult(
        name=started.name if started is not None else name, topology_id=started.id if started is not None else None,
        main_class=run.main_class, executors=executors, planned=planned, profiles=profiles, conf=run.options,
        nimbus=str(address), replaced=replaced,
    )


def _wait_listed(nimbus: Any, name: str | None, before: set[str]) -> Any:
    """The topology the client submitted: by name (Flux), else the one new in Nimbus's list (an app's main class)."""
    deadline = time.monotonic() + LISTED_TIMEOUT_S
    while True:
        listed = nimbus.topologies()
        new = [t for t in listed if t.id not in before and (name is None or t.name == name)]
        if len(new) == 1:
            return new[0]
        if len(new) > 1 or time.monotonic() >= deadline:
            return None  # several new ones (another submitter), or none: the client said it submitted
        time.sleep(1.0)
