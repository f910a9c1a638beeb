"""The workers' metrics hook on a live local cluster: its records, its overhead, and a service that goes away.

Three checks, each on Linear pinned by the hetsched plugin to one plan (so every run has the same placement):

* ``records``: Linear with the hook on; after a while every executor has records in the service's store,
  with counters that move and CPU that grows.
* ``overhead``: the same plan with the hook off and on, alternated (off, on, on, off, ...), repeated;
  throughput (tuples/s into the sink, and all bolts) and the machines' cgroup CPU per run, side by side.
* ``outage``: Linear with the hook shipping to a metrics service of its own (a second ``hetsched serve`` started
  here) and a small buffer; throughput in a window with the service up, one with it stopped for a minute, one
  after it is back; then what the store holds: records of the outage that were kept, records the workers
  dropped (their count), and no record stored twice.

    .venv/bin/python -m benchmarks.worker_metrics records|overhead|outage --home CLUSTER_HOME --records-dir DIR
        [--planner URL] [--repeats 3] [--window-s 40] [--warmup-s 20] [--out FILE.json]

Needs a local cluster started with ``--scheduler plugin --conf hetsched.planner.url=URL`` whose planner keeps its
records in ``--records-dir``, and nothing else running on it. Prints a table and writes the raw numbers as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench import measure
from bench.run import RunContext, _kill_quietly, _wait_until_running, _window_samples, run, submit
from bench.run import RunResult
from bench.schedulers import RunSpec
from cluster import running_cluster
from cluster.handle import LocalClusterHandle
from observe.progress import QuietReporter
from observe.rates import component_rates
from planner.client import PlannerClient
from planner.model import PlanRequest, ProfileRef, ProfileSet
from planner.profiles import machine_base_load
from spark_profiling.collector.workflow import nimbus_planner_url
from topologies import conf as keys
from topologies.catalog import lookup, planner_topology
from topologies.measure import roles
from topologies.submission import metrics_conf

console = Console(width=160)
REPO = Path(__file__).resolve().parents[1]
TOPOLOGY = "linear"
PROFILES = REPO / "profiles" / "default-cluster.json"


def records_of(records_dir: Path, topology_name: str, run_id: str | None = None) -> list[dict[str, Any]]:
    """Every stored record of a topology name (and run id), in file order."""
    out: list[dict[str, Any]] = []
    for path in sorted((records_dir / f"topology={topology_name}").glob("day=*/*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if run_id is None or record.get("run_id") == run_id:
                out.append(record)
    return out


def executor_series(records: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Records per (component, first task, pid), ordered by sample time."""
    series: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        series[(r["component"], r["task_id"], r["pid"])].append(r)
    for samples in series.values():
        samples.sort(key=lambda r: r["ts"])
    return dict(series)


def series_summary(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per executor: samples, counter and CPU growth over its series, and whether they only ever grew."""
    rows = []
    for (component, task, pid), samples in sorted(executor_series(records).items()):
        first, last = samples[0], samples[-1]
        span = last["ts"] - first["ts"]
        monotone = all(b["executed"] >= a["executed"] and b["cpu_seconds"] >= a["cpu_seconds"]
                       for a, b in zip(samples, samples[1:]))
        rows.append({
            "component": component, "task_id": task, "executor": first.get("executor"), "pid": pid,
            "worker_pid": None, "machine": first.get("machine"), "machine_type": first.get("machine_type"),
            "machine_cores": first.get("machine_cores"), "samples": len(samples), "span_s": round(span, 1),
            "executed_per_s": round((last["executed"] - first["executed"]) / span, 2) if span else None,
            "cpu_pct_of_core": round(100 * (last["cpu_seconds"] - first["cpu_seconds"]) / span, 2) if span else None,
            "subprocess_cpu": "subprocess_cpu_seconds" in last, "thread_cpu": "thread_cpu_seconds" in last,
            "monotone": monotone,
        })
    return rows


def duplicates(records: list[dict[str, Any]]) -> int:
    """Records stored more than once: the same executor, pid and sample time."""
    keys_seen = [(r["run_id"], r["task_id"], r["pid"], r["ts"]) for r in records]
    return len(keys_seen) - len(set(keys_seen))


class Setup:
    """The cluster, the planner, the stored profile set and one plan for Linear."""

    def __init__(self, home: Path | None, planner: str | None, window_s: float, warmup_s: float):
        local = running_cluster(home)
        if local is None:
            raise SystemExit("error: no local cluster is running (give --home).")
        self.cluster = local
        handle = LocalClusterHandle(local)
        self.planner_url = planner or nimbus_planner_url(handle)
        if not self.planner_url:
            raise SystemExit("error: the cluster's Nimbus has no hetsched.planner.url; give --planner.")
        profile_set = ProfileSet.model_validate_json(PROFILES.read_text())
        base_load = machine_base_load(profile_set)
        entry = lookup(TOPOLOGY)
        with PlannerClient(self.planner_url) as client:
            client.put_profile_set(profile_set)
            self.plan = client.plan(PlanRequest(topology=planner_topology(entry),
                                                cluster=local.spec.planner_cluster(base_load),
                                                profiles=ProfileRef(name=profile_set.name)))
        self.profile_set = profile_set.name
        self.ctx = RunContext(cluster=local, planner_url=self.planner_url, profile_set=profile_set.name,
                              window_s=window_s, warmup_s=warmup_s, start_timeout_s=240.0,
                              reporter=QuietReporter(), base_load=base_load)

    def spec(self, name: str, metrics: bool, extra: dict[str, Any] | None = None, hook_only: bool = False) -> RunSpec:
        """``hook_only``: only ``topology.auto.task.hooks``, as the one storm.yaml line gives it (no log handler)."""
        conf: dict[str, Any] = {keys.STATS_SAMPLE_RATE: 1.0, keys.PLANNER_URL: self.planner_url,
                                "topology.disable.loadaware.messaging": True, **(extra or {})}
        if metrics and hook_only:
            conf[keys.TASK_HOOKS] = [keys.METRICS_HOOK_CLASS]
        elif metrics:
            conf.update(metrics_conf(conf, conf.get(keys.METRICS_URL)))
        counts = {c: n for c, n in self.plan.instances.items() if not c.startswith("__")}
        return RunSpec(TOPOLOGY, "planned", name, counts, conf, plan_id=self.plan.id, profiles=self.profile_set,
                       note="metrics on" if metrics else "metrics off")


def machine_cpu_pct(result: RunResult) -> float:
    """The cgroup CPU of every machine over the window, percent of one core (summed over machines)."""
    return sum(100 * m.cpu_seconds / m.window_s for m in result.machines)


# --- records --------------------------------------------------------------------------------------------------

def check_records(setup: Setup, records_dir: Path, hook_only: bool = False) -> dict[str, Any]:
    name = "metrics-records-hook-only" if hook_only else "metrics-records"
    result = run(setup.spec(name, metrics=True, hook_only=hook_only), setup.ctx, setup.plan)
    if not result.ok:
        raise SystemExit(f"error: the run failed: {result.reason}")
    records = records_of(records_dir, name, result.topology_id)
    placed = {c: n for c, n in result.parallelism.items()}
    rows = series_summary(records)
    table = Table(title=f"{name} ({result.topology_id}): records per executor in {records_dir}", title_justify="left")
    for column in ("component", "executor", "pid", "machine", "type", "cores", "samples", "span s", "executed/s",
                   "CPU % core", "subprocess", "monotone"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["component"], str(r["executor"]), str(r["pid"]), str(r["machine"]), str(r["machine_type"]),
                      str(r["machine_cores"]), str(r["samples"]), str(r["span_s"]), str(r["executed_per_s"]),
                      str(r["cpu_pct_of_core"]), str(r["subprocess_cpu"]), str(r["monotone"]))
    console.print(table)
    executors = sum(placed.values())
    console.print(f"executors placed {executors}, executors with records {len(rows)}, records {len(records)}, "
                  f"stored twice {duplicates(records)}; Storm's sink rate {result.measured.sink_throughput:.2f} tuples/s",
                  highlight=False)
    return {"topology_id": result.topology_id, "plan_id": setup.plan.id, "parallelism": placed, "hook_only": hook_only,
            "executors": executors, "records": len(records), "duplicates": duplicates(records), "series": rows,
            "storm_sink_throughput": result.measured.sink_throughput}


# --- overhead -------------------------------------------------------------------------------------------------

def check_overhead(setup: Setup, repeats: int) -> dict[str, Any]:
    order = []
    for i in range(repeats):
        order += [False, True] if i % 2 == 0 else [True, False]
    runs = []
    for i, metrics in enumerate(order):
        label = "on" if metrics else "off"
        console.print(f"run {i + 1}/{len(order)}: metrics {label}", highlight=False)
        result = run(setup.spec(f"metrics-overhead-{label}", metrics), setup.ctx, setup.plan)
        if not result.ok:
            console.print(f"[red]run {i + 1} failed:[/red] {result.reason}")
            runs.append({"metrics": metrics, "ok": False, "reason": result.reason})
            continue
        runs.append({"metrics": metrics, "ok": True, "topology_id": result.topology_id,
                     "sink_tuples_per_s": round(result.measured.sink_throughput, 3),
                     "bolt_tuples_per_s": round(result.measured.bolt_throughput, 3),
                     "spout_emit_per_s": round(result.measured.spout_emit_rate, 3),
                     "machines_cpu_pct_core": round(machine_cpu_pct(result), 2),
                     "machines": {m.machine: round(100 * m.cpu_seconds / m.window_s, 2) for m in result.machines},
                     "load_average": result.load_average})
        console.print(f"  sink {runs[-1]['sink_tuples_per_s']} tuples/s, bolts {runs[-1]['bolt_tuples_per_s']} "
                      f"tuples/s, machines' CPU {runs[-1]['machines_cpu_pct_core']} % of a core", highlight=False)
    summary = {}
    for metrics in (False, True):
        ok = [r for r in runs if r["metrics"] is metrics and r["ok"]]
        if ok:
            summary["on" if metrics else "off"] = {
                field: {"median": round(statistics.median(r[field] for r in ok), 3),
                        "min": min(r[field] for r in ok), "max": max(r[field] for r in ok), "runs": len(ok)}
                for field in ("sink_tuples_per_s", "bolt_tuples_per_s", "machines_cpu_pct_core")
            }
    if "on" in summary and "off" in summary:
        for field in ("sink_tuples_per_s", "bolt_tuples_per_s", "machines_cpu_pct_core"):
            off, on = summary["off"][field]["median"], summary["on"][field]["median"]
            summary.setdefault("change_pct", {})[field] = round(100 * (on - off) / off, 2) if off else None
        # CPU per tuple: what the hook costs for the work done, whatever the throughput
        summary["cpu_pct_per_tuple_per_s"] = {
            k: round(summary[k]["machines_cpu_pct_core"]["median"] / summary[k]["bolt_tuples_per_s"]["median"], 4)
            for k in ("off", "on")}
    table = Table(title=f"Linear, plan {setup.plan.id}, metrics off vs on ({repeats} of each, alternated)",
                  title_justify="left")
    for column in ("", "sink tuples/s median [min-max]", "bolt tuples/s median [min-max]",
                   "machines' CPU % core median [min-max]"):
        table.add_column(column)
    for k in ("off", "on"):
        if k in summary:
            s = summary[k]
            table.add_row(k, *(f"{s[f]['median']} [{s[f]['min']}-{s[f]['max']}]"
                               for f in ("sink_tuples_per_s", "bolt_tuples_per_s", "machines_cpu_pct_core")))
    console.print(table)
    if "change_pct" in summary:
        console.print(f"on vs off (medians): {summary['change_pct']}; CPU % per tuple/s {summary['cpu_pct_per_tuple_per_s']}",
                      highlight=False)
    return {"plan_id": setup.plan.id, "order": ["on" if m else "off" for m in order], "runs": runs, "summary": summary}


# --- outage ---------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MetricsService:
    """A ``hetsched serve`` of its own, to stop and start again: where the outage run ships its records."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.records_dir = folder / "records"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "serve.log", "a")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "hetsched"), "serve", "--port", str(self.port), "--db",
             str(self.folder / "metrics.db"), "--records-dir", str(self.records_dir)],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with PlannerClient(self.url, timeout_s=2) as client:
                    client.health()
                return
            except Exception:
                time.sleep(0.5)
        raise SystemExit(f"error: the metrics service on port {self.port} did not start (see {self.folder}/serve.log)")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process = None

    def summary(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/v1/metrics/summary", timeout=5).json()


def outage_counts(records: list[dict[str, Any]], stopped_at: float, back_at: float,
                  interval_s: float) -> dict[str, Any]:
    """What became of the samples taken while the service was unreachable: kept (shipped later) or dropped and counted.

    Records of an executor's last moments (the worker's pid instead of its subprocess's, no CPU) are left out.
    """
    executors = len({(r["component"], r["task_id"]) for r in records})
    in_outage = [r for r in records if stopped_at <= r["ts"] <= back_at]
    dropped_by_worker: dict[str, int] = {}
    for r in records:
        dropped_by_worker[r["worker_id"]] = max(dropped_by_worker.get(r["worker_id"], 0), r["worker_dropped"])
    return {"records": len(records), "executors": executors, "outage_s": round(back_at - stopped_at, 1),
            "samples_in_outage_expected": round(executors * (back_at - stopped_at) / interval_s),
            "records_in_outage_kept": len(in_outage), "dropped_by_worker": dropped_by_worker,
            "dropped": sum(dropped_by_worker.values()), "stored_twice": duplicates(records)}


def outage_sentence(out: dict[str, Any]) -> str:
    return (f"executors {out['executors']}; records stored {out['records']}; service unreachable for {out['outage_s']} s, "
            f"~{out['samples_in_outage_expected']} samples taken meanwhile: {out['records_in_outage_kept']} kept (buffer "
            f"and the batch in flight, shipped when it came back) + {out['dropped']} dropped and counted by the workers "
            f"({', '.join(f'{w} {n}' for w, n in sorted(out['dropped_by_worker'].items()))}) = "
            f"{out['records_in_outage_kept'] + out['dropped']}; stored twice {out['stored_twice']}; retried batches "
            f"answered as duplicates {out.get('duplicate_batches_answered')}")


def reanalyze_outage(saved: Path, records_dir: Path) -> dict[str, Any]:
    """The counts of an outage run again from its JSON and its records store (the service stopped as the "down"
    window began and answered again as the "up_after" window began, where the JSON predates stopped_at/back_at)."""
    run = json.loads(saved.read_text())
    stopped_at = run.get("stopped_at", run["phases"]["down"]["from"])
    back_at = run.get("back_at", run["phases"]["up_after"]["from"])
    records = records_of(records_dir, "metrics-outage", run["topology_id"])
    out = {**run, "stopped_at": stopped_at, "back_at": back_at,
           **outage_counts(records, stopped_at, back_at, run["interval_s"])}
    console.print(outage_sentence(out), highlight=False)
    return out


def check_outage(setup: Setup, folder: Path, down_s: float, buffer_records: int, interval_s: float) -> dict[str, Any]:
    service = MetricsService(folder, free_port())
    service.start()
    name = "metrics-outage"
    extra = {keys.METRICS_URL: service.url, keys.METRICS_BUFFER_RECORDS: buffer_records,
             keys.METRICS_INTERVAL_S: interval_s}
    spec = setup.spec(name, metrics=True, extra=extra)
    ctx = setup.ctx
    result = RunResult(topology=TOPOLOGY, scheduler="planned", name=name, note="outage", parallelism={})
    phases: dict[str, Any] = {}
    try:
        submitted_at = time.monotonic()
        result.topology_id, result.parallelism, _ = submit(spec, ctx)
        _wait_until_running(spec, ctx, result.topology_id, lookup(TOPOLOGY), submitted_at)
        time.sleep(ctx.warmup_s)
        component_roles = roles(lookup(TOPOLOGY))

        def window(label: str, length_s: float) -> dict[str, Any]:
            ctx.window_s = length_s
            started = time.time()
            rates = component_rates(_window_samples(ctx, result.topology_id, component_roles, label), component_roles)
            throughputs = measure.measured_throughputs(rates)
            return {"from": started, "to": time.time(), "sink_tuples_per_s": round(throughputs.sink_throughput, 3),
                    "bolt_tuples_per_s": round(throughputs.bolt_throughput, 3)}

        phases["up_before"] = window("service up", down_s / 2)
        phases["summary_before"] = service.summary()
        service.stop()
        stopped_at = time.time()
        console.print(f"metrics service stopped for {down_s:g} s", highlight=False)
        phases["down"] = window("service down", down_s)
        service.start()
        back_at = time.time()
        console.print(f"metrics service answers again {back_at - stopped_at:.1f} s after it stopped", highlight=False)
        phases["up_after"] = window("service back", down_s / 2)
        time.sleep(3 * interval_s)
        phases["summary_after"] = service.summary()
    finally:
        _kill_quietly(name, ctx, result)
        service.stop()
    records = records_of(service.records_dir, name, result.topology_id)
    out = {"topology_id": result.topology_id, "plan_id": setup.plan.id, "down_s": down_s, "interval_s": interval_s,
           "buffer_records": buffer_records, "phases": phases, "stopped_at": stopped_at, "back_at": back_at,
           **outage_counts(records, stopped_at, back_at, interval_s),
           "dropped_in_service_summary": phases["summary_after"]["dropped"],
           "duplicate_batches_answered": phases["summary_after"]["duplicates"]}
    table = Table(title=f"Linear with its metrics service down for {down_s:g} s (buffer {buffer_records} records, "
                        f"sample every {interval_s:g} s)", title_justify="left")
    table.add_column("window")
    table.add_column("sink tuples/s")
    table.add_column("bolt tuples/s")
    for key, label in (("up_before", "service up"), ("down", "service down"), ("up_after", "service back")):
        table.add_row(label, str(phases[key]["sink_tuples_per_s"]), str(phases[key]["bolt_tuples_per_s"]))
    console.print(table)
    console.print(outage_sentence(out), highlight=False)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=["records", "overhead", "outage", "reanalyze-outage"])
    parser.add_argument("--saved", type=Path, default=None, help="reanalyze-outage: the outage run's JSON")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--planner", default=None, help="default: Nimbus's hetsched.planner.url")
    parser.add_argument("--records-dir", type=Path, default=None, help="the planner's records store (records check)")
    parser.add_argument("--hook-only", action="store_true",
                        help="records: only topology.auto.task.hooks in the conf, as the one storm.yaml line gives it")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window-s", type=float, default=40.0)
    parser.add_argument("--warmup-s", type=float, default=20.0)
    parser.add_argument("--down-s", type=float, default=60.0)
    parser.add_argument("--buffer-records", type=int, default=40)
    parser.add_argument("--interval-s", type=float, default=2.0)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/hetsched-worker-metrics"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.check == "reanalyze-outage":
        out = reanalyze_outage(args.saved, args.records_dir)
        if args.out:
            args.out.write_text(json.dumps(out, indent=2) + "\n")
        return 0
    setup = Setup(args.home, args.planner, args.window_s, args.warmup_s)
    started = time.time()
    if args.check == "records":
        if args.records_dir is None:
            raise SystemExit("error: give --records-dir (the planner's records store)")
        out = check_records(setup, args.records_dir, args.hook_only)
    elif args.check == "overhead":
        out = check_overhead(setup, args.repeats)
    else:
        out = check_outage(setup, args.work_dir, args.down_s, args.buffer_records, args.interval_s)
    out = {"check": args.check, "started": started, "elapsed_s": round(time.time() - started, 1),
           "load_average_end": list(os.getloadavg()), **out}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
