"""POST /v1/plans latency of a live ``hetsched serve`` on localhost, sequential and with concurrent callers.

Starts the service as a subprocess (free loopback port, temp database), then for each cluster
(the paper's scenario 3, 180 machines, and a 1,000-machine cluster of the same three types)
sends the Linear topology with the default strategy: N requests one after another, then N
requests from C concurrent clients (httpx async). Reports p50/p99 of the whole round trip and
the core's own planning time (the plan's ``stats.elapsed_ms``), so you can tell whether HTTP,
JSON or planning dominates.

    .venv/bin/python -m benchmarks.service_latency [--requests 200] [--concurrency 16]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import psutil
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks.serving import percentile, start_service
from planner.client import request_body
from planner.fixtures import load_scenario, scaled_cluster
from planner.model import Cluster, PlanRequest, ProfileRef
from planner.strategies import DEFAULT_STRATEGY

"""The ``hetsched`` command (``-m hetsched.cli`` would register the commands on a second copy of the app)."""
console = Console(width=200)






def server_cpu_s(process: subprocess.Popen) -> float:
    """CPU seconds the service and its planning processes have used (user + system; children that ended count
    through ``children_*``): a figure the machine's other load does not inflate much."""
    service = psutil.Process(process.pid)
    total = 0.0
    for p in [service, *service.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + (times.children_user + times.children_system if p is service else 0.0)
    return total


def plan_body(cluster: Cluster, strategy: str | None) -> bytes:
    scenario = load_scenario("linear", 3)
    request = PlanRequest(topology=scenario.topology, cluster=cluster, strategy=strategy,
                          profiles=ProfileRef(entries=scenario.profiles.entries))
    return json.dumps(request_body(request)).encode()


def record(response: httpx.Response, elapsed_ms: float, latencies: list[float], core: list[float], errors: list[str]) -> None:
    """A 201 adds its round trip and the core's planning time; anything else is counted as an error."""
    if response.status_code == 201:
        latencies.append(elapsed_ms)
        core.append(response.json()["stats"]["elapsed_ms"])
    else:
        errors.append(f"{response.status_code}: {response.text[:200]}")


def sequential(url: str, body: bytes, n: int) -> tuple[list[float], list[float], list[str]]:
    latencies, core, errors = [], [], []
    headers = {"content-type": "application/json"}
    with httpx.Client(base_url=url, timeout=120) as http, Progress(console=console, transient=True) as progress:
        task = progress.add_task("sequential", total=n)
        for _ in range(n):
            start = time.perf_counter()
            response = http.post("/v1/plans", content=body, headers=headers)
            record(response, (time.perf_counter() - start) * 1000, latencies, core, errors)
            progress.advance(task)
    return latencies, core, errors


async def concurrent(url: str, body: bytes, n: int, clients: int) -> tuple[list[float], list[float], list[str], float]:
    latencies, core, errors = [], [], []
    headers = {"content-type": "application/json"}
    remaining = iter(range(n))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient) -> None:
        for _ in remaining:
            start = time.perf_counter()
            response = await http.post("/v1/plans", content=body, headers=headers)
            record(response, (time.perf_counter() - start) * 1000, latencies, core, errors)

    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        wall_s = time.perf_counter() - start
    return latencies, core, errors, n / wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per run (default 200)")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--clusters", choices=("all", "scenario3", "1000"), default="all")
    parser.add_argument("--strategy", default=None, help="default: the service's default strategy")
    args = parser.parse_args()

    clusters = {}
    if args.clusters in ("all", "scenario3"):
        clusters["scenario 3 (180 machines)"] = load_scenario("linear", 3).cluster
    if args.clusters in ("all", "1000"):
        clusters["1,000 machines (111/389/500)"] = scaled_cluster((111, 389, 500))
    strategy = args.strategy or f"default strategy ({DEFAULT_STRATEGY})"
    table = Table(title=f"POST /v1/plans, Linear, {strategy}, {args.requests} requests per row (ms)")
    for column in ("cluster", "callers", "ok", "errors", "p50", "p99", "max", "core p50", "core p99", "req/s", "server CPU/req"):
        table.add_column(column, justify="right" if column != "cluster" else "left")

    def add_row(name: str, callers: int, lat: list[float], core: list[float], errors: list[str], rate: float,
                cpu_ms: float) -> None:
        figures = (percentile(lat, 50), percentile(lat, 99), max(lat), percentile(core, 50), percentile(core, 99)) if lat else ()
        row = [name, str(callers), str(len(lat)), str(len(errors)), *(f"{v:.1f}" for v in figures), f"{rate:.1f}",
               f"{cpu_ms:.1f}"]
        table.add_row(*row[:4], *(row[4:] if lat else ["-"] * 5 + row[-2:]))
        console.print(" | ".join(row))
        for error in sorted(set(errors))[:3]:
            console.print(f"  error: {error}")

    with tempfile.TemporaryDirectory(prefix="hetsched-bench-") as tmp:
        process, url = start_service(Path(tmp))
        try:
            console.print(f"service at {url} (pid {process.pid}), {os.cpu_count()} CPUs, "
                          f"load average {os.getloadavg()[0]:.1f} at start")
            for name, cluster in clusters.items():
                body = plan_body(cluster, args.strategy)
                sequential(url, body, args.warmup)
                start, cpu = time.perf_counter(), server_cpu_s(process)
                lat, core, errors = sequential(url, body, args.requests)
                add_row(name, 1, lat, core, errors, args.requests / (time.perf_counter() - start),
                        (server_cpu_s(process) - cpu) * 1000 / args.requests)
                cpu = server_cpu_s(process)
                lat, core, errors, rate = asyncio.run(concurrent(url, body, args.requests, args.concurrency))
                add_row(name, args.concurrency, lat, core, errors, rate, (server_cpu_s(process) - cpu) * 1000 / args.requests)
                console.print(f"{name}: request body {len(body) / 1000:.1f} kB")
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
            log_lines = (Path(tmp) / "serve.log").read_text().splitlines()
            console.print(f"service log: {len(log_lines)} lines; last: {log_lines[-3:]}")
    console.print(table)
    console.print(f"load average {os.getloadavg()[0]:.1f} at the end")
    console.print("core = the plan's stats.elapsed_ms (validation, strategy, scoring inside the service); "
                  "the rest is HTTP, JSON, storage and queueing. server CPU/req = CPU ms per request of the service and its planning processes.")


if __name__ == "__main__":
    main()
