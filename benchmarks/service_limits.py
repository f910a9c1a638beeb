"""The planning service's limits measured on a live ``hetsched serve``: time limit, size limit, small lane.

Starts the service as a subprocess (free loopback port, temp database; ``--repo`` runs another
checkout's code, e.g. a ``git worktree`` of the base commit) and measures:

1. a plan of 2,000 components on 1,000 machines (3 machine types, the default strategy): its
   answer and how long it took (the time limit is ``--time-limit-s``);
2. the CPU the service and all its child processes use over 1 s, starting 2 s after that answer
   (psutil ``cpu_times`` deltas; ~0 when the overrunning plan was really stopped);
3. the round trip of the next plugin-sized request (Linear on the paper's scenario 2: 4
   components, 30 machines), and the same request's median on an idle service for reference;
4. peak memory during request 1, which is exactly at the documented size limit (2,000 x 1,000
   components x machines, 2,000^2 x 3 components^2 x machine types): the memory of the service
   and its children sampled every 20 ms, summed as RSS (which counts pages they share more than
   once) and as PSS (shared pages split among their users), and the largest single RSS; the
   same after the plan; then a request one component over the limit;
5. the round trip of a plugin-sized request sent 1 s after two plans of 2,000 x 1,000 that run
   to the time limit, and the order in which the three were answered.

    .venv/bin/python -m benchmarks.service_limits [--repo PATH] [--time-limit-s 10]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from rich.console import Console
from rich.table import Table

from benchmarks.serving import start_service
from planner.random_requests import tree_request
from planner.client import request_body
from planner.fixtures import load_scenario
from planner.model import PlanRequest, ProfileRef

REPO = Path(__file__).resolve().parents[1]
console = Console(width=200)


def tree_plan_request(components: int, machines: int, machine_types: int = 3, seed: int = 11) -> dict:
    """planner.random_requests.tree_request as PlanRequest JSON: a request whose planning runs long and needs memory."""
    rq = tree_request(components, machines, machine_types, seed)
    return request_body(PlanRequest(topology=rq.topology, cluster=rq.cluster, profiles=ProfileRef(entries=rq.entries)))


def plugin_sized_request() -> dict:
    """Linear on the paper's scenario 2: 4 components on 30 machines, what a Nimbus plugin sends."""
    scenario = load_scenario("linear", 2)
    return request_body(PlanRequest(topology=scenario.topology, cluster=scenario.cluster,
                                    profiles=ProfileRef(entries=scenario.profiles.entries)))




def family(pid: int) -> list[psutil.Process]:
    service = psutil.Process(pid)
    return [service, *service.children(recursive=True)]


def cpu_seconds_over(pid: int, window_s: float) -> float:
    """CPU seconds (user + system) the service and its children used during the next ``window_s``."""
    def sample() -> dict[int, float]:
        times = {}
        for p in family(pid):
            try:
                t = p.cpu_times()
                times[p.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return times

    before = sample()
    time.sleep(window_s)
    after = sample()
    return sum(t - before.get(p, 0.0) for p, t in after.items())


@dataclass
class MemorySampler:
    """Peak RSS of the service and its children, sampled every ``interval_s`` in a thread."""

    pid: int
    interval_s: float = 0.02
    peak_sum_mb: float = 0.0
    peak_pss_mb: float = 0.0
    peak_single_mb: float = 0.0
    processes_seen: set[int] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> MemorySampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = pss_total = 0.0
            for p in family(self.pid):
                try:
                    memory = p.memory_full_info()
                except psutil.NoSuchProcess:
                    continue
                self.processes_seen.add(p.pid)
                total += memory.rss / 1e6
                pss_total += memory.pss / 1e6
                self.peak_single_mb = max(self.peak_single_mb, memory.rss / 1e6)
            self.peak_sum_mb = max(self.peak_sum_mb, total)
            self.peak_pss_mb = max(self.peak_pss_mb, pss_total)
            self._stop.wait(self.interval_s)


@dataclass
class Answer:
    status: int
    error: str
    seconds: float
    finished_at: float


def post(url: str, body: bytes, timeout_s: float = 600) -> Answer:
    with httpx.Client(base_url=url, timeout=timeout_s) as http:
        start = time.perf_counter()
        response = http.post("/v1/plans", content=body, headers={"content-type": "application/json"})
        end = time.perf_counter()
    error = "" if response.status_code == 201 else response.json().get("error", "?")
    return Answer(response.status_code, error, end - start, end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose service to run (default: this one)")
    parser.add_argument("--time-limit-s", type=float, default=10.0, help="the service's --time-limit-s")
    parser.add_argument("--label", default="", help="a name for the run in the table title")
    args = parser.parse_args()

    big = json.dumps(tree_plan_request(2000, 1000)).encode()
    over = json.dumps(tree_plan_request(2001, 1000)).encode()
    small = json.dumps(plugin_sized_request()).encode()
    rows: list[tuple[str, str]] = []

    def row(what: str, figure: str) -> None:
        rows.append((what, figure))
        console.print(f"{what}: {figure}")

    with tempfile.TemporaryDirectory(prefix="hetsched-limits-") as tmp:
        process, url = start_service(Path(tmp), args.repo.resolve(), ["--time-limit-s", f"{args.time_limit_s:g}"], python=str(REPO / ".venv/bin/python"))
        try:
            console.print(f"service at {url} (pid {process.pid}) from {args.repo}, {os.cpu_count()} CPUs, "
                          f"load average {os.getloadavg()[0]:.1f}; bodies: 2,000 x 1,000 {len(big) / 1e6:.2f} MB, "
                          f"plugin-sized {len(small) / 1e3:.1f} kB")
            with MemorySampler(process.pid) as memory:
                time.sleep(0.2)
            row(f"memory of the idle service + children ({len(memory.processes_seen)} processes): RSS summed; PSS summed (MB)",
                f"{memory.peak_sum_mb:.0f}; {memory.peak_pss_mb:.0f}")
            idle = [post(url, small).seconds * 1000 for _ in range(20)]
            row("plugin-sized plan on an idle service, median of 20 (ms)", f"{statistics.median(idle):.0f}")

            with MemorySampler(process.pid) as memory:
                answer = post(url, big)
            row(f"2,000 x 1,000 plan, time limit {args.time_limit_s:g} s: answer", f"{answer.status} {answer.error}")
            row("2,000 x 1,000 plan: answered after (s)", f"{answer.seconds:.2f}")
            row("peak memory during it, service + children: RSS summed; PSS summed (MB)",
                f"{memory.peak_sum_mb:.0f}; {memory.peak_pss_mb:.0f}")
            row("peak RSS during it, largest single process (MB)", f"{memory.peak_single_mb:.0f}")
            time.sleep(max(0.0, 2.0 - (time.perf_counter() - answer.finished_at)))
            row("CPU of service + children over 1 s starting 2 s after that answer (s)",
                f"{cpu_seconds_over(process.pid, 1.0):.2f}")
            row("the next plugin-sized plan: round trip (ms)", f"{post(url, small).seconds * 1000:.0f}")
            with MemorySampler(process.pid) as memory:
                time.sleep(0.2)
            row("memory of the service + children after it: RSS summed; PSS summed (MB)",
                f"{memory.peak_sum_mb:.0f}; {memory.peak_pss_mb:.0f}")

            with MemorySampler(process.pid) as memory:
                refused = post(url, over)
            row("2,001 x 1,000 plan (over the size limit): answer", f"{refused.status} {refused.error}")
            row("2,001 x 1,000 plan: answered after (ms); peak PSS summed (MB)",
                f"{refused.seconds * 1000:.0f}; {memory.peak_pss_mb:.0f}")

            with ThreadPoolExecutor(3) as threads:
                first = threads.submit(post, url, big)
                second = threads.submit(post, url, big)
                time.sleep(1.0)
                waiting = threads.submit(post, url, small)
                answers = {"big 1": first.result(), "big 2": second.result(), "plugin-sized": waiting.result()}
            order = ", ".join(f"{name} ({a.status} {a.error or 'ok'})"
                              for name, a in sorted(answers.items(), key=lambda item: item[1].finished_at))
            row("plugin-sized plan sent 1 s after two 2,000 x 1,000 plans: round trip (ms)",
                f"{answers['plugin-sized'].seconds * 1000:.0f}")
            row("order of the answers", order)
            time.sleep(2.0)
            row("CPU of service + children over 1 s, 2 s after the last answer (s)", f"{cpu_seconds_over(process.pid, 1.0):.2f}")
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
            killed = (Path(tmp) / "serve.log").read_text().count("overran the time limit")
            row("plans the service had to cut off past the limit (service log)", str(killed))
            recycled = (Path(tmp) / "serve.log").read_text().count("after its task; replacing it")
            row("planning processes replaced for the memory they held after a task (service log)", str(recycled))
    table = Table(title=f"hetsched serve limits{' (' + args.label + ')' if args.label else ''}: {args.repo}")
    table.add_column("measurement")
    table.add_column("figure", justify="right")
    for what, figure in rows:
        table.add_row(what, figure)
    console.print(table)
    console.print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
