"""Plot a machine_loss_live.py record: spout tuple trees acked per second over time, failed ones, and the events.

    .venv/bin/python benchmarks/plot_machine_loss.py docs/results/measurements/issue15/machine-loss-live-*.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rates(samples: list[dict]) -> tuple[list[float], list[float], list[float]]:
    times, acked, failed = [], [], []
    for before, row in zip(samples, samples[1:]):
        dt = row["t_s"] - before["t_s"]
        if dt > 0:
            times.append(row["t_s"])
            acked.append(row["acked"] / dt)
            failed.append(row["failed"] / dt)
    return times, acked, failed


def events(samples: list[dict]) -> list[tuple[float, str]]:
    """Marked events, and the first sample of each new scheduler status (repaired, joined, placed by bound plan)."""
    found = [(s["t_s"], s["event"]) for s in samples if s.get("event")]
    last = None
    for s in samples:
        status = s["status"]
        for key, label in (("repaired", "repaired"), ("joined", "re-planned"), ("bound plan", "placed by bound plan")):
            if key in status and (last is None or key not in last):
                found.append((s["t_s"], label))
        last = status
    return sorted(found)


def main(path: str) -> Path:
    record = json.loads(Path(path).read_text())
    samples = record["samples"]
    times, acked, failed = rates(samples)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(times, acked, label="spout tuple trees acked /s")
    ax.plot(times, failed, label="failed /s", color="tab:red")
    for t, label in events(samples):
        ax.axvline(t, color="grey", linestyle="--", linewidth=0.8)
        ax.text(t, ax.get_ylim()[1] * 0.95, label, rotation=90, va="top", ha="right", fontsize=8)
    ax.set_xlabel("seconds since submit")
    ax.set_ylabel("tuples/s")
    ax.set_title(f"Linear under the hetsched plugin: {record.get('victim', 'a machine')} killed and returned")
    ax.legend(loc="lower right")
    out = Path(path).with_suffix(".png")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1]))
