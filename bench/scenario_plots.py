"""What the scenario reports' figures (machine-loss, multi-tenant) draw alike: rates over time in panels one above
the other, labelled the same way, saved as 110 dpi PNGs. matplotlib is imported only when a figure is drawn."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def panels(rows: int, width: float, row_height: float) -> tuple[Any, list[Any]]:
    """A figure of ``rows`` panels one above the other on one shared time axis, and the panels."""
    fig, axes = pyplot().subplots(rows, 1, figsize=(width, row_height * rows + 0.6), sharex=True, squeeze=False)
    return fig, list(axes[:, 0])


def label_panel(ax: Any, title: str, ylabel: str) -> None:
    """A panel's small title, its y label and the legend of its lines."""
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def save_png(fig: Any, path: Path) -> Path:
    """The figure laid out tight, written to ``path`` (110 dpi) and closed."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path
