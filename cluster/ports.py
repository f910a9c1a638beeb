"""Which ports are taken, and by whom: for refusals and for finding a free range for a cluster."""
from __future__ import annotations

import random

import psutil


def listening_ports() -> set[int]:
    """Every TCP/UDP port some process listens on (any address)."""
    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.Error:
        return set()
    return {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN and c.laddr}


def listener_of(port: int) -> psutil.Process | None | bool:
    """The process listening on ``port`` (any address); False if the port is free, None if in use by an unknown process."""
    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.Error:
        connections = []
    for c in connections:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port:
            if c.pid is None:
                return None
            try:
                return psutil.Process(c.pid)
            except psutil.Error:
                return None
    return False


def free_port_base(ports_needed: int, low: int = 20000, high: int = 60000, step: int = 100) -> int:
    """A base from which ``ports_needed`` ports are free, searched from a random place (tests, benchmarks)."""
    listening = listening_ports()
    candidates = list(range(low, high, step))
    start = random.randrange(len(candidates))
    for base in candidates[start:] + candidates[:start]:
        if not any(base + offset in listening for offset in range(ports_needed)):
            return base
    raise RuntimeError(f"no {ports_needed} free ports between {low} and {high}")
