"""PNG figures of a bench result (its JSON form): throughput (paper Fig. 8), CPU per machine (Fig. 9), predicted vs measured."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

from bench.scenario_plots import save_png
from planner.durable import private_folder

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  the backend must be chosen first

SCHEDULER_ORDER = ("default", "default-naive", "resource_aware", "planned")
COLOURS = {"default": "#9e9e9e", "default-naive": "#cfcfcf", "resource_aware": "#4c72b0", "planned": "#dd8452"}


def _ok_runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in data["runs"] if r.get("status") == "ok" and r.get("measured")]


def _layout(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    topologies = list(dict.fromkeys(r["topology"] for r in data["runs"]))
    present = {r["scheduler"] for r in data["runs"]}
    return topologies, [s for s in SCHEDULER_ORDER if s in present]


def throughput_plot(data: dict[str, Any], path: Path) -> Path:
    """Sink throughput per scheduler per topology, measured (bars) and predicted (black ticks)."""
    topologies, schedulers = _layout(data)
    runs = {(r["topology"], r["scheduler"]): r for r in _ok_runs(data)}
    fig, ax = plt.subplots(figsize=(2.2 + 2.0 * len(topologies), 4.2))
    width = 0.8 / max(1, len(schedulers))
    for j, scheduler in enumerate(schedulers):
        xs, measured, predicted = [], [], []
        for i, topology in enumerate(topologies):
            run = runs.get((topology, scheduler))
            x = i - 0.4 + width * (j + 0.5)
            xs.append(x)
            measured.append(run["measured"]["sink_throughput"] if run else 0.0)
            predicted.append((run.get("predicted") or {}).get("sink_throughput") if run else None)
            if run is None:
                ax.text(x, 0, "failed", rotation=90, ha="center", va="bottom", fontsize=7, color="red")
        ax.bar(xs, measured, width, label=scheduler, color=COLOURS.get(scheduler), edgecolor="black", linewidth=0.5)
        pts = [(x, p) for x, p in zip(xs, predicted) if p is not None]
        if pts:
            ax.scatter([x for x, _ in pts], [p for _, p in pts], marker="_", s=300, color="black",
                       label="predicted" if j == 0 else None, zorder=3)
    ax.set_xticks(range(len(topologies)), [t.capitalize() for t in topologies])
    ax.set_ylabel("sink throughput (tuples/s)")
    ax.set_title("Throughput per scheduler (cf. paper Fig. 8)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def cpu_plot(data: dict[str, Any], path: Path) -> Path:
    """Measured CPU utilisation of each machine (percent of its quota) under each scheduler, one panel per topology."""
    topologies, schedulers = _layout(data)
    runs = {(r["topology"], r["scheduler"]): r for r in _ok_runs(data)}
    machines = list(dict.fromkeys(m["machine"] for r in _ok_runs(data) for m in r.get("machines", [])))
    fig, axes = plt.subplots(1, max(1, len(topologies)), figsize=(1.5 + 3.6 * len(topologies), 4.0), sharey=True,
                             squeeze=False)
    width = 0.8 / max(1, len(schedulers))
    for ax, topology in zip(axes[0], topologies):
        for j, scheduler in enumerate(schedulers):
            run = runs.get((topology, scheduler))
            used = {m["machine"]: m["utilization"] for m in run.get("machines", [])} if run else {}
            xs = [i - 0.4 + width * (j + 0.5) for i in range(len(machines))]
            ax.bar(xs, [used.get(m, 0.0) for m in machines], width, label=scheduler, color=COLOURS.get(scheduler),
                   edgecolor="black", linewidth=0.5)
        ax.axhline(100, color="red", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(machines)), machines, fontsize=8)
        ax.set_title(topology.capitalize())
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("CPU utilisation (% of the machine's quota)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle("CPU utilisation per machine (cf. paper Fig. 9)")
    return _save(fig, path)


def prediction_plot(data: dict[str, Any], path: Path, tolerance: float = 0.15) -> Path:
    """Measured against predicted sink throughput, every run; the diagonal and a +-tolerance band."""
    fig, ax = plt.subplots(figsize=(5.0, 4.6))
    top = 1.0
    markers = {"linear": "o", "diamond": "D", "star": "*"}
    for run in _ok_runs(data):
        predicted = (run.get("predicted") or {}).get("sink_throughput")
        if predicted is None:
            continue
        measured = run["measured"]["sink_throughput"]
        top = max(top, predicted, measured)
        ax.scatter(predicted, measured, color=COLOURS.get(run["scheduler"]), edgecolor="black",
                   marker=markers.get(run["topology"], "o"), s=70, label=f"{run['topology']} {run['scheduler']}")
    top *= 1.15
    ax.plot([0, top], [0, top], color="black", linewidth=0.8)
    ax.fill_between([0, top], [0, top * (1 - tolerance)], [0, top * (1 + tolerance)], color="grey", alpha=0.15,
                    label=f"within {tolerance:.0%}")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("predicted sink throughput (tuples/s)")
    ax.set_ylabel("measured sink throughput (tuples/s)")
    ax.set_title("Planner's prediction against the measurement")
    ax.legend(fontsize=6, loc="upper left")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def all_plots(data: dict[str, Any], out_dir: Path) -> list[Path]:
    private_folder(out_dir)
    return [
        throughput_plot(data, out_dir / "throughput.png"),
        cpu_plot(data, out_dir / "cpu.png"),
        prediction_plot(data, out_dir / "predicted-vs-measured.png"),
    ]


def _save(fig, path: Path) -> Path:
    return save_png(fig, path, dpi=120)
