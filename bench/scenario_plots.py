"""What the bench's figures draw alike: rates over time in panels one above the other, labelled the same way
(machine-loss, multi-tenant), and every figure saved as a PNG the same way. matplotlib is imported only when a
figure is drawn."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from planner.durable import write_atomic


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


def save_png(fig: Any, path: Path, dpi: int = 110) -> Path:
    """The figure laid out tight and closed, written whole (a reader never sees half a picture), owner-only like
    every result."""
    try:
        fig.tight_layout()
        picture = io.BytesIO()
        fig.savefig(picture, format="png", dpi=dpi)
    finally:
        pyplot().close(fig)
    return write_atomic(path, picture.getvalue())
