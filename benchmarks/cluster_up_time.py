"""How long ``cluster up`` takes: from nothing (Storm downloaded) and from the cache.

"From nothing" uses an empty STORM_HOME cache and an empty Maven local
repository, so every jar and Maven plugin comes from Maven Central, as on a
fresh machine. "From cache" then starts the same cluster again. Each run
ends with ``down --purge``. The cluster gets a temporary home and a free
port range, so it runs beside any other cluster.

    .venv/bin/python -m benchmarks.cluster_up_time [--cached-runs 3] [--skip-fresh]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cluster.errors import ClusterError
from cluster.layout import port_span
from cluster.local import LocalCluster
from cluster.spec import load_spec
from cluster.storm_home import ensure_storm_home
from cluster.ports import free_port_base

console = Console(width=120)


def timed_up(spec, home: Path, scheduler: str) -> tuple[float, float]:
    """Seconds for ``up`` and for ``down --purge`` of a cluster in ``home``."""
    cluster = LocalCluster(spec, home=home, port_base=free_port_base(port_span(len(spec.machine_ids()))))
    started = time.monotonic()
    try:
        cluster.up(scheduler=scheduler, report=lambda line: console.log(line))
        up_s = time.monotonic() - started
    finally:
        stopping = time.monotonic()
        cluster.down(purge=True)
        down_s = time.monotonic() - stopping
    return up_s, down_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=None)
    parser.add_argument("--scheduler", default="default")
    parser.add_argument("--cached-runs", type=int, default=3)
    parser.add_argument("--skip-fresh", action="store_true", help="Only time starts from the cache.")
    args = parser.parse_args()
    spec = load_spec(args.spec)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hetsched-up-bench-") as scratch:
        scratch = Path(scratch)
        if not args.skip_fresh:
            os.environ["HETSCHED_STORM_CACHE"] = str(scratch / "storm-cache")
            os.environ["HETSCHED_MAVEN_REPO_LOCAL"] = str(scratch / "m2")
            os.environ.pop("HETSCHED_STORM_HOME", None)
            console.rule("from nothing: empty STORM_HOME cache and empty Maven repository")
            assembling = time.monotonic()
            ensure_storm_home()
            assemble_s = time.monotonic() - assembling
            up_s, down_s = timed_up(spec, scratch / "fresh", args.scheduler)
            rows.append(("from nothing: assemble STORM_HOME from Maven Central", assemble_s, None))
            rows.append(("from nothing: then start the daemons", up_s, down_s))
            rows.append(("from nothing: total (download included)", assemble_s + up_s, None))
        for run in range(args.cached_runs):
            console.rule(f"from cache, run {run + 1}")
            up_s, down_s = timed_up(spec, scratch / f"cached-{run}", args.scheduler)
            rows.append((f"from cache, run {run + 1}", up_s, down_s))
    table = Table(title=f"hetsched cluster up ({len(spec.machine_ids())} supervisors, scheduler {args.scheduler})",
                  title_justify="left")
    table.add_column("start")
    table.add_column("seconds (up: until all supervisors registered)", justify="right")
    table.add_column("down --purge (s)", justify="right")
    for name, up_s, down_s in rows:
        table.add_row(name, f"{up_s:.1f}", "" if down_s is None else f"{down_s:.1f}")
    cached = [up for name, up, _ in rows if name.startswith("from cache")]
    if cached:
        table.add_row("from cache, median", f"{statistics.median(cached):.1f}", "")
    console.print(table)
    console.print(f"Host: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end.")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClusterError as fault:
        console.print(f"[red]error:[/red] {fault}")
        sys.exit(1)
