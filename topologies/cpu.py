"""Spending a set amount of CPU time, the per-tuple work of the compute bolts."""
from __future__ import annotations

import time


def burn_cpu(seconds: float) -> float:
    """Busy-loop until this thread has used ``seconds`` of CPU; return the CPU seconds used.

    Thread CPU time, not wall time: on a machine with a CPU quota or other
    load, the loop takes longer in wall time but costs the same CPU, which is
    what a profile's ``e`` (CPU seconds per tuple) describes.
    """
    start = time.thread_time()
    if seconds <= 0:
        return 0.0
    deadline = start + seconds
    x = 0
    while time.thread_time() < deadline:
        for _ in range(200):
            x += 1
    return time.thread_time() - start
