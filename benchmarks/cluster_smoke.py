"""A topology really runs on every machine, inside the machines' cgroups, and ``down`` leaves nothing.

Brings up the cluster (temporary home, free ports), submits the smoke
topology (Storm's TestWordSpout -> a Python streamparse bolt ->
TestGlobalCount, one worker per machine), shows where every executor, worker
JVM and Python process runs, the CPU each machine used while it ran, then
kills it, brings the cluster down and lists anything left behind.

    .venv/bin/python -m benchmarks.cluster_smoke [--spec F] [--scheduler default] [--run 30]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cluster import cgroups, smoke
from cluster.errors import ClusterError
from cluster.layout import port_span
from cluster.local import LocalCluster
from cluster.ports import free_port_base
from cluster.spec import load_spec
from observe.nimbus import Nimbus, NimbusError

console = Console(width=140)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=None)
    parser.add_argument("--scheduler", default="default")
    parser.add_argument("--run", type=float, default=30.0, help="Seconds to let the topology run while measuring CPU.")
    args = parser.parse_args()
    spec = load_spec(args.spec)
    with tempfile.TemporaryDirectory(prefix="hetsched-smoke-") as scratch:
        cluster = LocalCluster(spec, home=Path(scratch) / "home", port_base=free_port_base(port_span(len(spec.machine_ids()))))
        try:
            t0 = time.monotonic()
            cluster.up(scheduler=args.scheduler, report=lambda line: console.log(line))
            console.log(f"Cluster up in {time.monotonic() - t0:.1f} s.")
            t1 = time.monotonic()
            topology_id = smoke.submit(cluster)
            run = smoke.wait_until_running(cluster, topology_id)
            console.log(f"{topology_id}: every executor placed and every Python bolt process running "
                        f"{time.monotonic() - t1:.1f} s after submit.")
            before = {m.id: cluster.machine_cpu_seconds(m.id) for m in cluster.layout.machines}
            time.sleep(args.run)
            used = {m.id: cluster.machine_cpu_seconds(m.id) - before[m.id] for m in cluster.layout.machines}
            _print_placement(cluster, run, used, args.run)
            _print_counts(cluster, topology_id)
            smoke.kill(cluster)
        finally:
            t2 = time.monotonic()
            report = cluster.down(purge=True)
            console.log(f"down: {len(report.stopped_pids)} processes stopped, cgroups removed "
                        f"{report.removed_cgroups}, in {time.monotonic() - t2:.1f} s.")
        left = cluster.leftovers()
        console.print(f"Left behind after down: {left if left else 'nothing (no process, no cgroup)'}")
    return 1 if left else 0


def _print_placement(cluster: LocalCluster, run: smoke.SmokeRun, used: dict[str, float], window_s: float) -> None:
    by_machine = smoke.processes_by_machine(cluster)
    table = Table(title="Where the smoke topology runs", title_justify="left")
    for column in ("machine", "type", "quota", "executors (component x n)", "worker JVM pids", "Python pids",
                   "their cgroup (cpu)", f"CPU cores used over {window_s:g} s"):
        table.add_column(column)
    for m in cluster.layout.machines:
        executors = Counter(component for component, host, _port in run.executors if host == m.host)
        pids = by_machine[m.id]["workers"] + by_machine[m.id]["python"]
        groups = sorted({(cgroups.cgroup_of_pid(p) or "?").replace(cluster.layout.cluster_cgroup, "<cluster>") for p in pids})
        table.add_row(
            m.id, m.type, f"{m.cpu_cores:g}", ", ".join(f"{c} x{n}" for c, n in sorted(executors.items())),
            " ".join(map(str, by_machine[m.id]["workers"])), " ".join(map(str, by_machine[m.id]["python"])),
            " ".join(groups), f"{used[m.id] / window_s:.3f}",
        )
    console.print(table)


def _print_counts(cluster: LocalCluster, topology_id: str) -> None:
    with Nimbus(cluster.nimbus_address) as nimbus:
        counts = nimbus.counts(topology_id).totals()
    console.print(f"Tuple counts so far (Nimbus, sampled at topology.stats.sample.rate): {counts}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ClusterError, NimbusError) as fault:
        console.print(f"[red]error:[/red] {fault}")
        sys.exit(1)
