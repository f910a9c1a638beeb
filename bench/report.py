"""A bench's result as JSON (every figure and setting) and as rich tables. Pure, but for reading and writing the file.

The bench rewrites its ``bench.json`` after every run (:mod:`planner.durable`, atomically), with
``complete`` false until it ends: a bench killed half-way leaves a result whose finished runs
can be printed, and whose ``expected_runs`` say which runs it did not reach.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from bench import measure
from bench.bounds import compute_bounds_of
from bench.errors import BenchError
from planner.durable import write_json_atomic
from bench.settings import SCHEDULERS
from bench.run import RunResult
from planner.stream_shares import CONF_KEY as SHARES_KEY

if TYPE_CHECKING:
    from bench.experiment import BenchResult

RESULT_FILE = "bench.json"
"""The bench's result in its output folder."""

SPEEDUP_TARGET = 1.3
"""``planned`` against ``default``: the issue's target."""
PREDICTION_TOLERANCE = 0.15


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def run_dict(run: RunResult) -> dict[str, Any]:
    measured = run.measured.as_dict() if run.measured else None
    predicted = run.predicted.as_dict() if run.predicted else None
    errors = None
    if run.measured and run.predicted:
        errors = {k: _round(measure.relative_error(getattr(run.measured, k), getattr(run.predicted, k)), 4)
                  for k in ("input_rate", "sink_throughput", "bolt_throughput", "total_throughput")}
    return {
        "topology": run.topology,
        "scheduler": run.scheduler,
        "name": run.name,
        "status": run.status,
        "reason": run.reason,
        "note": run.note,
        "topology_id": run.topology_id,
        "plan_id": run.plan_id,
        "parallelism": run.parallelism,
        "placement": run.placement.as_dict() if run.placement else None,
        "plan_mismatches": run.plan_mismatches,
        "start_s": run.start_s,
        "settle_s": run.settle_s,
        "window_utc": list(run.window_utc) if run.window_utc else None,
        "measured": measured,
        "predicted": predicted,
        "relative_error": errors,
        "predicted_bottleneck": run.predicted_bottleneck,
        "components": [
            {"component": r.component, "role": r.role, "executors": r.executors,
             "measured_executors": r.measured_executors, "tuples": r.tuples, "acked": r.acked, "failed": r.failed,
             "window_s": round(r.window_s, 2), "per_second": round(r.per_second, 4)}
            for r in run.components
        ],
        "executors": [
            {"component": e.component, "task": e.task_start, "machine": machine, "tuples": e.tuples, "acked": e.acked,
             "failed": e.failed, "window_s": round(e.window_s, 2), "per_second": round(e.per_second, 4)}
            for machine, e in run.executors
        ],
        "machines": [
            {"machine": m.machine, "type": m.machine_type, "cores": m.cores, "cpu_seconds": round(m.cpu_seconds, 3),
             "window_s": round(m.window_s, 2), "utilization": round(m.utilization, 2),
             "predicted_utilization": run.predicted_machines.get(m.machine)}
            for m in run.machines
        ],
        "failed_share": round(run.failed_share, 4),
        "flow_imbalance": _round(run.flow_imbalance, 4),
        "load_average": run.load_average,
        "topology_conf": run.conf,
    }


def result_dict(result: BenchResult, plots: list[Path] | None = None) -> dict[str, Any]:
    s = result.settings
    profile_set = result.profile_set
    data = {
        "complete": result.complete,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "elapsed_s": result.elapsed_s,
        "error": result.error,
        "interrupted": result.interrupted,
        "settings": {
            "topologies": list(s.topologies), "schedulers": list(s.schedulers), "window_s": s.window_s,
            "warmup_s": s.warmup_s, "settle_max_s": s.settle_max_s, "max_spout_pending": s.max_spout_pending,
            "message_timeout_s": s.message_timeout_s, "load_aware_shuffle": s.load_aware,
            "strategy": s.strategy or "planner default", "start_timeout_s": s.start_timeout_s,
            "profile_now": s.profile_now, "profiles": s.profiles, "topology_conf": s.topology_conf,
            "fill_by_speed": s.fill_by_speed,
        },
        "versions": result.versions,
        "load_average": result.load_average,
        "cluster": {"spec": result.spec.model_dump(mode="json"), "home": str(result.cluster_home)},
        "planner_url": result.planner_url,
        "profile_set": None if profile_set is None else {
            "name": profile_set.name, "origin": result.profile_origin,
            "entries": [e.model_dump(mode="json", exclude_none=True) for e in profile_set.entries],
            "source": profile_set.source,
        },
        "plans": {t: p.model_dump(mode="json") for t, p in result.plans.items()},
        "weighted_plans": {t: p.model_dump(mode="json") for t, p in result.weighted_plans.items()},
        "fluid_bounds": {t: _round(b) for t, b in result.bounds.items()},
        "compute_bounds": {t: _round(b) for t, b in result.compute_bounds.items()},
        "expected_runs": [{"topology": t, "scheduler": s} for t, s in result.expected_runs],
        "runs": [run_dict(r) for r in result.runs],
        "comparison": None,
        "plots": [str(p) for p in plots or []],
        "definitions": {
            "input_rate": "R: mean emit rate of the spout components, tuples/s",
            "sink_throughput": "tuples/s executed by the sinks (bolts without subscribers)",
            "bolt_throughput": "tuples/s executed by all bolts",
            "total_throughput": "the planner's total (docs/model.md): every component's input rate, spouts' emit rate "
                                "included = bolt_throughput + spout emit rate",
            "utilization": "machine cgroup cpuacct delta / window / CPU quota, percent",
            "predicted_utilization": "the prediction's load on the machine at its input_rate, plus its type's base load "
                                     "where a worker runs (bench.run.predicted_machine_cpu), percent of the quota",
            "predicted": "planner evaluation (POST /v1/evaluations) of the placement read back from Nimbus, with "
                         "options.spouts_held (every run is free-running: its spouts are held by max.spout.pending "
                         "and do not poll); its input_rate is the largest sustainable rate of that placement; a run "
                         "with hetsched.grouping.shares (planned-weighted) is scored with those shares on it",
            "weighted_plans": "per topology, the plan made with options.weighted_shares (counts, placement and shares "
                              "chosen together) that planned-weighted runs",
            "fluid_bounds": "per topology, the LP fluid bound on R (planner.bounds, any split of every stream, spouts "
                            "held): no placement's input_rate can exceed it",
            "compute_bounds": "per topology, the compute bound on R (bench.bounds.full_quota_bound): every machine at its "
                              "full CPU quota doing only the components' per-tuple work (no base load, no per-instance "
                              "MET), any split; the fluid bound's gap to it is what running workers and instances costs",
            "relative_error": "(measured - predicted) / predicted",
            "flow_imbalance": "(measured sink / spout emit rate) / (predicted sink / spout emit rate) - 1: 0 in a "
                              f"steady window; beyond {measure.STEADY_WITHIN:.0%} either way the run is a transient "
                              "(a queue grows inside the topology), as is one where a spout's tuple tree failed",
            "executors": "each executor measured in the window, on its machine: tuples/s emitted (spout) or executed "
                         "(bolt), between its own first and last stats step",
        },
    }
    data["comparison"] = comparisons(data)
    return data


def write_json(data: dict[str, Any], path: Path) -> Path:
    """Replace ``path`` by the result in one step, owner-only; a failure leaves the previous version."""
    try:
        return write_json_atomic(path, data)
    except OSError as exc:
        raise BenchError(f"cannot write the bench result {path}: {exc.strerror or exc}") from None


def result_path(path: Path) -> Path:
    """The result file of a bench's output folder, or ``path`` itself if it is not a folder."""
    path = Path(path)
    return path / RESULT_FILE if path.is_dir() else path


def read_json(path: Path) -> dict[str, Any]:
    """A bench result written by :func:`write_json` (to print or plot it again), finished or not."""
    path = result_path(path)
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise BenchError(f"cannot read the bench result {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BenchError(f"the bench result {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise BenchError(f"{path} is not a bench result (no 'runs')")
    return data


def missing_runs(data: dict[str, Any]) -> list[str]:
    """'topology/scheduler' of every run the bench laid out but did not record (it was cut short)."""
    done = {(r.get("topology"), r.get("scheduler")) for r in data["runs"]}
    return [f"{r['topology']}/{r['scheduler']}" for r in data.get("expected_runs", [])
            if (r["topology"], r["scheduler"]) not in done]


def cut_short_line(data: dict[str, Any]) -> str | None:
    """One sentence if the result is of a bench that did not finish (killed, or still running), else None.

    A result without ``complete`` predates the bench's writing as it goes; it was written at the end.
    """
    if data.get("complete", True):
        return None
    missing = missing_runs(data)
    finished = len(data["runs"])
    if not data.get("expected_runs"):
        return (f"the bench did not finish (killed, or still running) before it laid out its runs; "
                f"{finished} runs recorded")
    return (f"the bench did not finish (killed, or still running): {finished} of {finished + len(missing)} runs "
            f"recorded; missing {', '.join(missing)}")


def _ok(run: dict[str, Any]) -> bool:
    return run.get("status") == "ok" and bool(run.get("measured"))


def comparisons(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per topology: planned's sink throughput over each baseline's, and every run's prediction error."""
    rows = []
    for topology in dict.fromkeys(r["topology"] for r in data["runs"]):
        runs = {r["scheduler"]: r for r in data["runs"] if r["topology"] == topology and _ok(r)}
        planned = runs.get("planned")
        row: dict[str, Any] = {"topology": topology}
        for baseline in ("default", "default-naive", "resource_aware"):
            other = runs.get(baseline)
            row[f"planned_vs_{baseline}"] = (
                _round(measure.speedup(planned["measured"]["sink_throughput"], other["measured"]["sink_throughput"]))
                if planned and other else None
            )
        weighted = runs.get("planned-weighted")
        row["planned-weighted_vs_planned"] = (
            _round(measure.speedup(weighted["measured"]["sink_throughput"], planned["measured"]["sink_throughput"]))
            if planned and weighted else None
        )
        row["prediction_error"] = {
            s: _round(measure.relative_error(r["measured"]["sink_throughput"], r["predicted"]["sink_throughput"]), 4)
            for s, r in runs.items() if r.get("predicted")
        }
        rows.append(row)
    return rows


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.0f}%"


def _vs(measured: float, predicted: float | None) -> str:
    if predicted is None:
        return f"{measured:.2f}"
    return f"{measured:.2f} / {predicted:.2f} ({_pct(measure.relative_error(measured, predicted))})"


def runs_table(data: dict[str, Any]) -> Table:
    """One row per run: measured / predicted (error), speed-up over default, CPU per machine (measured / predicted)."""
    machine_ids = [m["machine"] for r in data["runs"] for m in r.get("machines", [])]
    machine_ids = list(dict.fromkeys(machine_ids))
    table = Table(title="hetsched bench: measured / predicted (error), tuples/s")
    for col in ("topology", "scheduler", "input rate R", "sink throughput", "bolt throughput",
                "total (planner's def.)", "x default", *[f"CPU {m} %" for m in machine_ids], "failed"):
        table.add_column(col, justify="left" if col in ("topology", "scheduler") else "right")
    by_key = {(r["topology"], r["scheduler"]): r for r in data["runs"]}
    for run in ordered_runs(data):
        if not _ok(run):
            table.add_row(run["topology"], run["scheduler"], "[red]failed (below)[/red]")
            continue
        m, p = run["measured"], run.get("predicted") or {}
        default = by_key.get((run["topology"], "default"))
        ratio = (measure.speedup(m["sink_throughput"], default["measured"]["sink_throughput"])
                 if default and _ok(default) else None)
        cpu = {c["machine"]: c for c in run.get("machines", [])}
        table.add_row(
            run["topology"], run["scheduler"],
            *[_vs(m[k], p.get(k)) for k in ("input_rate", "sink_throughput", "bolt_throughput", "total_throughput")],
            "-" if ratio is None else f"{ratio:.2f}",
            *[(f"{cpu[i]['utilization']:.0f} / " + ("-" if cpu[i].get("predicted_utilization") is None
                                                    else f"{cpu[i]['predicted_utilization']:.0f}"))
              if i in cpu else "-" for i in machine_ids],
            f"{run.get('failed_share', 0) * 100:.1f}%",
        )
    return table


def ordered_runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Runs by topology (in the order run), then scheduler in SCHEDULERS order."""
    topologies = list(dict.fromkeys(r["topology"] for r in data["runs"]))
    rank = {s: i for i, s in enumerate(SCHEDULERS)}
    return sorted(data["runs"], key=lambda r: (topologies.index(r["topology"]), rank.get(r["scheduler"], 99)))


def failure_lines(data: dict[str, Any]) -> list[str]:
    """Failed runs with their reason, planned runs Storm did not place as planned, and runs not steady."""
    lines = []
    for r in ordered_runs(data):
        if not _ok(r):
            lines.append(f"{r['topology']}/{r['scheduler']} failed: {r.get('reason')}")
            continue
        if r.get("plan_mismatches"):
            lines.append(f"{r['topology']}/{r['scheduler']} does not run as planned: {'; '.join(r['plan_mismatches'])}")
        if (sentence := unsteady_line(r)) is not None:
            lines.append(sentence)
    return lines


def unsteady_line(run: dict[str, Any]) -> str | None:
    """A sentence for a run whose window was not steady (:func:`bench.measure.steady`), else None."""
    imbalance = run.get("flow_imbalance")
    failed = failed_trees(run)
    if measure.steady(imbalance, failed):
        return None
    if failed:
        return (f"{run['topology']}/{run['scheduler']} was not steady: {failed} of its spouts' tuple trees failed (timed "
                f"out) in the window, so a queue in it grows and, as the timeouts free their pending slots, its spouts "
                f"emit past what the placement sustains: its measured rates are above it")
    if imbalance is None:  # (steady: only a measured flow can be off)
        return None
    where = "below" if imbalance < 0 else "above"
    return (f"{run['topology']}/{run['scheduler']} was not steady: its sinks ran {abs(imbalance):.0%} {where} what its "
            f"spouts emitted, against the placement's flow (tuples piled up inside the topology while its spouts' "
            f"pending tuples filled), so its measured rates are a transient, not what the placement sustains")


def failed_trees(run: dict[str, Any]) -> int:
    """Tuple trees a stored run's spouts saw fail in its window."""
    return sum(c.get("failed", 0) for c in run.get("components") or [] if c.get("role") == "spout")


def targets_table(data: dict[str, Any]) -> Table:
    """The issue's targets per topology: planned >= 1.3x default, >= resource_aware, prediction within 15%."""
    table = Table(title="targets (sink throughput, measured)")
    for col in ("topology", f"planned / default (>= {SPEEDUP_TARGET})", "planned / resource_aware (>= 1)",
                "planned / default-naive", f"prediction error, planned (<= {PREDICTION_TOLERANCE:.0%})",
                "prediction error, others"):
        table.add_column(col, justify="left" if col == "topology" else "right")

    def mark(value: float | None, ok: bool) -> str:
        if value is None:
            return "-"
        return f"[green]{value:.2f}[/green]" if ok else f"[red]{value:.2f}[/red]"

    for row in comparisons(data):
        errors = row["prediction_error"]
        planned_error = errors.get("planned")
        table.add_row(
            row["topology"],
            mark(row["planned_vs_default"], (row["planned_vs_default"] or 0) >= SPEEDUP_TARGET),
            mark(row["planned_vs_resource_aware"], (row["planned_vs_resource_aware"] or 0) >= 1.0),
            mark(row["planned_vs_default-naive"], (row["planned_vs_default-naive"] or 0) >= 1.0),
            "-" if planned_error is None else (
                f"[green]{_pct(planned_error)}[/green]" if abs(planned_error) <= PREDICTION_TOLERANCE
                else f"[red]{_pct(planned_error)}[/red]"),
            ", ".join(f"{s} {_pct(e)}" for s, e in errors.items() if s != "planned") or "-",
        )
    return table


def headline_lines(data: dict[str, Any]) -> list[str]:
    """One sentence per topology: planned against each baseline that ran, measured and predicted sink throughput."""
    lines = []
    for topology in dict.fromkeys(r["topology"] for r in data["runs"]):
        runs = {r["scheduler"]: r for r in data["runs"] if r["topology"] == topology and _ok(r)}
        planned = runs.get("planned")
        if planned is None:
            continue
        parts = []
        for baseline in ("default", "default-naive", "resource_aware"):
            other = runs.get(baseline)
            if other is None:
                continue
            ratio = measure.speedup(planned["measured"]["sink_throughput"], other["measured"]["sink_throughput"])
            parts.append(f"{ratio:.2f}x {baseline} ({other['measured']['sink_throughput']:.1f}, predicted "
                         f"{(other.get('predicted') or {}).get('sink_throughput', 0):.1f})")
        lines.append(f"{topology.capitalize()}: planned {planned['measured']['sink_throughput']:.1f} tuples/s at the sinks "
                     f"(predicted {(planned.get('predicted') or {}).get('sink_throughput', 0):.1f})"
                     + (": " + ", ".join(parts) if parts else ""))
    return lines


def bounds_lines(data: dict[str, Any]) -> list[str]:
    """Per topology with a fluid bound: every run's measured R against it (and against the compute bound where there
    is one), and what the planner predicted for the run (planned-weighted's with its shares)."""
    lines = []
    bounds = data.get("fluid_bounds") or {}
    compute = compute_bounds_of(data) if bounds else {}
    for topology in dict.fromkeys(r["topology"] for r in data["runs"]):
        bound = bounds.get(topology)
        if not bound:
            continue
        most = compute.get(topology)
        parts = []
        for run in ordered_runs(data):
            if run["topology"] != topology or not _ok(run):
                continue
            measured = run["measured"]["input_rate"]
            predicted = (run.get("predicted") or {}).get("input_rate")
            shares = " with its shares" if (run.get("topology_conf") or {}).get(SHARES_KEY) else ""
            parts.append(f"{run['scheduler']} {measured:.2f} ({measured / bound:.0%}"
                         + (f", {measured / most:.0%} of compute" if most else "")
                         + (f"; predicted{shares} {predicted:.2f}" if predicted is not None else "") + ")")
        lines.append(f"{topology.capitalize()}: LP fluid bound R {bound:.2f} tuples/s"
                     + (f", compute bound {most:.2f}" if most else "") + "; measured R"
                     + (": " + ", ".join(parts) if parts else ": no run measured"))
    return lines


def settings_lines(data: dict[str, Any]) -> list[str]:
    s = data["settings"]
    load = data.get("load_average", {})
    versions = data.get("versions", {})
    profile_set = data.get("profile_set") or {}
    plans = data.get("plans", {})
    lines = [
        f"profile set: {profile_set.get('name', '-')} ({profile_set.get('origin', '-')})",
        f"window {s['window_s']:g} s after a {s['warmup_s']:g} s warm-up; topology.max.spout.pending "
        f"{s['max_spout_pending']}; acking on; {'load-aware' if s['load_aware_shuffle'] else 'plain (even)'} shuffle; "
        f"message timeout {s['message_timeout_s']} s",
        "plans: " + (", ".join(f"{t} {p['id']} ({p['strategy']}, R {p['input_rate']:.2f})" for t, p in plans.items()) or "-"),
        *(["plans with weighted shares (planned-weighted): " + ", ".join(
            f"{t} {p['id']} ({p['strategy']}, R {p['input_rate']:.2f})" for t, p in weighted.items())]
          if (weighted := data.get("weighted_plans")) else []),
        "load average (1/5/15 min): start " + " ".join(f"{x:.2f}" for x in load.get("start", []))
        + (", end " + " ".join(f"{x:.2f}" for x in load["end"]) if load.get("end") else "")
        + f" on {versions.get('cpus', '?')} CPUs",
        f"Storm {versions.get('storm')}, {versions.get('java')}, Python {versions.get('python')}, "
        f"commit {versions.get('git_commit', '?')}; took {data.get('elapsed_s', 0):g} s",
    ]
    if data.get("error"):
        lines.append(f"stopped early: {data['error']}")
    return lines
