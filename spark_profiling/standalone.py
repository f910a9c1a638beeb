"""A Spark standalone cluster on loopback from the pyspark package: one master and N workers.

``hetsched aggregate --master spark://127.0.0.1:PORT`` runs against it the way it would against a
real cluster (the driver here, executors in the workers' JVMs). The daemons are pyspark's own
``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``; nothing is installed.
Used by the tests (a session-scoped fixture) and by benchmarks/standalone_vs_local.py.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from spark_profiling.errors import ProfilingError

HOST = "127.0.0.1"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_ports(base: int, count: int, limit: int = 1000) -> list[int]:
    """``count`` ports free on loopback from ``base`` on (the caller's port range)."""
    found = [p for p in range(base, base + limit) if _free(p)][:count]
    if len(found) < count:
        raise ProfilingError(f"fewer than {count} free ports from {base} to {base + limit - 1} on {HOST}.")
    return found


@dataclass
class StandaloneCluster:
    """A running master and its workers; :meth:`stop` ends every process it started (and only those)."""

    workdir: Path
    workers: int = 2
    cores_per_worker: int = 1
    memory_per_worker: str = "1g"
    port_base: int = 30700
    processes: list[subprocess.Popen] = field(default_factory=list)
    master_port: int = 0
    ui_port: int = 0

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    def _env(self) -> dict[str, str]:
        home = spark_home()
        return {
            **os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "SPARK_LOG_DIR": str(self.workdir / "logs"),
            "SPARK_WORKER_DIR": str(self.workdir / "work"), "SPARK_NO_DAEMONIZE": "1",
        }

    def _daemon(self, name: str, *args: str) -> None:
        log = (self.workdir / f"{name}.log").open("ab")
        self.processes.append(subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args], env=self._env(), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        ))

    def start(self, timeout_s: float = 120.0) -> "StandaloneCluster":
        self.workdir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(self.port_base, 2 + 2 * self.workers)
        self.master_port, self.ui_port = ports[0], ports[1]
        self._daemon("master", "org.apache.spark.deploy.master.Master", "--host", HOST,
                     "--port", str(self.master_port), "--webui-port", str(self.ui_port))
        for i in range(self.workers):
            port, ui = ports[2 + 2 * i], ports[3 + 2 * i]
            self._daemon(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--port", str(port),
                         "--webui-port", str(ui), "--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker,
                         "--work-dir", str(self.workdir / f"work-{i}"), self.url)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.alive_workers() >= self.workers:
                return self
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(1.0)
        self.stop()
        raise ProfilingError(f"the Spark standalone cluster did not get {self.workers} workers up in {timeout_s:g} s "
                             f"(logs in {self.workdir}).")

    def alive_workers(self) -> int:
        """Workers the master reports ALIVE (its web UI's JSON), 0 while it is not answering."""
        try:
            state = httpx.get(f"http://{HOST}:{self.ui_port}/json/", timeout=2.0).json()
        except (httpx.HTTPError, ValueError):
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def stop(self) -> None:
        """Workers first, then the master; SIGTERM, then SIGKILL after 15 s. Executors die with their worker's group."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
        self.processes.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
