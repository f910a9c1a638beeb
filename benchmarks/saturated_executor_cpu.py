"""Where a saturated machine's CPU really goes, executor by executor, next to what the model charges.

The model charges every instance its MET (its CPU at no input, measured on an idle
machine) and every machine its base load in full, and Storm's own placements run up to 5x faster than
it predicted (docs/results/README.md). This script runs a catalog topology on the local cluster
under the schedulers asked (default: ``default-naive`` and ``planned``) with the workers' metrics hook
on, and splits every machine's cgroup CPU over the run's steady part into:

* each executor's own CPU (its thread, plus its shell subprocess), next to the model's charge at the
  rate it really executed: ``MET + 100 * e * IR`` percent of the machine (lab profiles);
* each worker's rest (its JVM outside the executor threads), and what is left of the machine
  (the supervisor, and anything else in the machine's cgroup), next to the machine type's base load.

The records' intervals used are those after ``--warmup-s`` of each executor's first record and more than
5 s before its last (the run's kill). Each machine's measured total is the bench's own cgroup window.

    .venv/bin/python -m benchmarks.saturated_executor_cpu --home CLUSTER_HOME --store RECORDS_DIR
        [--topology linear] [--schedulers default-naive,planned] [--machines large-1] [--window-s 60] [--warmup-s 40]
        [--out FILE.txt]

Needs a local cluster started with ``--scheduler plugin --conf hetsched.planner.url=URL`` whose planner
keeps its records in ``--store``, and nothing else running on it (as ``worker_metrics.py``).
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.profiles import fill_pass_through_alphas
from bench.run import RunContext, RunResult, run
from bench.schedulers import RunSpec, run_specs
from bench.settings import BenchSettings
from cluster import running_cluster
from cluster.handle import LocalClusterHandle
from observe.progress import QuietReporter
from planner.client import PlannerClient
from planner.model import Cluster, PlanRequest, ProfileRef, ProfileSet
from planner.profiles import ProfileTable, machine_base_load
from planner.simulator import entry_cpu_pct
from spark_profiling.collector.workflow import nimbus_planner_url
from topologies.catalog import lookup, planner_topology
from topologies.submission import metrics_conf
from benchmarks.worker_metrics import executor_series, records_of

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "profiles" / "default-cluster.json"
TAIL_S = 5.0


def steady_intervals(samples: list[dict[str, Any]], warmup_s: float) -> list[tuple[dict, dict]]:
    """Consecutive record pairs of one executor after its warm-up and before its last TAIL_S seconds."""
    if not samples:
        return []
    start, end = samples[0]["ts"] + warmup_s, samples[-1]["ts"] - TAIL_S
    kept = [r for r in samples if start <= r["ts"] <= end]
    return list(zip(kept, kept[1:]))


def executor_rows(records: list[dict[str, Any]], warmup_s: float) -> list[dict[str, Any]]:
    """Per executor over its steady intervals: tuples executed/s, own CPU and worker CPU, % of its machine."""
    rows = []
    for (component, task, pid), samples in sorted(executor_series(records).items()):
        pairs = steady_intervals(samples, warmup_s)
        span = sum(b["ts"] - a["ts"] for a, b in pairs)
        if span <= 0:
            continue
        cores = float(samples[0]["machine_cores"])
        own_s = sum(b["cpu_seconds"] - a["cpu_seconds"] for a, b in pairs)
        rows.append({
            "component": component, "task_id": task, "worker": samples[0].get("worker_id") or pid,
            "machine": samples[0]["machine"],
            "machine_type": samples[0]["machine_type"], "cores": cores, "span_s": round(span, 1),
            "executed_per_s": sum(b["executed"] - a["executed"] for a, b in pairs) / span,
            "emitted_per_s": sum(_emitted(b) - _emitted(a) for a, b in pairs) / span,
            "own_pct": 100 * own_s / span / cores,
            "thread_pct": 100 * sum(b.get("thread_cpu_seconds", 0) - a.get("thread_cpu_seconds", 0)
                                    for a, b in pairs) / span / cores,
            "worker_pct": 100 * sum(b["worker_cpu_seconds"] - a["worker_cpu_seconds"] for a, b in pairs) / span / cores,
        })
    return rows


def _emitted(record: dict[str, Any]) -> float:
    return float(record.get("emitted") or 0)


def charge(row: dict[str, Any], table: ProfileTable, profiles: dict[str, str], spouts: set[str]) -> dict[str, float] | None:
    """The model's charge for this executor at the rate it ran: MET and the per-tuple part, % of its machine."""
    key = profiles.get(row["component"])
    entry = table.get(key, row["machine_type"]) if key else None
    if entry is None:
        return None
    rate = row["emitted_per_s"] if row["component"] in spouts else row["executed_per_s"]
    return {"met": entry.met, "per_tuple": entry_cpu_pct(entry, rate) - entry.met}


def machine_subset(cluster: Cluster, ids: list[str]) -> Cluster:
    """Only the machines named, and their types."""
    unknown = sorted(set(ids) - {m.id for m in cluster.machines})
    if unknown:
        raise SystemExit(f"error: --machines names {', '.join(unknown)}, which the cluster does not have "
                         f"(it has {', '.join(m.id for m in cluster.machines)})")
    machines = [m for m in cluster.machines if m.id in ids]
    types = {m.type for m in machines}
    return cluster.model_copy(update={"machines": machines,
                                      "machine_types": [t for t in cluster.machine_types if t.name in types]})


def run_header(result: RunResult, name: str) -> dict[str, Any]:
    """What analyse needs of a bench run (and what a saved JSON keeps of it)."""
    return {"scheduler": result.scheduler, "name": name, "topology_id": result.topology_id,
            "measured": result.measured.as_dict() if result.measured else None,
            "predicted": result.predicted.as_dict() if result.predicted else None,
            "predicted_machines": result.predicted_machines,
            "machines": [{"machine": m.machine, "type": m.machine_type, "measured_pct": round(m.utilization, 1)}
                         for m in result.machines]}


def analyse(header: dict[str, Any], records: list[dict[str, Any]], table: ProfileTable, profiles: dict[str, str],
            spouts: set[str], base_load: dict[str, float], warmup_s: float) -> dict[str, Any]:
    """Per machine: measured cgroup CPU split into executors, workers' rest and the rest of the machine,
    next to the model's charges at the measured rates."""
    rows = executor_rows(records, warmup_s)
    for row in rows:
        row["charge"] = charge(row, table, profiles, spouts)
    by_machine: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_machine[row["machine"]].append(row)
    machines = []
    for m in header["machines"]:
        executors = by_machine.get(m["machine"], [])
        workers: dict[Any, float] = {}
        for row in executors:
            workers[row["worker"]] = row["worker_pct"]  # every executor of a worker reports its worker's CPU
        own = sum(r["own_pct"] for r in executors)
        threads = sum(r["thread_pct"] for r in executors)
        worker_total = sum(workers.values())  # the JVMs; shell subprocesses are processes of their own
        charged = [r["charge"] for r in executors if r["charge"]]
        machines.append({
            "machine": m["machine"], "type": m["type"], "measured_pct": m["measured_pct"],
            "executors_own_pct": round(own, 1), "workers_rest_pct": round(worker_total - threads, 1),
            "outside_workers_pct": round(m["measured_pct"] - worker_total - (own - threads), 1), "workers": len(workers),
            "charged_met_pct": round(sum(c["met"] for c in charged), 1),
            "charged_per_tuple_pct": round(sum(c["per_tuple"] for c in charged), 1),
            "base_load_pct": round(base_load.get(m["type"], 0.0), 1),
        })
    return {**header, "machines": machines, "executors": rows}


def machine_table(data: dict[str, Any]) -> Table:
    table = Table(title=f"{data['scheduler']}: machine CPU, % of the machine (measured over the window; charges at the "
                        "measured rates)", title_justify="left")
    for col in ("machine", "measured", "executors", "workers' rest", "outside workers", "workers",
                "charged MET", "charged per tuple", "base load", "predicted at its own R"):
        table.add_column(col, justify="left" if col == "machine" else "right")
    for m in data["machines"]:
        table.add_row(f"{m['machine']} ({m['type']})", f"{m['measured_pct']:.1f}", f"{m['executors_own_pct']:.1f}",
                      f"{m['workers_rest_pct']:.1f}", f"{m['outside_workers_pct']:.1f}", str(m["workers"]),
                      f"{m['charged_met_pct']:.1f}", f"{m['charged_per_tuple_pct']:.1f}", f"{m['base_load_pct']:.1f}",
                      f"{data['predicted_machines'].get(m['machine'], float('nan')):.1f}")
    return table


def executor_table(data: dict[str, Any]) -> Table:
    table = Table(title=f"{data['scheduler']}: executors, % of their machine", title_justify="left")
    for col in ("machine", "component", "task", "executed/s", "emitted/s", "own CPU", "charged MET",
                "charged per tuple", "own - charged"):
        table.add_column(col, justify="left" if col in ("machine", "component") else "right")
    for r in sorted(data["executors"], key=lambda r: (r["machine"], r["component"], r["task_id"])):
        c = r["charge"]
        table.add_row(r["machine"], r["component"], str(r["task_id"]), f"{r['executed_per_s']:.2f}",
                      f"{r['emitted_per_s']:.2f}", f"{r['own_pct']:.1f}",
                      f"{c['met']:.1f}" if c else "-", f"{c['per_tuple']:.1f}" if c else "-",
                      f"{r['own_pct'] - c['met'] - c['per_tuple']:+.1f}" if c else "-")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="the running local cluster's home")
    parser.add_argument("--store", type=Path, required=True, help="the planner's records store")
    parser.add_argument("--planner", help="the planner's URL (default: Nimbus's hetsched.planner.url)")
    parser.add_argument("--topology", default="linear")
    parser.add_argument("--schedulers", default="default-naive,planned")
    parser.add_argument("--machines", help="plan only on these machines (comma-separated ids), with the instance counts "
                                           "of the plan on the whole cluster: a topology alone on some machines, "
                                           "as a parted tenant runs")
    parser.add_argument("--window-s", type=float, default=60.0)
    parser.add_argument("--warmup-s", type=float, default=40.0)
    parser.add_argument("--out", type=Path, help="write the tables here (and the raw numbers beside it as .json)")
    parser.add_argument("--reanalyse", type=Path, help="no run: analyse again the runs of an earlier --out's .json "
                                                       "from the records in --store")
    args = parser.parse_args()
    if args.reanalyse:
        return reanalyse(args)
    schedulers = [s for s in args.schedulers.split(",") if s]
    unknown = [s for s in schedulers if s not in ("default", "default-naive", "planned")]
    if unknown:
        raise SystemExit(f"error: --schedulers takes default, default-naive and planned, not {', '.join(unknown)}")
    local = running_cluster(args.home)
    if local is None:
        raise SystemExit(f"error: no local cluster is running in {args.home}")
    handle = LocalClusterHandle(local)
    planner_url = args.planner or nimbus_planner_url(handle)
    if not planner_url:
        raise SystemExit("error: the cluster's Nimbus has no hetsched.planner.url; give --planner")

    profile_set, _ = fill_pass_through_alphas(ProfileSet.model_validate_json(PROFILES.read_text()), [args.topology])
    base_load = machine_base_load(profile_set)
    entry = lookup(args.topology)
    with PlannerClient(planner_url) as client:
        client.put_profile_set(profile_set)
        cluster = local.spec.planner_cluster(base_load)
        plan = client.plan(PlanRequest(topology=planner_topology(entry), cluster=cluster,
                                       profiles=ProfileRef(name=profile_set.name)))
        if args.machines:
            plan = client.plan(PlanRequest(topology=planner_topology(entry, plan.instances),
                                           cluster=machine_subset(cluster, args.machines.split(",")),
                                           profiles=ProfileRef(name=profile_set.name)))
    ctx = RunContext(cluster=local, planner_url=planner_url, profile_set=profile_set.name, window_s=args.window_s,
                     warmup_s=args.warmup_s, start_timeout_s=240.0, reporter=QuietReporter(), base_load=base_load)
    settings = BenchSettings(out_dir=args.out.parent if args.out else Path('.'), schedulers=tuple(schedulers))
    machines = handle.machines()
    reference = max(machines, key=lambda m: m.cores)
    specs = run_specs(settings, entry, plan, profile_set.entries, len(machines), reference.type, reference.cores,
                      planner_url, profile_set.name)
    table = ProfileTable.from_entries(profile_set.entries)
    console = Console(width=180, record=True)
    results = []
    for spec in specs:
        spec = RunSpec(**{**spec.__dict__, "name": f"sat-{spec.name}",
                          "conf": {**spec.conf, **metrics_conf(spec.conf, planner_url)}})
        console.print(f"{spec.topology}/{spec.scheduler}: {spec.note}; running with the metrics hook on")
        result = run(spec, ctx, plan)
        if not result.ok:
            console.print(f"[red]{spec.scheduler} failed: {result.reason}[/red]")
            continue
        time.sleep(10)  # the hook's last batches (every 5 s) reach the store
        records = records_of(args.store, spec.name, result.topology_id)
        data = analyse(run_header(result, spec.name), records, table, entry.profiles(), set(entry.spout_ids),
                       base_load, args.warmup_s)
        results.append(data)
        report(console, data, len(records))
    save(args, console, {"topology": args.topology, "machines": args.machines, "profiles": str(PROFILES.relative_to(REPO)), "base_load": base_load,
                         "plan": plan.id, "window_s": args.window_s, "warmup_s": args.warmup_s, "runs": results})
    return 0 if results else 1


def report(console: Console, data: dict[str, Any], records: int) -> None:
    measured = data["measured"]["sink_throughput"] if data["measured"] else float("nan")
    predicted = data["predicted"]["sink_throughput"] if data["predicted"] else float("nan")
    error = f"{measured / predicted - 1:+.0%}" if predicted > 0 else "no rate predicted"
    console.print(f"{data['scheduler']}: sink {measured:.2f} tuples/s measured, {predicted:.2f} predicted "
                  f"({error}); {records} records")
    console.print(machine_table(data))
    console.print(executor_table(data))


def save(args: argparse.Namespace, console: Console, data: dict[str, Any]) -> None:
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(console.export_text())
        args.out.with_suffix(".json").write_text(json.dumps(data, indent=1))


def reanalyse(args: argparse.Namespace) -> int:
    earlier = json.loads(args.reanalyse.read_text())
    profile_set, _ = fill_pass_through_alphas(ProfileSet.model_validate_json((REPO / earlier["profiles"]).read_text()),
                                              [earlier["topology"]])
    table = ProfileTable.from_entries(profile_set.entries)
    entry = lookup(earlier["topology"])
    console = Console(width=180, record=True)
    runs = []
    for run_data in earlier["runs"]:
        header = {k: v for k, v in run_data.items() if k not in ("executors",)}
        header["machines"] = [{k: m[k] for k in ("machine", "type", "measured_pct")} for m in run_data["machines"]]
        records = records_of(args.store, header["name"], header["topology_id"])
        data = analyse(header, records, table, entry.profiles(), set(entry.spout_ids), earlier["base_load"],
                       earlier["warmup_s"])
        runs.append(data)
        report(console, data, len(records))
    save(args, console, {**earlier, "runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
