"""The Python processes of a running topology, found by what Storm started them with.

A shell component's process runs ``streamparse_run <module.Class>`` in
``<storm.local.dir>/supervisor/stormdist/<topology-id>/resources``; its
parent is the worker JVM. Components that share a class (Star's two spouts)
cannot be told apart this way and are reported together.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import psutil

from topologies.catalog import CatalogEntry


@dataclass
class ProcessGroup:
    """The processes of one component (or of components sharing one class)."""

    components: tuple[str, ...]
    script: str
    processes: list[psutil.Process]

    @property
    def label(self) -> str:
        return "+".join(self.components)

    def cpu_seconds(self) -> float:
        """User plus system CPU of the live processes."""
        total = 0.0
        for p in self.processes:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total


def _script_of(cmdline: list[str]) -> str | None:
    for i, arg in enumerate(cmdline):
        if arg.endswith("streamparse_run") and i + 1 < len(cmdline):
            return cmdline[i + 1].split()[-1]
    return None


def shell_processes(topology_id: str) -> dict[str, list[psutil.Process]]:
    """Script (``module.Class``) -> the processes running it for this topology."""
    found: dict[str, list[psutil.Process]] = defaultdict(list)
    for p in psutil.process_iter(["cmdline"]):
        try:
            script = _script_of(p.info["cmdline"] or [])
            if script and f"{topology_id}" in p.cwd().split("/"):
                found[script].append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return dict(found)


def component_groups(entry: CatalogEntry, topology_id: str) -> list[ProcessGroup]:
    """The topology's Python processes, grouped by component class."""
    by_script: dict[str, list[str]] = defaultdict(list)
    for spec in entry.topology.specs:
        by_script[spec.component_object.shell.script].append(spec.name)
    processes = shell_processes(topology_id)
    return [
        ProcessGroup(tuple(components), script, processes.get(script, []))
        for script, components in by_script.items()
    ]


def worker_jvms(groups: list[ProcessGroup]) -> list[psutil.Process]:
    """The worker JVMs that started these Python processes."""
    parents: dict[int, psutil.Process] = {}
    for group in groups:
        for p in group.processes:
            try:
                parent = p.parent()
            except psutil.NoSuchProcess:
                continue
            if parent is not None:
                parents[parent.pid] = parent
    return list(parents.values())
