"""Starting and stopping the daemons of one cluster, tracked by pid files.

A pid file holds the pid and the process' start time, so a recycled pid is
never mistaken for a daemon. The start time compared is the one counted from boot
(``since_boot_s``), which a step of the wall clock does not move: the epoch start
time moves with ``btime``, whole seconds, when a virtual machine's clock is set
again, and every daemon would then look stopped. Each daemon leads its own process group; the
workers and Python processes a supervisor starts stay in that group (and in
the supervisor's cgroup), so stopping the group stops them all.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil

_START_TIME_TOLERANCE_S = 0.5


def start(
    command: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    console_file: Path,
    pid_file: Path,
    before_exec: Callable[[], None] | None = None,
) -> psutil.Process:
    """Start a daemon in its own session, stdout/stderr to ``console_file``; ``before_exec`` runs in the child (join a cgroup)."""
    console_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    with console_file.open("ab") as console:
        child = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=before_exec,
        )
    process = psutil.Process(child.pid)
    pid_file.write_text(json.dumps({"pid": child.pid, "create_time": process.create_time(),
                                    "since_boot_s": since_boot_s(child.pid), "command": command[-1]}))
    return process


def since_boot_s(pid: int) -> float:
    """When a process started, in seconds after boot (``/proc/<pid>/stat``'s starttime): no clock step moves it."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def running(pid_file: Path) -> psutil.Process | None:
    """The live process a pid file names, or None (no file, process gone, or pid reused)."""
    try:
        record = json.loads(pid_file.read_text())
        process = psutil.Process(int(record["pid"]))
        if "since_boot_s" in record:
            started, recorded = since_boot_s(process.pid), float(record["since_boot_s"])
        else:  # written before since_boot_s
            started, recorded = process.create_time(), float(record["create_time"])
        if abs(started - recorded) > _START_TIME_TOLERANCE_S:
            return None
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        return None


def process_tree(pid_file: Path) -> set[psutil.Process]:
    """The daemon of a pid file with its descendants and everything in its process group (empty if not running)."""
    process = running(pid_file)
    if process is None:
        return set()
    found = {process}
    try:
        found.update(process.children(recursive=True))
        group = os.getpgid(process.pid)
    except (psutil.Error, ProcessLookupError):
        return found
    if group == process.pid:
        found.update(p for p in psutil.process_iter() if _pgid(p) == group)
    return found


def stop(pid_file: Path, grace_s: float = 10.0) -> list[int]:
    """Stop the daemon of a pid file with its whole process group and descendants; returns the pids signalled."""
    victims = process_tree(pid_file)
    pid_file.unlink(missing_ok=True)
    return terminate(victims, grace_s)


def terminate(processes: Iterable[psutil.Process], grace_s: float = 10.0) -> list[int]:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL what is left; returns the pids signalled."""
    processes = [p for p in processes if p.pid != os.getpid()]
    for p in processes:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(processes, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    return sorted(p.pid for p in processes)


def _pgid(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log file, or a note that it is missing."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} does not exist)"
    return "\n".join(text.splitlines()[-lines:])


def describe(process: psutil.Process) -> str:
    try:
        cmdline = " ".join(process.cmdline())
    except psutil.Error:
        cmdline = "?"
    if len(cmdline) > 120:
        cmdline = cmdline[:117] + "..."
    return f"pid {process.pid} ({cmdline})"
