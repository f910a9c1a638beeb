"""A smoke topology that proves the cluster runs work on every machine.

Built only from what any Storm 2.8 worker has: ``TestWordSpout`` and
``TestWordCounter`` from storm-client (``org.apache.storm.testing``, made
from their class names by the worker), and one Python bolt run through
``streamparse_run`` as a multi-lang ShellBolt, so a check can also find the
Python processes in the machines' cgroups. The jar holds just that Python
file. ``topology.workers`` equal to the machine count makes Storm's even
scheduler put one worker on each machine.
"""
from __future__ import annotations

import io
import time
import zipfile
from dataclasses import dataclass

import psutil
from streamparse.thrift import storm_thrift as st

from cluster.errors import ClusterError
from cluster.handle import WORKER_CLASS, LocalClusterHandle
from cluster.local import LocalCluster
from observe.nimbus import Nimbus

SMOKE_NAME = "hetsched-smoke"

_PYTHON_BOLT = '''\
from streamparse import Bolt


class Echo(Bolt):
    """Passes each word on: enough to keep one Python process busy per instance."""

    outputs = ["word"]

    def process(self, tup):
        self.emit([tup.values[0]])
'''


@dataclass(frozen=True)
class SmokeRun:
    topology_id: str
    executors: list[tuple[str, str, int]]
    """``(component, host, port)`` of every executor."""


def topology(parallelism: int) -> st.StormTopology:
    """words (Java spout) -> echo (Python bolt) -> count (Java bolt, fields grouping on word)."""

    def common(inputs: dict, fields: list[str]) -> st.ComponentCommon:
        return st.ComponentCommon(
            inputs=inputs,
            streams={"default": st.StreamInfo(output_fields=fields, direct=False)},
            parallelism_hint=parallelism,
        )

    def java(class_name: str) -> st.ComponentObject:
        return st.ComponentObject(java_object=st.JavaObject(full_class_name=class_name, args_list=[]))

    words = st.GlobalStreamId(componentId="words", streamId="default")
    echoed = st.GlobalStreamId(componentId="echo", streamId="default")
    return st.StormTopology(
        spouts={"words": st.SpoutSpec(spout_object=java("org.apache.storm.testing.TestWordSpout"), common=common({}, ["word"]))},
        bolts={
            "echo": st.Bolt(
                bolt_object=st.ComponentObject(shell=st.ShellComponent(execution_command="streamparse_run", script="smoke_bolt.Echo")),
                common=common({words: st.Grouping(shuffle=st.NullStruct())}, ["word"]),
            ),
            "count": st.Bolt(
                bolt_object=java("org.apache.storm.testing.TestGlobalCount"),
                common=common({echoed: st.Grouping(fields=["word"])}, ["count"]),
            ),
        },
        state_spouts={},
    )


def jar_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
        jar.writestr("resources/smoke_bolt.py", _PYTHON_BOLT)
    return buffer.getvalue()


def submit(
    cluster: LocalCluster, name: str = SMOKE_NAME, workers: int | None = None, parallelism: int | None = None,
    conf: dict | None = None,
) -> str:
    """Upload the jar and submit (``conf``: extra topology settings); returns the topology id."""
    machines = len(cluster.layout.machines)
    conf = {"topology.workers": workers or machines, "topology.debug": False, **(conf or {})}
    with Nimbus(cluster.nimbus_address) as nimbus:
        location = nimbus.upload_bytes(jar_bytes(), "the smoke jar")
        nimbus.submit(name, location, conf, topology(parallelism or machines))
        running = nimbus.find(name)
    if running is None:
        raise ClusterError(f"Topology {name!r} is not running on cluster {cluster.layout.name!r}.")
    return running.id


def wait_until_running(cluster: LocalCluster, topology_id: str, timeout_s: float = 300.0) -> SmokeRun:
    """Wait until every executor is placed and every machine that got a worker runs its Python processes."""
    deadline = time.monotonic() + timeout_s
    executors: list[tuple[str, str, int]] = []
    with Nimbus(cluster.nimbus_address) as nimbus:
        while time.monotonic() < deadline:
            counts = nimbus.counts(topology_id)
            executors = [(e.component, e.host, e.port) for e in counts.executors.values()]
            echo_hosts = {host for component, host, _port in executors if component == "echo"}
            if counts.placed and echo_hosts <= _hosts_running_python(cluster):
                return SmokeRun(topology_id=topology_id, executors=executors)
            time.sleep(2.0)
    raise ClusterError(f"Topology {topology_id} did not run all its executors within {timeout_s:.0f} s: {executors}")


def kill(cluster: LocalCluster, name: str = SMOKE_NAME, wait_s: int = 0) -> None:
    with Nimbus(cluster.nimbus_address) as nimbus:
        nimbus.kill(name, wait_s)


def processes_by_machine(cluster: LocalCluster) -> dict[str, dict[str, list[int]]]:
    """Per machine, the pids of its worker JVMs and of its Python (streamparse_run) processes."""
    handle = LocalClusterHandle(cluster)
    found: dict[str, dict[str, list[int]]] = {}
    for m in cluster.layout.machines:
        kinds: dict[str, list[int]] = found.setdefault(m.id, {"workers": [], "python": []})
        for pid in handle.processes(m.id):
            try:
                cmdline = " ".join(psutil.Process(pid).cmdline())
            except psutil.Error:
                continue
            if WORKER_CLASS in cmdline:
                kinds["workers"].append(pid)
            elif "streamparse_run" in cmdline:
                kinds["python"].append(pid)
    return found


def _hosts_running_python(cluster: LocalCluster) -> set[str]:
    by_machine = processes_by_machine(cluster)
    return {cluster.layout.machine(m).host for m, kinds in by_machine.items() if kinds["python"]}
