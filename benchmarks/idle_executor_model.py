"""Issue 18, part 0: stored bench runs re-predicted with an executor thread's idle wake-ups charged (offline).

Storm 2's executor thread, when its queue is empty, runs its wait strategy (``hetsched submit`` sets it to sleep
1 ms at a time, ``topologies/conf.py`` ``IDLE_WAIT``), which costs CPU the model charges nowhere but once per
machine (the base load was measured with one executor on the machine). The hypothesis tried here: each executor
thread costs ``c`` percent of one core when idle, shrinking as it gets busy, ``c x (1 - busy)``, ``busy`` its own
per-tuple CPU at its rate in cores. On a machine of ``k`` cores that is, in percent of the machine,

    idle_i = (c / k) x (1 - e_i r_i k)          (e in machine-seconds per tuple, r_i its tuples/s)
           = c / k  -  c e_i r_i

so an instance's CPU ``MET + 100 e r + idle`` is still linear in R: ``MET' = MET + c / k`` and
``e' = e (1 - c / 100)``; the simulator's closed form keeps its shape. ``busy`` needs no cap: a thread's own CPU
is at most the machine's ``k`` cores, or its thread cap ``100 / k`` percent where ``k > 1``. Ackers (not in the
planner's topology) are charged ``c / k`` each as a fixed load, and one thread per machine is credited back
(``--in-base``, default 1: the base load already holds the profiled executor's thread).

Every run of the bench results given is predicted (the closed form on the placement Storm ran) as the bench
predicts it now (spouts held, ``profiles/default-cluster.json``) and with the idle cost, for a grid of ``c``
(percent of one core, the same for every machine type) three ways (busy-scaled as above; ``flat``: ``c / k``
whatever the rate; ``busy of machine``: busy = ``e r``, the executor's share of its machine's quota), and for
``c`` per type derived from stored records:

- ``idle``: the executor threads of ``highCompute`` (0.75 tuples/s each) at the lowest rate step of issue 19's
  two stepped local runs (``docs/results/measurements/issue19/live-records-live-rates``, machines at 30-45%);
- ``saturated``: the executor threads of ``high`` on machines at 90% of their quota or more in
  ``docs/results/measurements/issue18/saturated-executor-cpu-linear-1.json`` (small 99.5-99.7%, medium 93.9%,
  large 99.7%); once more with the base load's own thread credited at the ``idle`` level (it was measured on an
  idle machine) while every thread is charged the ``saturated`` one.

Each ``net of MET`` variant takes an instance's MET to hold its idle thread already, up to ``c / k`` (several lab
METs are about one idle thread: midCompute's 1.6% of a core on every type), and charges only what it lacks.

Errors are the bench's: (measured - predicted) / predicted, of the input rate R and of the sink throughput. A
second table predicts each machine's CPU at the run's measured R against its measured cgroup CPU.

    .venv/bin/python benchmarks/idle_executor_model.py [BENCH_JSON ...] [--grid 0,0.5,0.8,1.1,1.4] [--in-base 1]
        [--out FILE.txt] [--json FILE.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.measure import predicted_throughputs, relative_error  # noqa: E402
from benchmarks.idle_met_levels import saturated_executors  # noqa: E402
from benchmarks.repredict_bench import bench_setting  # noqa: E402
from cluster.spec import ClusterSpec  # noqa: E402
from planner.api import evaluate_assignments, placement_of  # noqa: E402
from planner.model import Cluster, InstanceAssignment, PlanOptions, ProfileEntry, ProfileSet, Topology  # noqa: E402
from planner.profiles import ProfileTable, machine_base_load  # noqa: E402
from planner.simulator import loads_at_rate  # noqa: E402
from topologies.catalog import lookup, planner_topology  # noqa: E402

BENCHES = [REPO / "docs/results/measurements/issue18/bench-spouts-held-20261126/bench.json",
           REPO / "docs/results/bench/bench.json"]
PROFILES = REPO / "profiles/default-cluster.json"
ISSUE19 = REPO / "docs/results/measurements/issue19"
IDLE_RUNS = [(ISSUE19 / "live-vs-lab-rates.json", "live-rates"), (ISSUE19 / "live-vs-lab-rates-2.json", "live-rates-2")]
IDLE_RECORDS = ISSUE19 / "live-records-live-rates"
SATURATED = REPO / "docs/results/measurements/issue18/saturated-executor-cpu-linear-1.json"
ACKER = "__acker"
WITHIN = 0.15
PLANNED_WITHIN = 0.05


# --- the model: pure functions ---------------------------------------------------------------------------------

def instance_idle_pct(c_core_pct: float, cores: float, e: float, rate: float, of_machine: bool = False) -> float:
    """An executor thread's idle wake-ups, percent of its machine: ``c / k x (1 - busy)``, busy = ``e r k`` cores
    (``of_machine``: busy = ``e r``, its share of the machine's quota instead of one core)."""
    busy = min(1.0, e * rate * (1.0 if of_machine else cores))
    return c_core_pct / cores * (1.0 - busy)


def idle_entries(entries: list[ProfileEntry], c_core_pct: dict[str, float], cores: dict[str, float],
                 held_profiles: set[str], busy_scaled: bool = True, of_machine: bool = False,
                 net_of_met: bool = False) -> list[ProfileEntry]:
    """Profile entries whose linear cost holds each instance's idle wake-ups: ``MET + c / k``, ``e (1 - c / 100)``
    (``of_machine``, busy as a share of the machine's quota: ``e (1 - c / (100 k))``).

    ``held_profiles`` (the spouts' profiles) get MET 0 first, as ``options.spouts_held`` does, so their thread is
    charged its idle cost and nothing else; ``busy_scaled=False`` charges the flat ``c / k`` (``e`` unchanged).
    ``net_of_met``: a MET is taken to hold the idle thread already, up to ``c / k``: ``MET' = max(MET, c / k)``.
    """
    out = []
    for entry in entries:
        c = c_core_pct.get(entry.machine_type, 0.0)
        met = 0.0 if entry.profile in held_profiles else entry.met
        k = cores[entry.machine_type]
        e = entry.e * (1.0 - c / 100.0 / (k if of_machine else 1.0)) if busy_scaled else entry.e
        # idle_met cleared: the variants are the idle charges tried before the planner took one (docs/model.md)
        out.append(entry.model_copy(update={"met": max(met, c / k) if net_of_met else met + c / k, "e": e, "idle_met": 0.0}))
    return out


def idle_fixed_pct(c_core_pct: float, cores: float, ackers: int, in_base: float, credit_core_pct: float | None = None) -> float:
    """Percent of a machine its ackers' idle threads take, less the ``in_base`` threads its base load already holds
    (credited at ``credit_core_pct`` each, default ``c_core_pct``: the base load was measured on an idle machine)."""
    credit = c_core_pct if credit_core_pct is None else credit_core_pct
    return (c_core_pct * ackers - credit * in_base) / cores


def median_by_type(levels: list[tuple[str, float]]) -> dict[str, float]:
    """Median of (machine type, value) pairs per type."""
    by_type: dict[str, list[float]] = defaultdict(list)
    for machine_type, value in levels:
        by_type[machine_type].append(value)
    return {t: statistics.median(v) for t, v in sorted(by_type.items())}


def saturated_thread_levels(runs: list[dict[str, Any]], component: str = "high",
                            min_utilization: float = 90.0) -> list[tuple[str, float]]:
    """(machine type, thread CPU in percent of one core) of ``component``'s executors on machines at or over
    ``min_utilization`` percent of their quota, from ``benchmarks/saturated_executor_cpu.py`` runs."""
    return [(x["machine_type"], x["thread_pct"] * x["cores"])
            for x in saturated_executors(runs, component, min_utilization)]


def step_thread_levels(intervals: list[dict[str, Any]], start: float, end: float,
                       profile: str = "highCompute") -> list[tuple[str, float, float]]:
    """(machine type, thread CPU, own CPU), percent of one core, per executor of ``profile`` over one rate step.

    ``intervals`` as ``benchmarks/e_gap.py`` makes them from workers' records (``thread`` and ``cpu`` in CPU-seconds).
    """
    per: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for i in intervals:
        if i["profile"] == profile and start <= i["t0"] and i["t1"] <= end:
            per[(i["machine_type"], i["task"])].append(i)
    out = []
    for (machine_type, _task), got in sorted(per.items()):
        seconds = sum(i["dt"] for i in got)
        out.append((machine_type, 100 * sum(i["thread"] for i in got) / seconds, 100 * sum(i["cpu"] for i in got) / seconds))
    return out


@dataclass(frozen=True)
class Variant:
    """One way of charging the idle threads: ``c`` per machine type (percent of one core)."""

    name: str
    c_core_pct: dict[str, float] = field(default_factory=dict)
    busy_scaled: bool = True
    in_base: float = 1.0
    of_machine: bool = False
    """busy as the executor's share of its machine's quota, not of one core."""
    net_of_met: bool = False
    """a MET already holds the idle thread, up to ``c / k``."""
    credit_core_pct: dict[str, float] | None = None
    """c per type of the threads the base load holds (default: ``c_core_pct``)."""

    @property
    def charges(self) -> bool:
        return any(v > 0 for v in self.c_core_pct.values())


def error_summary(errors: list[tuple[str, float]], within: float = WITHIN,
                  planned_within: float = PLANNED_WITHIN) -> dict[str, Any]:
    """Largest |error| over all runs and over the planned ones, and how many are within the issue's bounds."""
    planned = [abs(e) for s, e in errors if s == "planned"]
    return {"max_abs": max(abs(e) for _, e in errors), "within": sum(abs(e) <= within for _, e in errors),
            "runs": len(errors), "planned_max_abs": max(planned) if planned else None,
            "planned_within": sum(p <= planned_within for p in planned), "planned": len(planned)}


# --- I/O at the edges -------------------------------------------------------------------------------------------

@dataclass
class Prediction:
    input_rate: float
    sink: float
    machines_at_measured: dict[str, float]
    bottleneck: str | None


def predict(run: dict, profile_set: ProfileSet, spec: ClusterSpec, variant: Variant) -> Prediction:
    """The closed-form rate of the run's placement with the variant's idle cost, and each machine's CPU (percent,
    base load and ackers included) at the run's measured input rate."""
    entry = lookup(run["topology"])
    topology: Topology = planner_topology(entry, run.get("parallelism"))
    base = machine_base_load(profile_set)
    cores = {t.name: t.cpu_cores for t in spec.machine_types}
    if any(t.count > 1 for t in spec.machine_types):
        raise SystemExit("this script charges ackers per machine type and needs one machine per type (the bench's "
                         f"default cluster); {spec.name} has more")
    executors = run["placement"]["executors"]
    ackers = {t: 0 for t in cores}
    machine_type = {m.id: m.type for m in spec.planner_cluster(base).machines}
    for machine in executors.get(ACKER, []):
        ackers[machine_type[machine]] += 1
    hosts = {machine_type[m] for ms in executors.values() for m in ms}
    credit = variant.credit_core_pct or {}
    fixed = {t: idle_fixed_pct(variant.c_core_pct.get(t, 0.0), cores[t], ackers[t], variant.in_base if t in hosts else 0,
                               credit.get(t, variant.c_core_pct.get(t, 0.0)))
             for t in cores}
    cluster = spec.planner_cluster(base)
    cluster = Cluster(machine_types=[mt.model_copy(update={"capacity": mt.capacity - fixed[mt.name]})
                                     for mt in cluster.machine_types], machines=cluster.machines)
    held = {c.profile for c in topology.components if c.kind == "spout" and c.profile}
    entries = idle_entries(profile_set.entries, variant.c_core_pct, cores, held, variant.busy_scaled, variant.of_machine,
                           variant.net_of_met)
    ids = {c.id for c in topology.components}
    assignments = [InstanceAssignment(component=c, machine=m) for c, ms in executors.items() if c in ids for m in ms]
    # spouts_held is applied in idle_entries (MET 0, then the idle charge), so the options leave spouts' MET alone
    evaluation = evaluate_assignments(topology, cluster, entries, assignments, PlanOptions())
    throughputs = predicted_throughputs(evaluation, entry.spout_ids)
    loads = loads_at_rate(topology, cluster, ProfileTable.from_entries(entries), placement_of(assignments, topology, cluster),
                          run["measured"]["input_rate"])
    at_measured = {m.id: m.utilization + base.get(m.type, 0.0) + fixed[m.type] for m in loads}
    return Prediction(evaluation.input_rate, throughputs.sink_throughput, at_measured, evaluation.bottleneck)


def derived_levels() -> tuple[dict[str, float], dict[str, float], list[str]]:
    """c per machine type (percent of one core) from issue 19's idle steps and issue 18's saturated machines."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from e_gap import intervals
    from worker_metrics import records_of

    lines = []
    idle: list[tuple[str, float]] = []
    for run_path, name in IDLE_RUNS:
        run = json.loads(run_path.read_text())["run"]
        rows = intervals(records_of(IDLE_RECORDS, name))
        for n, step in enumerate(run["steps"]):
            got = step_thread_levels(rows, step["start"], step["end"])
            if n == 0:
                idle += [(t, thread) for t, thread, _ in got]
            for t, values in sorted(_group(got).items()):
                lines.append(f"issue 19 {name}, step {step['rate']:g}/s: highCompute on {t}, executor thread "
                             + ", ".join(f"{thread:.2f}" for thread, _ in values) + " % of a core; own CPU "
                             + ", ".join(f"{own:.1f}" for _, own in values) + " % of a core")
    saturated_runs = json.loads(SATURATED.read_text())["runs"]
    for run in saturated_runs:
        utilization = {m["machine"]: m["measured_pct"] for m in run["machines"]}
        for x in run["executors"]:
            lines.append(f"issue 18 {run['scheduler']}: {x['component']} on {x['machine']} ({utilization[x['machine']]:.1f}% "
                         f"of its quota) at {x['executed_per_s']:.2f}/s: executor thread {x['thread_pct'] * x['cores']:.2f} "
                         f"% of a core, own CPU {x['own_pct'] * x['cores']:.1f} % of a core")
    return median_by_type(idle), median_by_type(saturated_thread_levels(saturated_runs)), lines


def _group(rows: list[tuple[str, float, float]]) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for t, thread, own in rows:
        out[t].append((thread, own))
    return out


def main() -> int:
    from rich.console import Console
    from rich.table import Table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", type=Path, nargs="*", default=BENCHES)
    parser.add_argument("--profiles", type=Path, default=PROFILES)
    parser.add_argument("--grid", default="0.5,0.8,1.1,1.4", help="c tried, percent of one core per executor thread")
    parser.add_argument("--in-base", type=float, default=1.0, help="executor threads the base load already holds")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    console = Console(width=200, record=True, highlight=False)
    try:
        profile_set = ProfileSet.model_validate_json(args.profiles.read_text())
        benches = [(path, json.loads(path.read_text())) for path in args.bench]
        grid = [float(c) for c in args.grid.split(",") if c.strip()]
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read the bench results, {args.profiles} or --grid {args.grid!r}: {str(exc).splitlines()[0]}")
    idle, saturated, evidence = derived_levels()
    types = sorted(idle)
    variants = [Variant("now")]
    variants += [Variant(f"c {c:g}", {t: c for t in types}, in_base=args.in_base) for c in grid]
    variants += [Variant(f"c {c:g} flat", {t: c for t in types}, busy_scaled=False, in_base=args.in_base) for c in grid]
    variants += [Variant(f"c {c:g} busy of machine", {t: c for t in types}, in_base=args.in_base, of_machine=True) for c in grid]
    variants += [Variant("c idle (issue 19)", idle, in_base=args.in_base),
                 Variant("c saturated (issue 18)", saturated, in_base=args.in_base),
                 Variant("c saturated, credit idle", saturated, in_base=args.in_base, credit_core_pct=idle)]
    variants += [Variant(f"c {c:g} net of MET", {t: c for t in types}, in_base=args.in_base, net_of_met=True) for c in grid]
    variants += [Variant("c idle, net of MET", idle, in_base=args.in_base, net_of_met=True),
                 Variant("c saturated, net of MET", saturated, in_base=args.in_base, net_of_met=True),
                 Variant("c saturated, credit idle, net of MET", saturated, in_base=args.in_base, credit_core_pct=idle,
                         net_of_met=True)]

    console.print("c derived from stored records, percent of one core per executor thread (median per machine type):")
    console.print("  idle (issue 19, highCompute at 0.75/s, lowest step): "
                  + ", ".join(f"{t} {v:.2f} ({v / 0.1:.1f} ms/s)" for t, v in idle.items()))
    console.print("  saturated (issue 18, high on machines at >= 90%): "
                  + ", ".join(f"{t} {v:.2f} ({v / 0.1:.1f} ms/s)" for t, v in saturated.items()))
    for line in evidence:
        console.print("    " + line)

    results: dict[str, Any] = {"profiles": str(args.profiles), "in_base": args.in_base, "idle": idle,
                               "saturated": saturated, "benches": []}
    for path, bench in benches:
        spec, sets = bench_setting(bench, profile_set)
        runs = [r for r in bench["runs"] if r.get("status") == "ok" and r.get("placement") and r.get("measured")]
        predictions = {v.name: [predict(r, sets, spec, v) for r in runs] for v in variants}
        now = predictions["now"]
        rows_json = []
        for v in variants:
            table = Table(title=f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path} ({bench.get('started_at', '?')}): "
                                f"{v.name}" + ("" if not v.charges else
                                               f" ({('busy-scaled, busy of the machine' if v.of_machine else 'busy-scaled') if v.busy_scaled else 'flat'}, per type "
                                               + ", ".join(f"{t} {c:.2f}" for t, c in sorted(v.c_core_pct.items()))
                                               + f" % of a core, base holds {v.in_base:g}"
                                               + ("" if v.credit_core_pct is None else " credited at "
                                                  + ", ".join(f"{t} {c:.2f}" for t, c in sorted(v.credit_core_pct.items())))
                                               + (", net of MET" if v.net_of_met else "") + ")"), title_justify="left")
            for column in ("run", "measured R", "predicted now", "error now", f"predicted {v.name}", f"error {v.name}",
                           "sink error now", f"sink error {v.name}", "bottleneck"):
                table.add_column(column, justify="right")
            for run, p_now, p in zip(runs, now, predictions[v.name]):
                m = run["measured"]
                table.add_row(run["name"].removeprefix("bench-"), f"{m['input_rate']:.2f}", f"{p_now.input_rate:.2f}",
                              _pct(relative_error(m["input_rate"], p_now.input_rate)), f"{p.input_rate:.2f}",
                              _pct(relative_error(m["input_rate"], p.input_rate)),
                              _pct(relative_error(m["sink_throughput"], p_now.sink)),
                              _pct(relative_error(m["sink_throughput"], p.sink)), p.bottleneck or "-")
            if v.name == "now" or v.name in {f"c {c:g}" for c in grid} or v.name.startswith(("c idle", "c sat")):
                console.print(table)
        summary = Table(title=f"summary, {path.name} ({bench.get('started_at', '?')}): error of R (and of the sink) over "
                              f"{len(runs)} runs; issue 18: every run within {WITHIN:.0%}, planned within {PLANNED_WITHIN:.0%}",
                        title_justify="left")
        for column in ("variant", "max |err| R", f"within {WITHIN:.0%}", "planned max |err| R", f"planned within {PLANNED_WITHIN:.0%}",
                       "max |err| sink", "planned max |err| sink", "machines < 90%: CPU at measured R, mean |err| (points)"):
            summary.add_column(column, justify="right")
        for v in variants:
            errors = [(r["scheduler"], relative_error(r["measured"]["input_rate"], p.input_rate) or 0.0)
                      for r, p in zip(runs, predictions[v.name])]
            sinks = [(r["scheduler"], relative_error(r["measured"]["sink_throughput"], p.sink) or 0.0)
                     for r, p in zip(runs, predictions[v.name])]
            cpu = [p.machines_at_measured[m["machine"]] - m["utilization"] for r, p in zip(runs, predictions[v.name])
                   for m in r["machines"] if m["utilization"] < 90]
            s, k = error_summary(errors), error_summary(sinks)
            summary.add_row(v.name, f"{s['max_abs']:.1%}", f"{s['within']}/{s['runs']}", _pct(s["planned_max_abs"], sign=False),
                            f"{s['planned_within']}/{s['planned']}", f"{k['max_abs']:.1%}", _pct(k["planned_max_abs"], sign=False),
                            f"{statistics.fmean(abs(c) for c in cpu):.1f} (mean signed {statistics.fmean(cpu):+.1f}, {len(cpu)} machines)"
                            if cpu else "-")
            rows_json.append({"variant": v.name, "c_core_pct": v.c_core_pct, "busy_scaled": v.busy_scaled, "in_base": v.in_base,
                              "input_rate": s, "sink": k, "runs": [
                                  {"run": r["name"], "measured": r["measured"]["input_rate"], "predicted": p.input_rate,
                                   "error": relative_error(r["measured"]["input_rate"], p.input_rate),
                                   "measured_sink": r["measured"]["sink_throughput"], "predicted_sink": p.sink,
                                   "machines_at_measured_rate": {m["machine"]: {"measured": m["utilization"],
                                                                                "predicted": p.machines_at_measured[m["machine"]]}
                                                                 for m in r["machines"]}}
                                  for r, p in zip(runs, predictions[v.name])]})
        console.print(summary)
        results["benches"].append({"bench": str(path), "started_at": bench.get("started_at"), "variants": rows_json})
    console.print("error = (measured - predicted) / predicted; 'now' = as the bench predicts (spouts held, no idle charge); "
                  "CPU at measured R: predicted (base load and ackers included) less measured cgroup CPU, machines under 90%")
    if args.out:
        args.out.write_text(console.export_text())
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def _pct(value: float | None, sign: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.1%}" if sign else f"{value:.1%}"


if __name__ == "__main__":
    raise SystemExit(main())
