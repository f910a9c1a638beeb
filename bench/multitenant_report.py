"""The multi-tenant scenario's result as rich tables and matplotlib figures. Pure but for writing PNGs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

STACKED_PLOT = "multi-tenant-throughput.png"
SERIES_PLOT = "multi-tenant-over-time.png"


def _runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in data.get("runs", {}).values() if r.get("tenants")]


def tenants_table(data: dict[str, Any]) -> Table:
    """Per scheduler and tenant: input rate against its minimum, CPU share; then the same after the change."""
    table = Table(title="multi-tenant: every tenant under every scheduler (input rate, tuples/s)")
    for column in ("scheduler", "topology", "priority", "minimum", "input rate", "min held", "CPU share",
                   "after change", "min held after", "re-placed after s", "failed since change", "scheduler status"):
        table.add_column(column, justify="left" if column in ("scheduler", "topology", "scheduler status") else "right")
    for run in _runs(data):
        for t in run["tenants"]:
            after = t["after"]
            table.add_row(
                run["scheduler"], t["topology"],
                f"{t['priority']}" + (f"->{t['priority_after']}" if t["priority_after"] != t["priority"] else ""),
                f"{t['min_rate']:.2f}", f"{t['input_rate']:.2f}", "yes" if t["min_met"] else "[red]no[/red]",
                f"{100 * t['cpu_share']:.1f}%", f"{after['input_rate']:.2f}",
                "yes" if after["min_met"] else "[red]no[/red]",
                ("-" if after["replaced_s"] is None else f"{after['replaced_s']:g}")
                + ("" if after.get("unplaced_s") is None else f" (lost its workers at {after['unplaced_s']:g})"),
                str(after["failed_since_change"]), (t.get("sched_status") or "")[:60])
    return table


def summary_table(data: dict[str, Any]) -> Table:
    """Per scheduler: minimums held, weighted throughput before and after the change, how the change was made."""
    table = Table(title="multi-tenant: per scheduler (weight of a tenant = 1 / (1 + priority))")
    for column in ("scheduler", "minimums held", "weighted throughput", "after change", "failed since change",
                   "priority change", "error"):
        table.add_column(column, justify="left" if column in ("scheduler", "priority change", "error") else "right")
    for run in _runs(data):
        table.add_row(run["scheduler"], f"{run['minimums_met']}/{len(run['tenants'])}",
                      f"{run['weighted_throughput']:.2f}", f"{run['weighted_throughput_after']:.2f}",
                      str(run["failed_since_change"]), run["change"]["how"], run.get("error") or "")
    return table


def headline_lines(data: dict[str, Any]) -> list[str]:
    """Which scheduler misses which minimum, and planned's weighted throughput against the best baseline."""
    lines = []
    for run in _runs(data):
        missed = [t["topology"] for t in run["tenants"] if not t["min_met"]]
        lines.append(f"{run['scheduler']}: " + (f"misses the minimum of {', '.join(missed)}" if missed
                                                 else "every minimum held"))
    runs = {r["scheduler"]: r for r in _runs(data)}
    baselines = {s: r["weighted_throughput"] for s, r in runs.items() if s != "planned"}
    if "planned" in runs and baselines:
        best = max(baselines, key=baselines.get)
        if baselines[best] > 0:
            lines.append(f"planned's weighted throughput {runs['planned']['weighted_throughput']:.2f} is "
                         f"{runs['planned']['weighted_throughput'] / baselines[best]:.2f}x the best baseline's "
                         f"({best}, {baselines[best]:.2f}); aim 1.3x")
    return lines


def plots(data: dict[str, Any], folder: Path) -> list[Path]:
    """The stacked input rates per scheduler and every tenant's rate over time across the change."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = _runs(data)
    if not runs:
        return []
    drawn = []
    topologies = [t["topology"] for t in runs[0]["tenants"]]
    fig, ax = plt.subplots(figsize=(1.6 * len(runs) + 3, 4))
    bottoms = [0.0] * len(runs)
    for topology in topologies:
        values = [next(t["input_rate"] for t in r["tenants"] if t["topology"] == topology) for r in runs]
        ax.bar([r["scheduler"] for r in runs], values, bottom=bottoms, label=topology)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_ylabel("input rate, tuples/s")
    ax.set_title("multi-tenant: every tenant's input rate per scheduler")
    ax.legend()
    fig.tight_layout()
    path = folder / STACKED_PLOT
    fig.savefig(path, dpi=110)
    plt.close(fig)
    drawn.append(path)

    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.4 * len(runs) + 0.6), sharex=True, squeeze=False)
    for ax, run in zip(axes[:, 0], runs):
        for t in run["tenants"]:
            if t["series"]:
                xs, ys = zip(*t["series"])
                ax.plot(xs, ys, label=f"{t['topology']} (min {t['min_rate']:.1f})")
        ax.axvline(run["change"]["at_s"], color="grey", linestyle="--")
        ax.set_title(f"{run['scheduler']}: {run['change']['topology']} -> priority {run['change']['priority']} "
                     f"at the dashed line", fontsize=9)
        ax.set_ylabel("tuples/s")
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("seconds since the window began")
    fig.tight_layout()
    path = folder / SERIES_PLOT
    fig.savefig(path, dpi=110)
    plt.close(fig)
    drawn.append(path)
    return drawn
