"""How many tuples a spout instance owes at a set rate (tuples/s)."""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_BACKLOG_S = 1.0
"""A spout held back (backpressure, max.spout.pending) forgives all but this many seconds of tuples,
so a rate is a ceiling and never turns into a flood after a stall."""


@dataclass
class Pacer:
    """Tuples due at ``rate`` tuples/s since ``start`` (seconds on a monotonic clock)."""

    rate: float
    start: float
    accounted: int = field(default=0)
    """Tuples emitted plus those forgiven after a stall."""

    def due(self, now: float) -> int:
        """Tuples to emit now to stay on schedule (0 when ahead)."""
        owed = int((now - self.start) * self.rate) - self.accounted
        backlog_cap = max(1, int(self.rate * MAX_BACKLOG_S))
        if owed > backlog_cap:
            self.accounted += owed - backlog_cap
            owed = backlog_cap
        return max(0, owed)

    def wait(self, now: float) -> float:
        """Seconds until the next tuple is due (0 when one is due already)."""
        next_at = self.start + (self.accounted + 1) / self.rate
        return max(0.0, next_at - now)

    def sent(self, n: int = 1) -> None:
        self.accounted += n
