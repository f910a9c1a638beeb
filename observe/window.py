"""Sampling a running topology's counts through a measurement window (the I/O around :mod:`observe.rates`)."""
from __future__ import annotations

import time
from collections.abc import Callable

from observe.nimbus import Nimbus
from observe.rates import CountSample, component_rates, unmeasured

SAMPLE_S = 0.5
"""Counts are read this often: a stats step is dated within a quarter of a second."""


def sample_window(
    nimbus: Nimbus,
    topology_id: str,
    window_s: float,
    roles: dict[str, str],
    *,
    sample_s: float = SAMPLE_S,
    extend_to_s: float | None = None,
    on_sample: Callable[[CountSample, float, float], None] | None = None,
    on_extend: Callable[[list[str], float], None] | None = None,
) -> list[CountSample]:
    """Read the counts every ``sample_s`` seconds for ``window_s`` seconds.

    With ``extend_to_s``, a window at whose end some component of ``roles`` has not stepped twice goes on
    up to that many seconds (a worker on a machine at its full quota can report late); ``on_extend`` hears
    which components and the new length. ``on_sample(sample, elapsed_s, length_s)`` hears every sample.
    """
    samples: list[CountSample] = []
    start = time.monotonic()
    limit = window_s
    while (elapsed := time.monotonic() - start) < limit:
        sample = CountSample(time.monotonic(), nimbus.counts(topology_id))
        samples.append(sample)
        if on_sample:
            on_sample(sample, elapsed, limit)
        time.sleep(sample_s)
        if extend_to_s and limit == window_s and time.monotonic() - start >= limit:
            still = unmeasured(component_rates(samples, roles))
            if still:
                limit = extend_to_s
                if on_extend:
                    on_extend(still, limit)
    return samples
