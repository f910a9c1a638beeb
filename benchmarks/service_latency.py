"""POST /v1/plans latency of a live ``hetsched serve`` on localhost, sequential and with concurrent callers.

Starts the service as a subprocess (free loopback port, temp database), then for each cluster
(the paper's scenario 3, 180 machines, and a 1,000-machine cluster of the same three types)
sends the Linear topology with the default strategy: N requests one after another, then N
requests from C concurrent clients (httpx async). Reports p50/p99 of the whole round trip and
the core's own planning time (the plan's ``stats.elapsed_ms``), so you can tell whether HTTP,
JSON or planning dominates.

    .venv/bin/python benchmarks/service_latency.py [--requests 200] [--concurrency 16]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from planner.client import request_body
from planner.fixtures import load_scenario, scaled_cluster
from planner.model import Cluster, PlanRequest, ProfileRef

HETSCHED = "from hetsched.cli import main; main()"
"""The ``hetsched`` command (``-m hetsched.cli`` would register the commands on a second copy of the app)."""
REPO = Path(__file__).resolve().parents[1]
console = Console()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def start_service(tmp: Path) -> tuple[subprocess.Popen, str]:
    log = (tmp / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", HETSCHED, "serve", "--port", "0", "--db", str(tmp / "bench.db")],
        cwd=tmp, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"Uvicorn running on (http://[\d.]+:\d+)", (tmp / "serve.log").read_text())
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"hetsched serve did not start:\n{(tmp / 'serve.log').read_text()}")


def plan_body(cluster: Cluster) -> bytes:
    scenario = load_scenario("linear", 3)
    request = PlanRequest(topology=scenario.topology, cluster=cluster,
                          profiles=ProfileRef(entries=scenario.profiles.entries))
    return json.dumps(request_body(request)).encode()


def sequential(url: str, body: bytes, n: int) -> tuple[list[float], list[float]]:
    latencies, core = [], []
    headers = {"content-type": "application/json"}
    with httpx.Client(base_url=url, timeout=120) as http, Progress(console=console, transient=True) as progress:
        task = progress.add_task("sequential", total=n)
        for _ in range(n):
            start = time.perf_counter()
            response = http.post("/v1/plans", content=body, headers=headers)
            latencies.append((time.perf_counter() - start) * 1000)
            if response.status_code != 201:
                raise SystemExit(f"POST /v1/plans answered {response.status_code}: {response.text[:300]}")
            core.append(response.json()["stats"]["elapsed_ms"])
            progress.advance(task)
    return latencies, core


async def concurrent(url: str, body: bytes, n: int, clients: int) -> tuple[list[float], list[float], float]:
    latencies, core = [], []
    headers = {"content-type": "application/json"}
    remaining = iter(range(n))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient) -> None:
        for _ in remaining:
            start = time.perf_counter()
            response = await http.post("/v1/plans", content=body, headers=headers)
            latencies.append((time.perf_counter() - start) * 1000)
            if response.status_code != 201:
                raise SystemExit(f"POST /v1/plans answered {response.status_code}: {response.text[:300]}")
            core.append(response.json()["stats"]["elapsed_ms"])

    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        wall_s = time.perf_counter() - start
    return latencies, core, n / wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per run (default 200)")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()

    clusters = {
        "scenario 3 (180 machines)": load_scenario("linear", 3).cluster,
        "1,000 machines (111/389/500)": scaled_cluster((111, 389, 500)),
    }
    table = Table(title=f"POST /v1/plans, Linear, default strategy, {args.requests} requests per row (ms)")
    for column in ("cluster", "callers", "p50", "p99", "max", "core p50", "core p99", "req/s"):
        table.add_column(column, justify="right" if column != "cluster" else "left")

    with tempfile.TemporaryDirectory(prefix="hetsched-bench-") as tmp:
        process, url = start_service(Path(tmp))
        try:
            console.print(f"service at {url} (pid {process.pid}), {os.cpu_count()} CPUs")
            for name, cluster in clusters.items():
                body = plan_body(cluster)
                sequential(url, body, args.warmup)
                start = time.perf_counter()
                lat, core = sequential(url, body, args.requests)
                rate = args.requests / (time.perf_counter() - start)
                table.add_row(name, "1", *(f"{v:.1f}" for v in (percentile(lat, 50), percentile(lat, 99), max(lat),
                                                               percentile(core, 50), percentile(core, 99))), f"{rate:.1f}")
                lat, core, rate = asyncio.run(concurrent(url, body, args.requests, args.concurrency))
                table.add_row(name, str(args.concurrency),
                              *(f"{v:.1f}" for v in (percentile(lat, 50), percentile(lat, 99), max(lat),
                                                     percentile(core, 50), percentile(core, 99))), f"{rate:.1f}")
                console.print(f"{name}: request body {len(body) / 1000:.1f} kB, median plan "
                              f"{statistics.median(core):.1f} ms of core planning")
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=15)
    console.print(table)
    console.print("core = the plan's stats.elapsed_ms (validation, strategy, scoring inside the service); "
                  "the rest is HTTP, JSON, storage and queueing.")


if __name__ == "__main__":
    main()
