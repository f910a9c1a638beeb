"""Are the machines' CPU quotas real? Burn CPU in every machine's cgroup at once and compare.

One CPU-bound process per core of quota (rounded up) joins each machine's
cgroup; after a fixed window the CPU seconds each machine got are read from
the processes and from the cgroup's ``cpuacct.usage``. With quotas 1:2:4 the
machines should get CPU in the ratio 1:2:4, each close to its quota.

Uses the running cluster's cgroups when one runs in ``--home`` (then the
cgroup figure also counts its supervisor and workers); otherwise makes
temporary cgroups with the spec's quotas and removes them after.

    .venv/bin/python -m benchmarks.cluster_quota_ratio [--spec F] [--home DIR] [--window 30]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

from cluster import cgroups
from cluster.errors import ClusterError
from cluster.local import LocalCluster
from cluster.spec import load_spec

BURNER = "while True:\n    pass\n"
console = Console(width=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=None)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--window", type=float, default=30.0, help="Seconds of measurement.")
    parser.add_argument("--weight", type=int, default=None,
                        help="cpu.shares of the temporary cluster cgroup (default: the spec's cpu_weight, else the cluster default).")
    args = parser.parse_args()

    cluster = LocalCluster(load_spec(args.spec), home=args.home)
    hierarchies = cluster.hierarchies
    reason = cgroups.cannot_use_reason(hierarchies, f"hetsched/quota-bench-{os.getpid()}-probe")
    if reason:
        console.print(f"[red]Cannot measure quotas:[/red] {reason}")
        return 1
    use_cluster = cluster.is_running() and cluster.status().heterogeneous
    temporary_root = f"hetsched/quota-bench-{os.getpid()}"
    machines = cluster.layout.machines
    groups = {m.id: (m.cgroup if use_cluster else f"{temporary_root}/{m.id}") for m in machines}
    weight = None
    if not use_cluster:
        weight = args.weight or cluster.spec.cpu_weight or cgroups.DEFAULT_CLUSTER_SHARES
        cgroups.create(hierarchies, temporary_root, None, shares=weight)
        for m in machines:
            cgroups.create(hierarchies, groups[m.id], m.cpu_cores)
    where = (f"the running cluster's cgroups ({cluster.layout.home})" if use_cluster
             else f"temporary cgroups (cluster weight {weight} cpu.shares)")
    console.print(f"Burning CPU for {args.window:g} s in {where}; host has {os.cpu_count()} cores.")

    burners: dict[str, list[psutil.Popen]] = {}
    try:
        for m in machines:
            burners[m.id] = [
                psutil.Popen([sys.executable, "-c", BURNER], preexec_fn=_joiner(hierarchies, groups[m.id]))
                for _ in range(max(1, math.ceil(m.cpu_cores)))
            ]
        time.sleep(1.0)  # let every burner reach its cgroup's throttle before measuring
        start_cpu = {m.id: _cpu_seconds(burners[m.id]) for m in machines}
        start_usage = {m.id: cgroups.usage_ns(hierarchies, groups[m.id]) for m in machines}
        psutil.cpu_percent(None)
        started = time.monotonic()
        time.sleep(args.window)
        elapsed = time.monotonic() - started
        host_busy = psutil.cpu_percent(None)
        burned = {m.id: _cpu_seconds(burners[m.id]) - start_cpu[m.id] for m in machines}
        usage = {m.id: (cgroups.usage_ns(hierarchies, groups[m.id]) - start_usage[m.id]) / 1e9 for m in machines}
    finally:
        for processes in burners.values():
            for p in processes:
                p.kill()
                p.wait()
        if not use_cluster:
            cgroups.remove(hierarchies, temporary_root)

    smallest = min(machines, key=lambda m: m.cpu_cores)
    table = Table(title=f"CPU over {elapsed:.1f} s, all machines burning at once", title_justify="left")
    for column in ("machine", "type", "quota (cores)", "burner CPU s", "cgroup CPU s", "cores used", "of quota",
                   "ratio (quota ratio)"):
        table.add_column(column, justify="left" if column in ("machine", "type") else "right")
    for m in machines:
        cores_used = usage[m.id] / elapsed
        table.add_row(
            m.id, m.type, f"{m.cpu_cores:g}", f"{burned[m.id]:.2f}", f"{usage[m.id]:.2f}", f"{cores_used:.3f}",
            f"{100 * cores_used / m.cpu_cores:.1f}%",
            f"{usage[m.id] / usage[smallest.id]:.2f} ({m.cpu_cores / smallest.cpu_cores:g})",
        )
    console.print(table)
    console.print(f"Host CPU busy during the window (all processes): {host_busy:.0f}% of {os.cpu_count()} cores.")
    return 0


def _joiner(hierarchies: cgroups.Hierarchies, cgroup: str):
    def join() -> None:
        cgroups.join(hierarchies, cgroup, os.getpid())

    return join


def _cpu_seconds(processes: list[psutil.Popen]) -> float:
    total = 0.0
    for p in processes:
        times = p.cpu_times()
        total += times.user + times.system
    return total


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClusterError as fault:
        console.print(f"[red]error:[/red] {fault}")
        sys.exit(1)
