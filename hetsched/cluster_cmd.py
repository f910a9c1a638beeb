"""``hetsched cluster up|down|status|logs``: the local heterogeneous Storm cluster (``--compose``: as containers)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from hetsched.errors import fail
from hetsched.status import print_scheduler_status

cluster_app = typer.Typer(no_args_is_help=True, help="The local heterogeneous Storm 2.8 cluster (cgroup CPU quotas).")

console = Console(soft_wrap=True)

SpecOption = typer.Option(None, "--spec", help="Cluster spec YAML (default: cluster/specs/default.yaml).")
HomeOption = typer.Option(
    None, "--home", envvar="HETSCHED_CLUSTER_HOME", help="The cluster's state directory (default: var/clusters/<name>)."
)
PortBaseOption = typer.Option(
    None, "--port-base", envvar="HETSCHED_CLUSTER_PORT_BASE", min=1024, max=65000, help="First port the cluster uses."
)
ComposeOption = typer.Option(
    False, "--compose", help="The same machines as docker-compose containers (docker-compose.yml; docs/docker-compose.md)."
)


def _open(spec: Optional[Path], home: Optional[Path], port_base: Optional[int], compose: bool = False,
          standby_nimbus: bool = False):
    from cluster.spec import load_spec

    loaded = load_spec(spec)
    if standby_nimbus:
        loaded = loaded.model_copy(update={"nimbus_standby": True})
    if compose:
        from cluster.compose_cluster import ComposeCluster

        return ComposeCluster(loaded, home=home, port_base=port_base)
    from cluster.local import LocalCluster

    return LocalCluster(loaded, home=home, port_base=port_base)


def _progress_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(message)s", datefmt="[%X]",
        handlers=[RichHandler(console=console, show_path=False, markup=False)],
    )


@cluster_app.command("up")
def up(
    spec: Optional[Path] = SpecOption,
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="default | resource_aware | plugin (Nimbus' storm.scheduler) [default: default; with --compose: plugin]."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", "-c", help="Extra storm.yaml setting key=value (YAML value); repeatable."),
    home: Optional[Path] = HomeOption,
    port_base: Optional[int] = PortBaseOption,
    allow_homogeneous: bool = typer.Option(False, "--allow-homogeneous", help="Start even where CPU quotas cannot be set."),
    timeout: float = typer.Option(300.0, "--timeout", min=10, help="Seconds to wait for Nimbus and every supervisor."),
    standby_nimbus: bool = typer.Option(
        False, "--standby-nimbus",
        help="Also run a standby Nimbus on its own loopback address, which leads when the leader dies (the spec's nimbus_standby)."),
    compose: bool = ComposeOption,
) -> None:
    """Start ZooKeeper, Nimbus and one supervisor per machine, each machine in its own CPU-quota cgroup.

    With --compose: build the images that are missing, then start the machines as containers with their
    CPU quotas (cpus:), ZooKeeper, Nimbus with the plugin and the planner, and wait until every supervisor registered.
    """
    import time

    from cluster.errors import ClusterError
    from cluster.spec import parse_conf_overrides

    _progress_logging()
    started = time.monotonic()
    try:
        if compose and port_base is None:
            from cluster.compose_cluster import PORTS_NEEDED, ComposeCluster
            from cluster.ports import free_port_base
            from cluster.spec import load_spec

            known = ComposeCluster(load_spec(spec), home=home)
            port_base = known.port_base if known.containers() else free_port_base(PORTS_NEEDED)
        cluster = _open(spec, home, port_base, compose, standby_nimbus)
        with console.status(f"Starting cluster {cluster.layout.name!r} in {cluster.layout.home} ..."):
            status = cluster.up(
                scheduler=scheduler or ("plugin" if compose else "default"), conf=parse_conf_overrides(conf or []),
                allow_homogeneous=allow_homogeneous, timeout_s=timeout,
            )
    except ClusterError as fault:
        raise fail(str(fault)) from None
    if status.already_running:
        console.print(f"Cluster {status.name!r} is already running at {status.home}; nothing changed.")
    else:
        console.print(f"Cluster {status.name!r} is up in {time.monotonic() - started:.1f} s.")
    _print_status(status)
    if compose:
        _print_compose_access(cluster)


@cluster_app.command("status")
def status(
    spec: Optional[Path] = SpecOption, home: Optional[Path] = HomeOption, port_base: Optional[int] = PortBaseOption,
    compose: bool = ComposeOption,
) -> None:
    """The machines (supervisor, host, type, quota, slots, CPU used) and the running topologies."""
    from cluster.errors import ClusterError

    try:
        cluster = _open(spec, home, port_base, compose)
        current = cluster.status()
    except ClusterError as fault:
        raise fail(str(fault)) from None
    if not current.running:
        console.print(f"Cluster {current.name!r} ({current.home}) is not running.")
        raise typer.Exit(3)
    _print_status(current)
    if compose:
        _print_compose_access(cluster)


@cluster_app.command("down")
def down(
    spec: Optional[Path] = SpecOption, home: Optional[Path] = HomeOption, port_base: Optional[int] = PortBaseOption,
    purge: bool = typer.Option(False, "--purge", help="Also delete the cluster's state: data, logs, configuration."),
    compose: bool = ComposeOption,
) -> None:
    """Stop every process the cluster started (workers and Python processes too) and remove its cgroups.

    With --compose: remove every container, network and volume of the compose project (the images stay).
    """
    from cluster.errors import ClusterError

    try:
        cluster = _open(spec, home, port_base, compose)
        report = cluster.down(purge=purge)
    except ClusterError as fault:
        raise fail(str(fault)) from None
    if compose:
        if report.left:
            raise fail(f"{cluster.name}: still there after down: {', '.join(report.left)}")
        console.print(f"Cluster {cluster.spec.name!r} ({cluster.project}) is down: no container, network or volume "
                      "of the project is left" + (", state purged." if report.purged else "."))
        return
    console.print(
        f"Cluster {cluster.layout.name!r} is down: {len(report.stopped_pids)} processes stopped, "
        f"{len(report.removed_cgroups)} cgroup trees removed" + (", state purged." if report.purged else ".")
    )


@cluster_app.command("logs")
def logs(
    daemon: Optional[str] = typer.Argument(
        None, help="zookeeper, nimbus, nimbus-standby, ui or a machine id (its supervisor); none: list the logs."),
    lines: int = typer.Option(40, "--lines", "-n", min=1, help="How many lines from the end."),
    workers: bool = typer.Option(False, "--workers", help="For a machine: its workers' logs instead of the supervisor's."),
    spec: Optional[Path] = SpecOption, home: Optional[Path] = HomeOption, port_base: Optional[int] = PortBaseOption,
) -> None:
    """Show the end of a daemon's log, or list the cluster's log files."""
    from cluster.errors import ClusterError
    from cluster.processes import tail

    try:
        cluster = _open(spec, home, port_base)
        if daemon is None:
            table = Table(title=f"Logs of cluster {cluster.layout.name!r} ({cluster.layout.home})", title_justify="left")
            table.add_column("daemon", no_wrap=True)
            table.add_column("log file", overflow="fold")
            machines = {m.id for m in cluster.layout.machines}
            for name in cluster.layout.daemon_names():
                path = cluster.log_file(name)
                if path.exists():
                    table.add_row(name, str(path))
                for worker_log in cluster.worker_logs(name) if name in machines else []:
                    table.add_row(f"  worker on {name}", str(worker_log))
            console.print(table if table.row_count else f"No logs yet under {cluster.layout.home}.")
            return
        files = cluster.worker_logs(daemon) if workers else [cluster.log_file(daemon)]
    except ClusterError as fault:
        raise fail(str(fault)) from None
    if not files:
        console.print(f"No worker logs on {daemon} yet.")
    for path in files:
        console.rule(str(path))
        console.print(tail(path, lines), highlight=False, markup=False, soft_wrap=True)


def _print_compose_access(cluster) -> None:
    console.print(f"Planner: {cluster.planner_url} (token: {cluster.token_file}); "
                  f"compose project: {cluster.project}", highlight=False)
    console.print(f"Nimbus Thrift from this host: 127.0.0.1:{cluster.nimbus_port} "
                  f"(hetsched submit linear --nimbus 127.0.0.1:{cluster.nimbus_port} --no-metrics)", highlight=False)


def _print_status(current) -> None:
    kind = "heterogeneous (cgroup CPU quotas)" if current.heterogeneous else "HOMOGENEOUS (no CPU quotas)"
    table = Table(title=f"Cluster {current.name!r}: {kind}, scheduler {current.scheduler}", title_justify="left")
    for column in ("machine", "type", "host"):
        table.add_column(column, no_wrap=True)
    for column in ("quota (cores)", "free slots", "CPU used (s)"):
        table.add_column(column, justify="right")
    table.add_column("supervisor id", overflow="fold")
    for s in current.supervisors:
        free = "-" if s.used_slots is None else f"{s.slots - s.used_slots}/{s.slots}"
        used = "-" if s.cpu_seconds is None else f"{s.cpu_seconds:.1f}"
        table.add_row(s.machine_id, s.machine_type, s.host, f"{s.cpu_cores:g}", free, used,
                      s.supervisor_id or "[red]not registered[/red]")
    console.print(table)
    standby = f", standby {current.nimbus_standby_host}:{current.nimbus_port}" if current.nimbus_standby_host else ""
    console.print(f"Nimbus Thrift: {current.nimbus_host}:{current.nimbus_port}{standby}"
                  f" (leader: {current.nimbus_leader or 'none'})")
    console.print(f"Storm UI: {current.ui_url or 'not running (storm-webapp is not on Maven Central)'}")
    console.print(f"Home: {current.home}")
    if current.stopped_daemons:
        console.print(f"[red]Stopped daemons:[/red] {', '.join(current.stopped_daemons)}")
    if current.topologies:
        topologies = Table(title="Topologies", title_justify="left")
        for column in ("name", "id", "status", "workers", "executors", "uptime (s)"):
            topologies.add_column(column)
        for t in current.topologies:
            topologies.add_row(t.name, t.id, t.status, str(t.workers), str(t.executors), str(t.uptime_s))
        console.print(topologies)
        print_scheduler_status(console, current.topologies)
    else:
        console.print("No topologies running.")
