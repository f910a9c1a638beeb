"""Time the Nimbus plugin adds to a scheduling round: ``HetschedScheduler.schedule()`` for a
200-executor topology on 50 supervisors, asking the real planner on localhost.

Starts ``hetsched serve`` (free loopback port, temp database) unless ``--planner URL`` is given,
stores the paper's Table 3 profile set, builds the plugin's test classes and runs
``org.hetsched.storm.PluginScheduleTimeBenchmark`` (real Storm ``Cluster`` objects, real HTTP).
Each round schedules a fresh copy of the topology with the plugin and, on an identical cluster,
with Storm's DefaultScheduler, and with the plugin asking a loopback planner that answers at once
(the plugin's own work plus one local HTTP exchange); reports p50/p99 of each and of the time the
plugin adds over DefaultScheduler.

    .venv/bin/python -m benchmarks.plugin_schedule_time [--rounds 200] [--strategy paper]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from benchmarks.serving import percentile, start_service
from planner.fixtures import load_profiles

"""The ``hetsched`` command (``-m hetsched.cli`` would register the commands on a second copy of the app)."""
REPO = Path(__file__).resolve().parents[1]
POM = REPO / "storm-plugin" / "pom.xml"
TARGET = REPO / "storm-plugin" / "target"
MAIN = "org.hetsched.storm.PluginScheduleTimeBenchmark"
console = Console()






def store_profiles(url: str) -> str:
    profiles = load_profiles()
    with httpx.Client(base_url=url, timeout=30) as http:
        answer = http.put(f"/v1/profiles/{profiles.name}", json=profiles.model_dump(mode="json"))
        if answer.status_code != 200:
            raise SystemExit(f"storing profile set {profiles.name} failed: HTTP {answer.status_code} {answer.text}")
    return profiles.name


def java_class_path() -> str:
    """The plugin's classes, its test classes and every test-scope dependency, built by Maven."""
    classpath_file = TARGET / "benchmark.classpath"
    subprocess.run(
        ["mvn", "-q", "-B", "-f", str(POM), "test-compile", "dependency:build-classpath",
         f"-Dmdep.outputFile={classpath_file}", "-Dmdep.includeScope=test"],
        check=True,
    )
    return os.pathsep.join([str(TARGET / "classes"), str(TARGET / "test-classes"), classpath_file.read_text().strip()])


def run_benchmark(url: str, profile_set: str, strategy: str, rounds: int, warmup: int) -> dict:
    command = ["java", "-cp", java_class_path(), "-Dlog4j2.level=WARN", MAIN, url, profile_set, strategy, str(rounds), str(warmup)]
    with console.status(f"{warmup} warm-up and {rounds} measured rounds against {url}"):
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the benchmark failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    result_line = [line for line in done.stdout.splitlines() if line.startswith("{")][-1]
    return json.loads(result_line)


def report(result: dict) -> None:
    plugin, storm, instant = result["hetsched_ms"], result["default_scheduler_ms"], result["instant_planner_ms"]
    added = [p - s for p, s in zip(plugin, storm)]
    table = Table(title=f"schedule() per Nimbus round: {result['executors']} executors on {result['supervisors']} "
                        f"supervisors, strategy {result['strategy']}, {result['rounds']} rounds")
    for column in ("scheduler", "p50 ms", "p99 ms", "mean ms", "max ms"):
        table.add_column(column, justify="right" if column != "scheduler" else "left")
    for name, values in (("HetschedScheduler (real planner)", plugin), ("DefaultScheduler", storm),
                         ("added by the plugin (real - default)", added),
                         ("HetschedScheduler, instant loopback planner", instant)):
        table.add_row(name, f"{percentile(values, 50):.1f}", f"{percentile(values, 99):.1f}",
                      f"{statistics.fmean(values):.1f}", f"{max(values):.1f}")
    console.print(table)
    console.print(f"rounds that fell back instead of using the plan: {result['fallbacks']} "
                  f"(last status: {result['last_status']})")
    console.print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
                  + f" on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--planner", help="URL of a running planner (default: start hetsched serve here)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--strategy", default="paper")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="plugin-bench-") as tmp:
        process = None
        url = args.planner
        if url is None:
            process, url = start_service(Path(tmp))
        try:
            profile_set = store_profiles(url)
            result = run_benchmark(url, profile_set, args.strategy, args.rounds, args.warmup)
        finally:
            if process is not None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
    report(result)


if __name__ == "__main__":
    main()
