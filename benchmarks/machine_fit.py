"""A profile set fitted to whole machines over many placements: stored ``hetsched bench`` runs.

The profiling rounds (docs/profiling.md) fit one line per (profile key, machine type) pair, each over the rates one
round gave it, and split a shared machine's CPU among its tasks. This fits every machine of every bench run at once,
as the model charges it (docs/model.md):

    machine CPU (core ms/s) = B[type] + x * executors + sum over profile keys k of c[k] * tuples/s of k there

with ``B`` the base load (supervisor and idle worker JVM), ``x`` an executor thread's wake-ups (ackers and held
spouts included) and ``c[k]`` a tuple's cost, all non-negative (SciPy's bounded least squares). Storm's own
placements, RAS's and the planner's put each key on each machine type at many rates and beside many neighbours, so
the fit sees the ranges a bench then predicts. ``--per-type`` fits ``x`` and ``c`` per machine type; by default
they are one per key in core ms, for a cluster whose machine types differ in quota only (the local one).
``--at-quota`` gives the machines at their quota base and executor costs of their own, and puts those in the set
(the machine that sets R_max is at its quota). The set it writes is the template's entries with ``e = c / cores``, ``met = 0``, ``idle_met = x`` and the base load
in ``source.machine_base_load`` (percent of the machine).

``--cross-validate`` predicts each bench with a set fitted to the others (leave one bench out) and prints the
summary (every run within 15 %, ``planned`` within 5 %), per bench and per run over the benches, beside the template's.

    .venv/bin/python -m benchmarks.machine_fit BENCH_JSON [BENCH_JSON ...] [--per-type]
        [--at-quota] [--template profiles/default-cluster.json] [--out SET.json] [--cross-validate] [--report FILE.txt]
"""
from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import lsq_linear

from rich.console import Console
from rich.table import Table

from bench.placement import ActualPlacement
from bench.repredict import AT_QUOTA, PROFILES, bench_setting, predict, summary
from planner.model import ProfileSet
from planner.profiles import MACHINE_BASE_LOAD
from topologies.catalog import lookup


ALL_TYPES = "*"
"""The machine type of a coefficient shared by every type (``--per-type`` not given)."""


@dataclass(frozen=True)
class MachineObservation:
    """One machine that hosted a worker in one bench run, over the run's window."""

    bench: str
    run: str
    machine_type: str
    cores: float
    cpu_ms_per_s: float
    """Its cgroup's CPU, core ms per second."""
    utilization: float
    """The same, percent of its quota."""
    executors: int
    """Executors placed on it, Storm's ackers included."""
    tuples_per_s: dict[str, float]
    """Profile key -> tuples/s its executors of that key handled (a spout's: emitted)."""


@dataclass(frozen=True)
class MachineFit:
    base_ms_per_s: dict[str, float]
    """Machine type -> B, core ms/s."""
    executor_ms_per_s: dict[str, float]
    """Machine type (or :data:`ALL_TYPES`) -> x, core ms/s per executor."""
    tuple_ms: dict[tuple[str, str], float]
    """(profile key, machine type or :data:`ALL_TYPES`) -> c, core ms per tuple."""
    observations: int
    rms_ms_per_s: float
    """Root mean square of the residuals, core ms/s."""
    benches: list[str] = field(default_factory=list)

    def executor_cost(self, machine_type: str) -> float:
        return self.executor_ms_per_s.get(machine_type, self.executor_ms_per_s.get(ALL_TYPES, 0.0))

    def tuple_cost(self, key: str, machine_type: str) -> float | None:
        return self.tuple_ms.get((key, machine_type), self.tuple_ms.get((key, ALL_TYPES)))


def observations(bench: dict[str, Any], name: str) -> list[MachineObservation]:
    """Every machine with a worker in every measured run of the bench; each executor's own rate where the bench kept
    it (``executors``), else a component's rate split evenly over its executors (shuffle)."""
    found = []
    for run in bench["runs"]:
        if run.get("status") != "ok" or not run.get("placement") or not run.get("measured") or not run.get("machines"):
            continue
        keys = lookup(run["topology"]).profiles()
        rates = {c["component"]: c["per_second"] for c in run["components"]}
        placed = ActualPlacement(executors=run["placement"]["executors"]).machines_used()
        tuples: dict[str, dict[str, float]] = {}
        for component, machines in run["placement"]["executors"].items():
            for machine in machines:
                if component in rates and component in keys and not run.get("executors"):
                    per_key = tuples.setdefault(machine, {})
                    per_key[keys[component]] = per_key.get(keys[component], 0.0) + rates[component] / len(machines)
        for e in run.get("executors") or []:
            if e["component"] in keys:
                per_key = tuples.setdefault(e["machine"], {})
                per_key[keys[e["component"]]] = per_key.get(keys[e["component"]], 0.0) + e["per_second"]
        for m in run["machines"]:
            if m["machine"] not in placed:
                continue  # no worker: its supervisor alone
            found.append(MachineObservation(
                bench=name, run=f"{run['topology']}-{run['scheduler']}", machine_type=m["type"], cores=m["cores"],
                cpu_ms_per_s=m["utilization"] * m["cores"] * 10.0, utilization=m["utilization"], executors=len(placed[m["machine"]]),
                tuples_per_s=tuples.get(m["machine"], {})))
    return found


def fit(found: list[MachineObservation], per_type: bool = False, at_quota: bool = False) -> MachineFit:
    """The non-negative least-squares fit of every machine's CPU (module docstring); with ``at_quota``, the machines
    at their quota get base and executor costs of their own, and those are the fit's (the level R_max is set at)."""
    if not found:
        raise ValueError("no machine with a worker in the benches: nothing to fit")
    def scope(machine_type: str) -> str:
        return machine_type if per_type else ALL_TYPES

    def held(o: MachineObservation) -> str:
        return "Q" if at_quota and o.utilization >= AT_QUOTA else ""

    columns: list[tuple[str, ...]] = sorted(
        {("B" + held(o), o.machine_type) for o in found} | {("x" + held(o), scope(o.machine_type)) for o in found}
        | {("c", k, scope(o.machine_type)) for o in found for k in o.tuples_per_s})
    index = {c: i for i, c in enumerate(columns)}
    a = np.zeros((len(found), len(columns)))
    for row, o in enumerate(found):
        a[row, index[("B" + held(o), o.machine_type)]] = 1.0
        a[row, index[("x" + held(o), scope(o.machine_type))]] = o.executors
        for key, rate in o.tuples_per_s.items():
            a[row, index[("c", key, scope(o.machine_type))]] = rate
    b = np.array([o.cpu_ms_per_s for o in found])
    solution = lsq_linear(a, b, bounds=(0.0, np.inf), method="bvls")
    x = dict(zip(columns, solution.x.tolist()))
    residuals = a @ solution.x - b
    base, executor = ("BQ", "xQ") if at_quota else ("B", "x")
    return MachineFit(
        base_ms_per_s={c[1]: v for c, v in x.items() if c[0] == base},
        executor_ms_per_s={c[1]: v for c, v in x.items() if c[0] == executor},
        tuple_ms={(c[1], c[2]): v for c, v in x.items() if c[0] == "c"},
        observations=len(found), rms_ms_per_s=float(np.sqrt(np.mean(residuals ** 2))),
        benches=sorted({o.bench for o in found}))


def profile_set(fitted: MachineFit, template: ProfileSet, cores: dict[str, float], name: str) -> ProfileSet:
    """The template's entries with the fit's costs in the model's units (percent and seconds of each machine);
    a pair the fit did not see keeps the template's entry."""
    entries = []
    for entry in template.entries:
        c = fitted.tuple_cost(entry.profile, entry.machine_type)
        machine_cores = cores.get(entry.machine_type)
        if c is None or machine_cores is None or entry.machine_type not in fitted.base_ms_per_s:
            entries.append(entry)
            continue
        entries.append(entry.model_copy(update={
            "e": round(c / 1000.0 / machine_cores, 8), "met": 0.0,
            "idle_met": round(min(100.0, fitted.executor_cost(entry.machine_type) / (machine_cores * 10.0)), 4),
            "remote_send": 0.0, "remote_receive": 0.0, "r2": None, "samples": None, "rate_range": None}))
    base = {t: round(min(99.0, b / (cores[t] * 10.0)), 3) for t, b in fitted.base_ms_per_s.items() if t in cores}
    source = {**template.source, MACHINE_BASE_LOAD: base, "machine_fit": {
        "kind": "benchmarks/machine_fit.py", "benches": fitted.benches, "observations": fitted.observations,
        "rms_ms_per_s": round(fitted.rms_ms_per_s, 2),
        "base_ms_per_s": {t: round(v, 2) for t, v in fitted.base_ms_per_s.items()},
        "executor_ms_per_s": {t: round(v, 2) for t, v in fitted.executor_ms_per_s.items()},
        "tuple_ms": {f"{k}@{t}": round(v, 3) for (k, t), v in fitted.tuple_ms.items()}}}
    for key in ("idle_met", "base_load_removed_from_met"):
        source.pop(key, None)
    return template.model_copy(update={"name": name, "entries": entries, "source": source})


def machine_cores(benches: list[dict[str, Any]]) -> dict[str, float]:
    return {m["type"]: m["cores"] for bench in benches for run in bench["runs"] for m in run.get("machines") or []}


def errors(bench: dict[str, Any], profiles: ProfileSet) -> list[tuple[str, str, float]]:
    """(topology, scheduler, relative error of the measured input rate) of every measured run of the bench."""
    spec, sets = bench_setting(bench, profiles)
    found = []
    for run in bench["runs"]:
        if run.get("status") != "ok" or not run.get("placement") or not run.get("measured"):
            continue
        predicted = predict(run, sets, spec).input_rate
        if predicted > 0:
            found.append((run["topology"], run["scheduler"], run["measured"]["input_rate"] / predicted - 1.0))
    return found


def fit_table(fitted: MachineFit) -> Table:
    table = Table(title=f"machine fit over {fitted.observations} machines of {len(fitted.benches)} benches "
                        f"(rms {fitted.rms_ms_per_s:.1f} core ms/s)", title_justify="left")
    for column in ("coefficient", "machine type", "core ms"):
        table.add_column(column, justify="right")
    for t, v in sorted(fitted.base_ms_per_s.items()):
        table.add_row("base load B, per second", t, f"{v:.1f}")
    for t, v in sorted(fitted.executor_ms_per_s.items()):
        table.add_row("executor x, per second", t, f"{v:.2f}")
    for (k, t), v in sorted(fitted.tuple_ms.items()):
        table.add_row(f"{k} c, per tuple", t, f"{v:.2f}")
    return table


def cross_validate(named: list[tuple[str, dict[str, Any]]], template: ProfileSet, per_type: bool, at_quota: bool,
                   console: Console) -> None:
    """Each bench predicted by a set fitted to the others, beside the template; then each run's median."""
    cores = machine_cores([b for _, b in named])
    fitted_runs: dict[tuple[str, str], list[float]] = {}
    template_runs: dict[tuple[str, str], list[float]] = {}
    for held_out, bench in named:
        others = [o for name, b in named if name != held_out for o in observations(b, name)]
        fitted_set = profile_set(fit(others, per_type, at_quota), template, cores, "machine-fit")
        now, before = errors(bench, fitted_set), errors(bench, template)
        console.print(f"{held_out}: fitted to the others {summary([(s, e) for _, s, e in now])}")
        console.print(f"{' ' * len(held_out)}  {template.name}: {summary([(s, e) for _, s, e in before])}")
        for t, s, e in now:
            fitted_runs.setdefault((t, s), []).append(e)
        for t, s, e in before:
            template_runs.setdefault((t, s), []).append(e)
    table = Table(title=f"each run's error over {len(named)} benches, median (range): fitted to the other benches, "
                        f"and {template.name}", title_justify="left")
    for column in ("run", "benches", "fitted: median", "range", "within 15 %", f"{template.name}: median", "range",
                   "within 15 %"):
        table.add_column(column, justify="right")
    for key in sorted(fitted_runs):
        f, t = fitted_runs[key], template_runs.get(key, [])
        table.add_row(f"{key[0]}-{key[1]}", str(len(f)), f"{statistics.median(f):+.1%}", f"{min(f):+.1%} to {max(f):+.1%}",
                      f"{sum(abs(e) <= 0.15 for e in f)}/{len(f)}",
                      f"{statistics.median(t):+.1%}" if t else "-", f"{min(t):+.1%} to {max(t):+.1%}" if t else "-",
                      f"{sum(abs(e) <= 0.15 for e in t)}/{len(t)}" if t else "-")
    console.print(table)
    for label, runs in (("fitted to the other benches", fitted_runs), (template.name, template_runs)):
        medians = [(s, statistics.median(v)) for (_, s), v in sorted(runs.items())]
        singles = [(s, e) for (_, s), v in sorted(runs.items()) for e in v]
        console.print(f"{label}: median per run {summary(medians)}; every single run {summary(singles)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bench", type=Path, nargs="+")
    parser.add_argument("--template", type=Path, default=PROFILES,
                        help="the set whose entries (keys, types, alpha) the fitted set keeps")
    parser.add_argument("--per-type", action="store_true", help="executor and tuple costs per machine type")
    parser.add_argument("--at-quota", action="store_true",
                        help=f"base and executor costs of their own for machines at {AT_QUOTA:g} %% of their quota or more, "
                             "and those in the set")
    parser.add_argument("--name", default="machine-fit", help="the fitted set's name")
    parser.add_argument("--out", type=Path, help="write the set fitted to every bench here (JSON)")
    parser.add_argument("--cross-validate", action="store_true", help="leave one bench out, predict it, summarise")
    parser.add_argument("--report", type=Path, help="also write what is printed here")
    args = parser.parse_args(argv)
    try:
        template = ProfileSet.model_validate_json(args.template.read_text())
        named = [(f"{path.parent.name}/{path.name}", json.loads(path.read_text())) for path in args.bench]
        found = [o for name, bench in named for o in observations(bench, name)]
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"cannot read the template {args.template} or a bench result: {str(exc).splitlines()[0]}")
    if not found:
        parser.error("the benches hold no measured run with a machine that hosted a worker: nothing to fit")
    console = Console(record=True, width=170)
    fitted = fit(found, args.per_type, args.at_quota)
    console.print(fit_table(fitted))
    if args.out:
        fitted_set = profile_set(fitted, template, machine_cores([b for _, b in named]), args.name)
        args.out.write_text(fitted_set.model_dump_json(indent=2, exclude_none=True) + "\n")
        console.print(f"wrote {args.out} ({len(fitted_set.entries)} entries)")
    if args.cross_validate:
        if len(named) < 2:
            parser.error("--cross-validate needs two benches or more")
        cross_validate(named, template, args.per_type, args.at_quota, console)
    if args.report:
        args.report.write_text(console.export_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
