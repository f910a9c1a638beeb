"""``hetsched submit|kill|topologies``: the benchmark topologies on a Storm cluster."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from hetsched.errors import fail
from hetsched.status import print_scheduler_status
from hetsched.submit_checks import (
    check_profile_pairs,
    cluster_machines,
    metrics_choice,
    planned_defaults,
    workers_records_token,
)
from planner.client import URL_ENV
from topologies.catalog import CATALOG, lookup
from topologies.conf import METRICS_TOKEN
from topologies.errors import TopologyError
from topologies.locate import NIMBUS_ENV, nimbus_address
from topologies.submission import MULTILANG_COMMAND, MULTILANG_ENV, SubmitRequest, parse_conf, parse_parallelism

console = Console()

NimbusOption = typer.Option(
    None, "--nimbus", help=f"Nimbus host:port (default: ${NIMBUS_ENV}, else the local cluster's Nimbus)."
)


def _note(note: str | None) -> None:
    """A check that could not be made in full: said once, the submission goes on."""
    if note:
        Console(stderr=True).print(f"[yellow]note:[/yellow] {note}", highlight=False, soft_wrap=True)


def _with_records_token(conf: dict, topology: str | None, address, planner: Optional[str]) -> dict:
    """``conf`` with the topology's own records token for its workers (unless ``--conf`` gave one); a note where none."""
    if METRICS_TOKEN in conf:
        return conf
    added, note = workers_records_token(topology, address, planner)
    _note(note)
    return {**conf, **added}


def _uptime(seconds: int) -> str:
    minutes, s = divmod(int(seconds), 60)
    hours, m = divmod(minutes, 60)
    days, h = divmod(hours, 24)
    if days:
        return f"{days}d {h}h {m}m"
    if hours:
        return f"{h}h {m}m {s}s"
    return f"{m}m {s}s" if m else f"{s}s"


def submit(
    topology_or_args: Optional[List[str]] = typer.Argument(
        None, metavar="[TOPOLOGY | -- ARGS...]",
        help=f"A topology of the catalog ({', '.join(CATALOG)}); with --jar/--class, the main class's arguments "
             "(after `--` where one starts with a dash)."),
    jar: Optional[Path] = typer.Option(None, "--jar", help="An app jar: with --class, run its main class as `storm jar` does; with --flux, the jar holding the file's own classes."),
    main_class: Optional[str] = typer.Option(None, "--class", help="The app's main class, which builds the topology and submits it with StormSubmitter."),
    flux: Optional[Path] = typer.Option(None, "--flux", help="A Flux topology file (YAML), submitted with org.apache.storm.flux.Flux --remote."),
    flux_filter: Optional[Path] = typer.Option(None, "--filter", help="--flux: a properties file whose values replace ${key} in the file (Flux's --filter)."),
    env_filter: bool = typer.Option(False, "--env-filter", help="--flux: replace ${ENV-NAME} with environment variables (Flux's --env-filter)."),
    profile_keys: Optional[str] = typer.Option(None, "--profile-keys", help="--jar/--flux: each component's profile key, comp=key,comp=key (hetsched.component.profiles; a component not named uses its id)."),
    parallelism: Optional[str] = typer.Option(None, "--parallelism", "-p", help="Instances per component: comp=N,comp=N."),
    plan: Optional[str] = typer.Option(None, "--plan", help="Take every component's instances from this stored plan."),
    planner: Optional[str] = typer.Option(None, "--planner", envvar=URL_ENV, help="The planning service this command reads the --plan and --profiles from (default http://127.0.0.1:8765)."),
    metrics_url: Optional[str] = typer.Option(None, "--metrics-url", help="Where the workers ship their metrics (hetsched.metrics.url): the planner as the workers reach it (default: --planner where given, else the workers' own storm.yaml)."),
    profiles: Optional[str] = typer.Option(None, "--profiles", help="Name of the profile set the plan was made with (hetsched.profiles)."),
    rate: Optional[float] = typer.Option(None, "--rate", help="Tuples/s of each spout component; default: as fast as flow control allows."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Worker processes (topology.workers)."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", "-c", help="Topology config key=value (value parsed as JSON where it can be); repeatable."),
    name: Optional[str] = typer.Option(None, "--name", help="Name to run under (default: the topology's own)."),
    sample_rate: float = typer.Option(1.0, "--sample-rate", help="topology.stats.sample.rate (1.0: exact counts)."),
    spare_tasks: Optional[float] = typer.Option(None, "--spare-tasks", help="Tasks per executor of every component (hetsched.spare.tasks; default 1): 2 lets `hetsched replan` double any component's executors later. Each task of a Python component is its own subprocess."),
    metrics: Optional[bool] = typer.Option(None, "--metrics/--no-metrics", help="Ship every executor's counts and CPU to the planning service (the plugin jar's task hook; the jar must be in the workers' extlib/). Default: on for the clusters this checkout starts; elsewhere submit cannot tell and asks for one of the two."),
    load_aware: bool = typer.Option(False, "--load-aware", help="With --profiles or --plan: keep Storm's load-aware shuffle (by default turned off, as the planner models shuffle as an even split)."),
    weighted_grouping: bool = typer.Option(False, "--weighted-grouping", help="With --plan (a plan with shares): put the plan's shares in hetsched.grouping.shares and the shuffle, none and fields streams they weight on the plugin jar's weighted groupings (the jar must be in the workers' extlib/); a catalog topology or --flux."),
    storm_yaml: Optional[List[Path]] = typer.Option(None, "--storm-yaml", help="A supervisor's storm.yaml, for its machine type (Nimbus does not report it), so --profiles is checked against every machine type; repeatable. The local and compose clusters' are known without it."),
    force: bool = typer.Option(False, "--force", help="Kill a running topology of the same name first, and wait for it to go."),
    multilang_command: str = typer.Option(MULTILANG_COMMAND, "--multilang-command", envvar=MULTILANG_ENV, help="What workers run for each Python component: a name on the supervisors' PATH, or an absolute path on every supervisor host."),
    nimbus: Optional[str] = NimbusOption,
) -> None:
    """Submit TOPOLOGY of the catalog, an app's main class (--jar, --class) or a Flux file (--flux), with the plan and the workers' metrics."""
    from topologies.submit import submit as do_submit

    positional = list(topology_or_args or [])
    if metrics_url is not None and metrics is False:
        raise fail(f"--metrics-url {metrics_url} is where the workers' metrics go, and --no-metrics turns them off")
    if metrics_url is not None:
        metrics = True
    if load_aware and profiles is None and plan is None:
        raise fail("--load-aware applies to a topology the planner places (--profiles or --plan); Storm's own "
                    "scheduling keeps the load-aware shuffle anyway")
    if weighted_grouping and plan is None:
        raise fail("--weighted-grouping needs --plan: the shares come from a plan made with weighted shares")
    if weighted_grouping and main_class is not None:
        raise fail("--weighted-grouping rewrites the groupings of a catalog topology or a Flux file; an app jar names "
                   "org.hetsched.storm.grouping.WeightedShuffleGrouping in its own customGrouping (docs/operations/submitting.md)")
    if main_class is not None or flux is not None:
        catalog_only = {"--parallelism": parallelism, "--rate": rate, "--spare-tasks": spare_tasks,
                        "--multilang-command": None if multilang_command == MULTILANG_COMMAND else multilang_command}
        given = [option for option, value in catalog_only.items() if value is not None]
        if given:
            raise fail(f"{', '.join(given)} applies to the catalog's topologies only, not to --jar/--class or --flux")
        if force and flux is None:
            raise fail("--force applies to --flux only: an app's main class names its own topology, so kill it first "
                        "with `hetsched kill NAME --wait`")
        if flux is not None and positional:
            raise fail(f"--flux takes no arguments, got {' '.join(positional)}; the topology is the file's")
        _submit_java(positional, jar, main_class, flux, flux_filter, env_filter, profile_keys, plan, planner, profiles,
                     workers, conf, name, sample_rate, metrics, force, nimbus, metrics_url, load_aware, storm_yaml,
                     weighted_grouping)
        return
    if jar is not None:
        raise fail(f"--jar {jar} needs --class (the main class to run) or --flux (a Flux file using the jar's classes)")
    if flux_filter is not None or env_filter or profile_keys is not None:
        raise fail("--filter, --env-filter and --profile-keys apply to --flux or --jar/--class only")
    if len(positional) != 1:
        raise fail(f"give one topology of the catalog ({', '.join(CATALOG)}), or --jar with --class, or --flux"
                    + (f"; got {' '.join(positional)}" if positional else ""))
    topology = positional[0]
    try:
        address = nimbus_address(nimbus)
        entry = lookup(topology)
        machines = cluster_machines(address, storm_yaml or [])
        metrics = metrics_choice(metrics, machines, address)
        if profiles is not None:
            _note(check_profile_pairs(profiles, planner, entry.profiles(), name or entry.name, machines))
        topology_conf = parse_conf(conf)
        if profiles is not None or plan is not None:
            topology_conf = planned_defaults(topology_conf, load_aware)
        if metrics:
            topology_conf = _with_records_token(topology_conf, name or entry.name, address, planner)
        request = SubmitRequest(
            topology=topology,
            name=name,
            parallelism=parse_parallelism(parallelism),
            rate=rate,
            workers=workers,
            conf=topology_conf,
            sample_rate=sample_rate,
            plan_id=plan,
            profiles=profiles,
            planner_url=planner if plan else None,
            spare_tasks=spare_tasks,
            metrics=metrics,
            metrics_url=metrics_url or planner,
            weighted_grouping=weighted_grouping,
            hosts=machine_hosts(address) if weighted_grouping else {},
        )
        result = do_submit(request, address, force=force, multilang_command=multilang_command)
    except TopologyError as exc:
        raise fail(str(exc)) from None

    table = Table(title=f"{result.topology} submitted as {result.name}", title_justify="left")
    table.add_column("component")
    table.add_column("profile")
    table.add_column("instances", justify="right")
    profiles_map = result.conf.get("hetsched.component.profiles", {})
    for component, n in result.parallelism.items():
        table.add_row(component, profiles_map.get(component, ""), str(n))
    console.print(table)
    facts = [f"id {result.topology_id or '(not listed yet)'}", f"Nimbus {result.nimbus}"]
    if result.replaced:
        facts.append("replaced the running one")
    if plan:
        facts.append(f"plan {plan}")
    console.print(", ".join(facts), highlight=False)


def _submit_java(args: list[str], jar: Optional[Path], main_class: Optional[str], flux: Optional[Path],
                 flux_filter: Optional[Path], env_filter: bool, profile_keys: Optional[str], plan: Optional[str],
                 planner: Optional[str], profiles: Optional[str], workers: Optional[int], conf: Optional[List[str]],
                 name: Optional[str], sample_rate: float, metrics: Optional[bool], force: bool, nimbus: Optional[str],
                 metrics_url: Optional[str] = None, load_aware: bool = False,
                 storm_yaml: Optional[List[Path]] = None, weighted_grouping: bool = False) -> None:
    """``hetsched submit --jar J --class C [ARGS]`` and ``--flux F``: run Storm's client JVM, then show what Nimbus runs.

    A Flux file's components are known before the JVM starts, so its pairs are checked first; an app's main class
    builds its topology itself, so only the keys of ``--profile-keys`` are, and the rest once Nimbus runs it.
    """
    from topologies.flux_topology import read_flux
    from topologies.java_submit import JavaSubmitRequest, parse_profile_keys, submit_java

    try:
        address = nimbus_address(nimbus)
        machines = cluster_machines(address, storm_yaml or [])
        metrics = metrics_choice(metrics, machines, address)
        given_keys = parse_profile_keys(profile_keys)
        label = name or main_class or "the topology"
        if profiles is not None:
            keys = given_keys
            if flux is not None:
                read = read_flux(flux, flux_filter, env_filter)
                label = name or read.name
                keys = {**read.profiles(), **given_keys}
            _note(check_profile_pairs(profiles, planner, keys, label, machines))
        topology_conf = parse_conf(conf)
        if profiles is not None or plan is not None:
            topology_conf = planned_defaults(topology_conf, load_aware)
        if metrics:
            named = name or (read_flux(flux, flux_filter, env_filter).name if flux is not None else None)
            topology_conf = _with_records_token(topology_conf, named, address, planner)
        request = JavaSubmitRequest(
            jar=jar, main_class=main_class, args=args, flux=flux, flux_filter=flux_filter, env_filter=env_filter,
            name=name, plan_id=plan, profiles=profiles, planner_url=planner if plan else None,
            profile_keys=given_keys, conf=topology_conf, workers=workers,
            sample_rate=sample_rate, metrics=metrics, metrics_url=metrics_url or planner,
            weighted_grouping=weighted_grouping, hosts=machine_hosts(address) if weighted_grouping else {},
        )
        with console.status(f"running {'Flux' if flux is not None else main_class} against Nimbus"):
            result = submit_java(request, address, force=force)
    except TopologyError as exc:
        raise fail(str(exc)) from None
    if profiles is not None and flux is None and result.profiles:
        try:  # the app's components, now that Nimbus runs them: the plugin places it evenly where pairs are missing
            _note(check_profile_pairs(profiles, planner, result.profiles, result.name or label, machines))
        except TopologyError as exc:
            Console(stderr=True).print(f"[yellow]warning:[/yellow] submitted, but {exc}; until then the plugin "
                                       "places it evenly", highlight=False, soft_wrap=True)

    title = f"{result.main_class} submitted {result.name}" if result.name else f"{result.main_class} ran"
    table = Table(title=title, title_justify="left")
    for column in ("component", "profile", "executors", "planned"):
        table.add_column(column, justify="left" if column in ("component", "profile") else "right")
    components = list(result.executors) or list(result.planned or {})
    for component in components:
        planned = (result.planned or {}).get(component)
        table.add_row(component, result.profiles.get(component, component), str(result.executors.get(component, "?")),
                      "" if planned is None else str(planned))
    if components:
        console.print(table)
    facts = [f"id {result.topology_id or '(not found in the list of Nimbus)'}", f"Nimbus {result.nimbus}"]
    if result.replaced:
        facts.append("replaced the running one")
    if plan:
        facts.append(f"plan {plan}")
    if not metrics:
        facts.append("no worker metrics")
    console.print(", ".join(facts), highlight=False)
    differ = result.unplanned() if result.executors else {}
    if differ:
        Console(stderr=True).print(
            "[yellow]warning:[/yellow] the app's executor counts differ from the plan's ("
            + ", ".join(f"{c}: {n} executors, {p if p is not None else 'not'} planned" for c, (n, p) in differ.items())
            + "): the plugin cannot place the stored plan as it is and, with a profile set, asks the planner for a "
              "plan of these counts; give each component the plan's instance count as its parallelism hint",
            highlight=False, soft_wrap=True)


def kill(
    name: str = typer.Argument(..., help="Name the topology runs under."),
    wait: bool = typer.Option(False, "--wait", help="Return only once Nimbus no longer lists it."),
    grace: int = typer.Option(0, "--grace", min=0, help="Seconds Storm deactivates the spouts before killing."),
    nimbus: Optional[str] = NimbusOption,
) -> None:
    """Kill a running topology."""
    from topologies.submit import kill as do_kill

    try:
        do_kill(name, nimbus_address(nimbus), wait=wait, grace_s=grace)
    except TopologyError as exc:
        raise fail(str(exc)) from None
    console.print(f"killed {name}" if wait else f"kill of {name} requested", highlight=False)


def topologies(nimbus: Optional[str] = NimbusOption) -> None:
    """The topologies running on the cluster."""
    from topologies.submit import running_topologies

    try:
        address = nimbus_address(nimbus)
        running = running_topologies(address)
    except TopologyError as exc:
        raise fail(str(exc)) from None
    table = Table(title=f"topologies on Nimbus {address}", title_justify="left")
    for column in ("name", "id", "status", "workers", "executors", "tasks", "uptime"):
        table.add_column(column, justify="left" if column in ("name", "id", "status") else "right")
    for t in sorted(running, key=lambda t: t.name):
        table.add_row(t.name, t.id, t.status, str(t.workers), str(t.executors), str(t.tasks), _uptime(t.uptime_s))
    console.print(table if running else f"no topologies running on Nimbus {address}", highlight=False)
    print_scheduler_status(console, running)


def counts(
    name: str = typer.Argument(..., help="Name the topology runs under."),
    window: Optional[float] = typer.Option(None, "--window", min=1.0, help="Seconds to watch (default: two stats reports and a third, from executor.metrics.frequency.secs: 30 s at 10 s, 140 s at Storm's 60 s); each executor counts between the first and last stats report it showed."),
    nimbus: Optional[str] = NimbusOption,
) -> None:
    """Tuples each component of a running topology handled within a window (Nimbus counts)."""
    from topologies.submit import window_counts

    def announce(chosen) -> None:
        if chosen.too_short:
            Console(stderr=True).print(
                f"[yellow]warning:[/yellow] executors report counts every {chosen.stats_frequency_s:g} s "
                f"(executor.metrics.frequency.secs), so a {chosen.seconds:g} s window sees at most one report and counts "
                f"nothing; use --window {2 * chosen.stats_frequency_s + 10:g} or more", highlight=False, soft_wrap=True)
        status.update(f"counting {name} for {chosen.seconds:g} s (stats every {chosen.stats_frequency_s:g} s)")

    try:
        address = nimbus_address(nimbus)
        with console.status(f"counting {name}") as status:
            topology, chosen, rates = window_counts(name, address, window, on_window=announce)
    except TopologyError as exc:
        raise fail(str(exc)) from None
    table = Table(title=f"{name} ({topology}), watched for {chosen.seconds:g} s, stats every {chosen.stats_frequency_s:g} s",
                  title_justify="left")
    for column in ("component", "role", "executors measured", "tuples", "seconds", "tuples/s", "acked", "failed"):
        table.add_column(column, justify="left" if column in ("component", "role") else "right")
    for r in rates:
        table.add_row(r.component, r.role, f"{r.measured_executors}/{r.executors}", str(r.tuples), f"{r.window_s:.1f}",
                      f"{r.per_second:.1f}", str(r.acked), str(r.failed))
    console.print(table)
    if any(r.measured_executors < r.executors for r in rates):
        console.print(f"an executor whose counts did not move twice counts nothing: watch longer than two stats reports "
                      f"({2 * chosen.stats_frequency_s:g} s here, executor.metrics.frequency.secs)", highlight=False)


def machine_hosts(address) -> dict[str, str]:
    """Machine id -> host of the local or compose cluster this checkout runs (how workers name the machines); else {}."""
    from hetsched.submit_checks import _started_here

    local = _started_here(address)
    return {m.id: m.host for m in local.layout.machines} if local is not None else {}
