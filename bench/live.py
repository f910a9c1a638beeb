"""What a live measurement on its own local cluster needs (``bench/remote_tuple_cost.py``): its common options,
the recorded console and its header, its own planning service and cluster (always brought down), the cluster up
with the plugin asking that service, and the output file written whatever happened."""
from __future__ import annotations

import argparse
import contextlib
import os
import time
from pathlib import Path
from typing import Callable, Iterator

from rich.console import Console

from bench.planner_service import PlannerService
from cluster.local import LocalCluster
from cluster.spec import ClusterSpec



def add_run_options(parser: argparse.ArgumentParser, out_help: str, home: str, port_base: int) -> None:
    """``--out`` (required), ``--home`` and ``--port-base``, with the script's defaults."""
    parser.add_argument("--out", type=Path, required=True, help=out_help)
    parser.add_argument("--home", type=Path, default=Path(home))
    parser.add_argument("--port-base", type=int, default=port_base)


def recording_console() -> Console:
    """The console the script prints to; what it printed is kept for ``--out``."""
    return Console(width=160, highlight=False, record=True)


def header(title: str) -> str:
    """The first line of a run: what, when (UTC) and the machine's load average then (the machine is shared)."""
    return (f"{title}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; load average "
            + " ".join(f"{x:.2f}" for x in os.getloadavg()))


@contextlib.contextmanager
def written_out(console: Console, out: Path) -> Iterator[None]:
    """At the end, whatever happened: how long the run took, and everything printed written to ``out``."""
    started = time.monotonic()
    try:
        yield
    finally:
        console.print(f"took {time.monotonic() - started:.0f} s")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(console.export_text())


@contextlib.contextmanager
def cluster_and_planner(spec: ClusterSpec, home: Path, port_base: int,
                        work: Path) -> Iterator[tuple[LocalCluster, PlannerService]]:
    """The script's own local cluster and planning service (its database and log in ``work``); at the end,
    whatever happened, the cluster is brought down and then the service stopped."""
    service = PlannerService(work / "planner.db", work / "planner.log")
    cluster = LocalCluster(spec, home=home, port_base=port_base)
    try:
        yield cluster, service
    finally:
        try:
            cluster.down()
        finally:
            service.stop()


def up_with_plugin(cluster: LocalCluster, planner_url: str, report: Callable[[str], None]):
    """The cluster up with the hetsched plugin on Nimbus asking ``planner_url``; its status."""
    return cluster.up(scheduler="plugin", conf={"hetsched.planner.url": planner_url}, timeout_s=420.0, report=report)
