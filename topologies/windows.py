"""Sliding windows of a fixed number of slots, advanced on every tick (storm-benchmark's SlidingWindow)."""
from __future__ import annotations

from collections import Counter, defaultdict, deque


class SlidingCounts:
    """Counts per key over the last ``slots`` tick periods."""

    def __init__(self, slots: int) -> None:
        self._slots: deque[Counter] = deque([Counter() for _ in range(max(1, slots))], maxlen=max(1, slots))

    def add(self, key: str, n: int = 1) -> None:
        self._slots[-1][key] += n

    def totals_then_advance(self) -> dict[str, int]:
        """The counts over the whole window; then the oldest slot drops out."""
        totals: Counter = Counter()
        for slot in self._slots:
            totals.update(slot)
        self._slots.append(Counter())
        return dict(totals)


class SlidingSets:
    """Distinct members per key over the last ``slots`` tick periods."""

    def __init__(self, slots: int) -> None:
        self._slots: deque[defaultdict[str, set]] = deque(
            [defaultdict(set) for _ in range(max(1, slots))], maxlen=max(1, slots)
        )

    def add(self, key: str, member) -> None:
        self._slots[-1][key].add(member)

    def sizes_then_advance(self) -> dict[str, int]:
        """How many distinct members each key had over the whole window; then the oldest slot drops out."""
        union: defaultdict[str, set] = defaultdict(set)
        for slot in self._slots:
            for key, members in slot.items():
                union[key] |= members
        self._slots.append(defaultdict(set))
        return {key: len(members) for key, members in union.items()}


def slot_count(window_length_s: float, emit_frequency_s: float) -> int:
    """Slots of a window: its length over the emit (tick) period, at least 1."""
    return max(1, int(window_length_s // max(1.0, emit_frequency_s)))
