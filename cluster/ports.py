"""Which ports are taken, and by whom: for refusals and for finding a free range for a cluster."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Literal

import psutil


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ports_in_use() -> set[int]:
    """Every local port some socket holds: listeners and the local ends of connections."""
    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.Error:
        return set()
    return {c.laddr.port for c in connections if c.laddr}


def ephemeral_range() -> range:
    """The ports the kernel hands to outgoing connections; a daemon port there may be taken at any time."""
    try:
        low, high = (int(x) for x in _EPHEMERAL_RANGE.read_text().split())
        return range(low, high + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def listeners() -> dict[int, int | None]:
    """Listening ports and the pid holding each (None where the kernel does not say)."""
    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.Error:
        return {}
    return {c.laddr.port: c.pid for c in connections if c.status == psutil.CONN_LISTEN and c.laddr}


def listener_of(port: int, snapshot: dict[int, int | None] | None = None) -> psutil.Process | None | Literal[False]:
    """The process listening on ``port`` (any address); False if the port is free, None if in use by an unknown process."""
    snapshot = listeners() if snapshot is None else snapshot
    if port not in snapshot:
        return False
    try:
        return psutil.Process(snapshot[port]) if snapshot[port] is not None else None
    except psutil.Error:
        return None


def free_port_base(ports_needed: int, low: int = 17000, high: int = 32000, step: int = 100) -> int:
    """A base from which ``ports_needed`` ports are free and outside the ephemeral range, searched from a random place."""
    listening = ports_in_use()
    ephemeral = ephemeral_range()
    candidates = [b for b in range(low, high, step) if b + ports_needed - 1 < ephemeral.start or b >= ephemeral.stop]
    start = random.randrange(len(candidates))
    for base in candidates[start:] + candidates[:start]:
        if not any(base + offset in listening for offset in range(ports_needed)):
            return base
    raise RuntimeError(f"no {ports_needed} free ports between {low} and {high} outside the ephemeral range")
