"""The checks before a cluster starts, each refusing with a sentence that says what to do."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from cluster import cgroups, ports, processes
from cluster.errors import ClusterError
from cluster.layout import ClusterLayout
from cluster.storm_config import PLUGIN_JAR, SCHEDULERS

PLUGIN_SCHEDULERS = ("plugin", "sps", "dps")
"""Schedulers whose classes are in the plugin jar."""

MIN_JAVA = 17


def check_scheduler(scheduler: str) -> None:
    if scheduler not in SCHEDULERS:
        raise ClusterError(f"Unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}.")
    if scheduler in PLUGIN_SCHEDULERS and not PLUGIN_JAR.is_file():
        raise ClusterError(
            f"The scheduler plugin jar {PLUGIN_JAR} does not exist; build it first (make plugin), "
            "or choose --scheduler default or resource_aware."
        )


def stale_plugin_jar(jar: Path = PLUGIN_JAR, sources: Path | None = None) -> str | None:
    """A warning when a plugin source is newer than the jar: the cluster would run yesterday's plugin (seen: a
    ``ClassNotFoundException`` for a grouping committed after the jar was built). None without sources (an install)."""
    sources = sources if sources is not None else jar.parent.parent / "src" / "main"
    if not jar.is_file() or not sources.is_dir():
        return None
    built = jar.stat().st_mtime
    newer = sorted(p for p in sources.rglob("*") if p.is_file() and p.stat().st_mtime > built)
    if not newer:
        return None
    return (f"WARNING: {len(newer)} plugin source file(s) changed after {jar.name} was built (e.g. "
            f"{newer[0].relative_to(sources)}); the cluster runs the old plugin: run make plugin first.")


def check_java() -> None:
    """Java 17 or newer must be on PATH (Storm 2.8 requires it)."""
    if shutil.which("java") is None:
        raise ClusterError(f"Java is not installed (no 'java' on PATH); Storm 2.8 needs Java {MIN_JAVA}: apt-get install openjdk-17-jdk-headless.")
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    major = java_major_version(done.stderr + done.stdout)
    if major is None or major < MIN_JAVA:
        found = "an unknown version" if major is None else f"Java {major}"
        raise ClusterError(f"Storm 2.8 needs Java {MIN_JAVA} or newer; 'java' on PATH is {found}.")


def java_major_version(version_text: str) -> int | None:
    """The major version from ``java -version`` output (``1.8.0_392`` -> 8, ``17.0.15`` -> 17)."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def check_cpu_budget(total_cores: float, host_cores: int | None = None) -> None:
    """The quotas must fit the host, or they would not be real capacities."""
    host_cores = host_cores or os.cpu_count() or 1
    if total_cores > host_cores:
        raise ClusterError(
            f"The machines' CPU quotas add up to {total_cores:g} cores but this host has {host_cores}; "
            "the machines could not get their quotas at once. Lower cpu_cores or count in the spec."
        )


def check_cgroups(hierarchies: cgroups.Hierarchies | None, layout: ClusterLayout, allow_homogeneous: bool) -> bool:
    """True when CPU quotas can be set. Without them refuse, unless a homogeneous cluster is allowed."""
    reason = cgroups.cannot_use_reason(hierarchies, f"{layout.cluster_cgroup}-probe")
    if reason is None:
        return True
    if allow_homogeneous:
        return False
    raise ClusterError(
        f"Cannot give the machines their CPU quotas: {reason}. Without quotas every machine would get the "
        "whole host's CPU and the cluster would not be heterogeneous. Run as root on a host with cgroup v1 "
        "cpu/cpuacct, or pass --allow-homogeneous to start it anyway."
    )


def check_ports_free(layout: ClusterLayout) -> None:
    """Every port of the cluster must be free and outside the ephemeral range; name the port, its use and who holds it."""
    ephemeral = ports.ephemeral_range()
    inside = sorted(p for p in layout.all_ports() if p in ephemeral)
    if inside:
        raise ClusterError(
            f"Port base {layout.port_base} puts ports {inside[0]}-{inside[-1]} in the kernel's ephemeral range "
            f"{ephemeral.start}-{ephemeral.stop - 1}, where any outgoing connection may take them; "
            f"choose a port base below {ephemeral.start - max(layout.all_ports()) + layout.port_base}."
        )
    snapshot = ports.listeners()
    for port, purpose in sorted(layout.all_ports().items()):
        holder = ports.listener_of(port, snapshot)
        if holder is False:
            continue
        who = "an unknown process" if holder is None else processes.describe(holder)
        raise ClusterError(
            f"Port {port} ({purpose}) is in use by {who}. Stop it, or give this cluster another "
            "port base (--port-base, HETSCHED_CLUSTER_PORT_BASE or port_base in the spec)."
        )
