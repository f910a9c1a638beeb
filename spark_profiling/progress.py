"""What a running Spark job is doing, polled from the driver for a progress line (one job can take minutes)."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession


def stage_line(spark: SparkSession) -> str | None:
    """``stage 3: 12/16 tasks (2 running)`` for every active stage, or None when none is running."""
    tracker = spark.sparkContext.statusTracker()
    parts = []
    for stage_id in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks ({info.numActiveTasks} running)")
    return ", ".join(parts) or None


@contextmanager
def reporting(spark: SparkSession, report: Callable[[str], None] | None, every_s: float = 0.5) -> Iterator[None]:
    """Call ``report`` with the active stages' progress every ``every_s`` seconds while the block runs."""
    if report is None:
        yield
        return
    done = threading.Event()

    def poll() -> None:
        while not done.wait(every_s):
            try:
                line = stage_line(spark)
            except Exception:  # the session may be stopping; progress is best effort
                return
            if line:
                report(line)

    thread = threading.Thread(target=poll, name="spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)
