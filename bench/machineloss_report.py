"""The machine-loss scenario's result as rich tables and a matplotlib figure. Pure but for writing the PNG."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from bench.machineloss import summary, unplaced_while_down

SERIES_PLOT = "machine-loss-over-time.png"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def runs_table(data: dict[str, Any]) -> Table:
    """One row per run: the rates of the three phases against their predictions, the times, the tuple counts."""
    victim = data.get("victim", "the victim")
    table = Table(title=f"machine-loss: Linear, {victim} killed and returned (input rate, tuples/s; times in s)")
    for column in ("round", "scheduler", "before", "pred.", "down", "pred.", "best plan", "noticed", "re-placed",
                   "recovered", "after", "pred.", "moved back", "failed down", "failed after", "gave up",
                   "in flight at end", "error"):
        table.add_column(column, justify="left" if column in ("scheduler", "error") else "right")
    for r in data.get("runs", []):
        unplaced = unplaced_while_down(r)
        replaced = f"never ({unplaced} unplaced)" if unplaced else _fmt(r.get("replaced_s"), 1)
        table.add_row(str(r.get("round", "")), r["scheduler"], _fmt(r.get("rate_before")), _fmt(r.get("predicted_before")),
                      _fmt(r.get("rate_down")), _fmt(r.get("predicted_down")), _fmt(r.get("smaller_cluster_plan")),
                      _fmt(r.get("noticed_s"), 1), replaced, "never" if unplaced else _fmt(r.get("recovered_s"), 1),
                      _fmt(r.get("rate_after")), _fmt(r.get("predicted_after")), _fmt(r.get("moved_back_s"), 1),
                      _fmt(r.get("failed_down")), _fmt(r.get("failed_after")), _fmt(r.get("gave_up")),
                      _fmt(r.get("in_flight_end")), (r.get("error") or "")[:80])
    return table


def summary_table(data: dict[str, Any]) -> Table:
    """Per scheduler: the median (min-max) of each figure over its finished runs."""
    table = Table(title="machine-loss: median (min-max) per scheduler")
    names = (("rate_before", "before"), ("rate_down", "down"), ("predicted_down", "predicted down"),
             ("recovered_s", "recovered s"), ("rate_after", "after"), ("moved_back_s", "moved back s"),
             ("restored_s", "after rate s"), ("lowest_after", "lowest 20 s rate after"),
             ("failed_down", "failed down"), ("failed_after", "failed after"), ("gave_up", "gave up"))
    table.add_column("scheduler")
    table.add_column("runs", justify="right")
    for _, title in names:
        table.add_column(title, justify="right")
    for scheduler, row in summary(data.get("runs", [])).items():
        cells = []
        for name, _ in names:
            figure = row.get(name)
            cells.append("-" if not figure else f"{figure['median']:g} ({figure['min']:g}-{figure['max']:g})")
        table.add_row(scheduler, str(row["runs"]), *cells)
    return table


STEP_TITLES = (("dead_s", "declared dead"), ("assigned_s", "assigned"), ("launched_s", "worker created"),
               ("jvm_up_s", "worker JVM up"), ("ready_s", "executors ready"))


def steps_table(data: dict[str, Any]) -> Table:
    """Per scheduler: where the seconds from the kill to the recovered rate went (bench/recovery.py), median (range)."""
    table = Table(title="machine-loss: seconds after the kill, median (min-max) per scheduler")
    table.add_column("scheduler")
    for _, title in STEP_TITLES + (("replaced_s", "all running (Nimbus)"), ("recovered_s", "rate recovered")):
        table.add_column(title, justify="right")
    for scheduler, row in summary(data.get("runs", [])).items():
        cells = []
        for name, _ in STEP_TITLES + (("replaced_s", ""), ("recovered_s", "")):
            figure = row.get(name)
            cells.append("-" if not figure else f"{figure['median']:g} ({figure['min']:g}-{figure['max']:g})")
        table.add_row(scheduler, *cells)
    return table


def headline_lines(data: dict[str, Any]) -> list[str]:
    """What the run shows in a few sentences: recovery, the smaller cluster against its prediction, the return."""
    lines = []
    for scheduler, row in summary(data.get("runs", [])).items():
        if not row.get("runs"):
            lines.append(f"{scheduler}: no run finished")
            continue
        down, predicted, after, before = (row.get(k) for k in ("rate_down", "predicted_down", "rate_after", "rate_before"))
        parts = [f"{scheduler}: {before['median']:.2f} tuples/s before" if before else f"{scheduler}:"]
        if down:
            parts.append(f"{down['median']:.2f} on the smaller cluster"
                         + (f" (predicted {predicted['median']:.2f})" if predicted else ""))
        if row.get("recovered_s"):
            parts.append(f"recovered in {row['recovered_s']['median']:g} s")
        elif down:
            parts.append("never recovered (executors left unplaced)")
        if after:
            parts.append(f"{after['median']:.2f} after the return")
        moved = row.get("moved_back_s")
        parts.append(f"moved back after {moved['median']:g} s" if moved else "never moved back")
        lines.append(", ".join(parts))
    return lines


def plot(data: dict[str, Any], folder: Path) -> list[Path]:
    """The input rate over time of every run, one panel per scheduler, the kill and the return marked."""
    from bench.scenario_plots import label_panel, panels, save_png

    runs = [r for r in data.get("runs", []) if r.get("series")]
    if not runs:
        return []
    schedulers = list(dict.fromkeys(r["scheduler"] for r in runs))
    fig, axes = panels(len(schedulers), 9, 2.6)
    for ax, scheduler in zip(axes, schedulers):
        for r in (r for r in runs if r["scheduler"] == scheduler):
            xs, ys = zip(*r["series"])
            line, = ax.plot(xs, ys, label=f"round {r.get('round', 1)}")
            ax.axvline(r["killed_at_s"], color=line.get_color(), linestyle="--", linewidth=0.8)
            ax.axvline(r["returned_at_s"], color=line.get_color(), linestyle=":", linewidth=0.8)
            if r.get("predicted_down") is not None:
                ax.hlines(r["predicted_down"], r["killed_at_s"], r["returned_at_s"], colors="grey", linewidth=0.8)
        label_panel(ax, f"{scheduler}: {data.get('victim')} killed (--) and back (:); grey: predicted while down",
                    "input rate, tuples/s")
    axes[-1].set_xlabel("seconds since Linear ran")
    return [save_png(fig, folder / SERIES_PLOT)]
