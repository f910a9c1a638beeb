"""The multi-tenant scenario's result as rich tables, markdown and matplotlib figures. Pure but for writing PNGs.

``python -m bench.multitenant_report FOLDER`` prints the markdown tables docs/baselines.md shows.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.table import Table

PLANNED = ("planned", "planned-strict")
"""hetsched's entries; every other scheduler is a baseline."""

STACKED_PLOT = "multi-tenant-throughput.png"
SERIES_PLOT = "multi-tenant-over-time.png"


def _runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in data.get("runs", {}).values() if r.get("tenants")]


def tenants_table(data: dict[str, Any]) -> Table:
    """Per scheduler and tenant: input rate against its minimum, CPU share; then the same after the change."""
    table = Table(title="multi-tenant: every tenant under every scheduler (input rate, tuples/s)")
    for column in ("scheduler", "topology", "priority", "minimum", "ledger rate", "input rate", "min held", "CPU share",
                   "after change", "min held after", "re-placed after s", "failed since change", "scheduler status"):
        table.add_column(column, justify="left" if column in ("scheduler", "topology", "scheduler status") else "right")
    for run in _runs(data):
        for t in run["tenants"]:
            after = t["after"]
            table.add_row(
                run["scheduler"], t["topology"],
                f"{t['priority']}" + (f"->{t['priority_after']}" if t["priority_after"] != t["priority"] else ""),
                f"{t['min_rate']:.2f}", _ledger(t), f"{t['input_rate']:.2f}",
                "yes" if t["min_met"] else "[red]no[/red]",
                f"{100 * t['cpu_share']:.1f}%", f"{after['input_rate']:.2f}",
                "yes" if after["min_met"] else "[red]no[/red]",
                _replaced(after),
                str(after["failed_since_change"]), (t.get("sched_status") or "")[:60])
    return table


def _ledger(t: dict[str, Any], after: bool = False) -> str:
    """The rate the ledger gave the tenant (planned entries: its spout's pace), or '-'."""
    rate = (t["after"] if after else t).get("ledger_rate")
    return "-" if rate is None else f"{rate:.2f}"


def _replaced(after: dict[str, Any]) -> str:
    """When the tenant was re-placed, or (planned) re-paced at its new ledger rate, after the change."""
    text = "-" if after["replaced_s"] is None else f"{after['replaced_s']:g}"
    if after.get("paced_again_s") is not None:
        text = f"re-paced at {after['paced_again_s']:g}" if text == "-" else f"{text}, re-paced at {after['paced_again_s']:g}"
    if after.get("unplaced_s") is not None:
        text += f" (lost its workers at {after['unplaced_s']:g})"
    return text


def _machine_cpu(run: dict[str, Any], phase: str = "window") -> str:
    cpu = (run.get("machine_cpu") or {}).get(phase) or {}
    return ", ".join(f"{m} {v:.0f}%" for m, v in sorted(cpu.items())) or "-"


def summary_table(data: dict[str, Any]) -> Table:
    """Per scheduler: minimums held, weighted throughput before and after the change, how the change was made."""
    table = Table(title="multi-tenant: per scheduler (weight of a tenant = 1 / (1 + priority))")
    for column in ("scheduler", "minimums held", "weighted throughput", "after change", "failed since change",
                   "machine CPU in the window", "priority change", "error"):
        table.add_column(column, justify="left" if column in ("scheduler", "machine CPU in the window",
                                                               "priority change", "error") else "right")
    for run in _runs(data):
        table.add_row(run["scheduler"], f"{run['minimums_met']}/{len(run['tenants'])}",
                      f"{run['weighted_throughput']:.2f}", f"{run['weighted_throughput_after']:.2f}",
                      str(run["failed_since_change"]), _machine_cpu(run), run["change"]["how"], run.get("error") or "")
    return table


def headline_lines(data: dict[str, Any]) -> list[str]:
    """Which scheduler misses which minimum, and planned's weighted throughput against the best baseline."""
    lines = []
    for run in _runs(data):
        missed = [t["topology"] for t in run["tenants"] if not t["min_met"]]
        lines.append(f"{run['scheduler']}: " + (f"misses the minimum of {', '.join(missed)}" if missed
                                                 else "every minimum held"))
    runs = {r["scheduler"]: r for r in _runs(data)}
    baselines = {s: r["weighted_throughput"] for s, r in runs.items() if s not in PLANNED}
    best = max(baselines, key=lambda s: baselines[s]) if baselines else None
    for planned in PLANNED:
        if planned in runs and best is not None and baselines[best] > 0:
            lines.append(f"{planned}'s weighted throughput {runs[planned]['weighted_throughput']:.2f} is "
                         f"{runs[planned]['weighted_throughput'] / baselines[best]:.2f}x the best baseline's "
                         f"({best}, {baselines[best]:.2f}); aim 1.3x")
    return lines


def markdown_lines(data: dict[str, Any]) -> list[str]:
    """The per-scheduler table (input rates, minimums, weighted throughput) and the per-tenant one, as markdown."""
    runs = _runs(data)
    if not runs:
        return []
    topologies = [t["topology"] for t in runs[0]["tenants"]]

    def rate(t: dict[str, Any]) -> str:
        if t["input_rate"] <= 0 and t["status"] in ("not placed", "not submitted"):
            refused = "not admitted" in (t.get("refusal") or t.get("sched_status") or "")
            return "not admitted" if refused else "not placed"
        return f"{t['input_rate']:.2f}" + ("" if t["min_met"] else " (min missed)")

    lines = ["| scheduler | " + " | ".join(topologies) + " | minimums held | weighted throughput | after the change "
             "| failed since the change | machine CPU in the window |",
             "|---" * (len(topologies) + 6) + "|"]
    for run in runs:
        by = {t["topology"]: t for t in run["tenants"]}
        lines.append(f"| {run['scheduler']} | " + " | ".join(rate(by[t]) for t in topologies)
                     + f" | {run['minimums_met']}/{len(run['tenants'])} | {run['weighted_throughput']:.2f} "
                     f"| {run['weighted_throughput_after']:.2f} | {run['failed_since_change']} | {_machine_cpu(run)} |")
    lines += ["", "| scheduler | topology | priority | minimum | ledger rate | input rate | CPU share | ledger rate after "
                  "| after the change | re-placed (s after the change) | failed since the change |",
              "|---" * 11 + "|"]
    for run in runs:
        for t in run["tenants"]:
            after = t["after"]
            priority = f"{t['priority']}" + (f"->{t['priority_after']}" if t["priority_after"] != t["priority"] else "")
            lines.append(f"| {run['scheduler']} | {t['topology']} | {priority} | {t['min_rate']:.2f} | {_ledger(t)} "
                         f"| {t['input_rate']:.2f} | {100 * t['cpu_share']:.1f}% | {_ledger(t, after=True)} "
                         f"| {after['input_rate']:.2f} | {_replaced(after)} | {after['failed_since_change']} |")
    machines = machine_lines(data)
    return lines + ([""] + machines if machines else []) + [""] + headline_lines(data)


def machine_lines(data: dict[str, Any]) -> list[str]:
    """Planned entries: each machine's load the ledger predicts at the tenants' rates against its measured CPU."""
    lines = []
    for run in _runs(data):
        window = (run.get("ledger") or {}).get("window") or {}
        measured = (run.get("machine_cpu") or {}).get("window") or {}
        for m in window.get("machines", []):
            loads = ", ".join(f"{t} {v:.1f}" for t, v in sorted(m["loads"].items()))
            got = measured.get(m["id"])
            lines.append(f"| {run['scheduler']} | {m['id']} | {sum(m['loads'].values()):.1f} | "
                         f"{'-' if got is None else f'{got:.1f}'} | {loads} |")
    if not lines:
        return []
    return ["| scheduler | machine | ledger's load at the tenants' rates, % | measured CPU in the window, % "
            "| per tenant (ledger) |", "|---" * 5 + "|"] + lines


def plots(data: dict[str, Any], folder: Path) -> list[Path]:
    """The stacked input rates per scheduler and every tenant's rate over time across the change."""
    from bench.scenario_plots import label_panel, panels, pyplot, save_png

    runs = _runs(data)
    if not runs:
        return []
    drawn = []
    topologies = [t["topology"] for t in runs[0]["tenants"]]
    fig, ax = pyplot().subplots(figsize=(1.6 * len(runs) + 3, 4))
    bottoms = [0.0] * len(runs)
    for topology in topologies:
        values = [next(t["input_rate"] for t in r["tenants"] if t["topology"] == topology) for r in runs]
        ax.bar([r["scheduler"] for r in runs], values, bottom=bottoms, label=topology)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_ylabel("input rate, tuples/s")
    ax.set_title("multi-tenant: every tenant's input rate per scheduler")
    ax.legend()
    drawn.append(save_png(fig, folder / STACKED_PLOT))

    fig, axes = panels(len(runs), 8, 2.4)
    for ax, run in zip(axes, runs):
        for t in run["tenants"]:
            if t["series"]:
                xs, ys = zip(*t["series"])
                ax.plot(xs, ys, label=f"{t['topology']} (min {t['min_rate']:.1f})")
        ax.axvline(run["change"]["at_s"], color="grey", linestyle="--")
        label_panel(ax, f"{run['scheduler']}: {run['change']['topology']} -> priority {run['change']['priority']} "
                    f"at the dashed line", "tuples/s")
    axes[-1].set_xlabel("seconds since the window began")
    drawn.append(save_png(fig, folder / SERIES_PLOT))
    return drawn


def main(argv: list[str] | None = None) -> int:
    """Print a recorded scenario's markdown tables: ``python -m bench.multitenant_report FOLDER``."""
    from bench.errors import BenchError
    from bench.multitenant import RESULT_FILE, read_result

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m bench.multitenant_report FOLDER (or its multi-tenant.json)", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        data = read_result(path / RESULT_FILE if path.is_dir() else path)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(markdown_lines(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
