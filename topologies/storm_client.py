"""Storm's client JVM, as ``storm jar`` runs it: a main class that builds a topology and submits it to Nimbus.

``bin/storm`` is not on Maven Central, so this does what its ``jar`` command does: ``java`` with Storm's client
class path (``lib-worker/``, ``extlib/``, then the app's jars), ``-Dstorm.jar=<jar>`` (the jar StormSubmitter
uploads), ``-Dstorm.options=<conf>`` (settings StormSubmitter puts over the topology's own conf) and a storm.yaml
naming the cluster's Nimbus (``-Dstorm.conf.file``). The command line and the reading of its failures are pure;
:func:`run_client` does the I/O.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

from observe.nimbus import NimbusAddress
from topologies.errors import TopologyError
from topologies.leader_relay import leader_route

CLIENT_TIMEOUT_S = 300.0
"""How long a main class may take to build and submit its topology (Storm's own uploads take seconds)."""
STDERR_TAIL_LINES = 8
CLIENT_HEAP_MB = 256


@dataclass(frozen=True)
class ClientRun:
    """One client JVM: what it runs, with what, against which Nimbus."""

    main_class: str
    args: list[str]
    storm_jar: Path
    """``-Dstorm.jar``: the jar StormSubmitter uploads, whose classes the workers load."""
    class_path: list[Path]
    """The app's jars, after Storm's client class path (the storm jar is added when missing)."""
    options: dict[str, Any] = field(default_factory=dict)
    """``storm.options``: StormSubmitter puts these over the conf the main class submits."""


@dataclass(frozen=True)
class ClientResult:
    stdout: str
    stderr: str


def storm_options(conf: dict[str, Any]) -> str:
    """``storm.options`` as ``bin/storm`` writes it: ``key=<JSON value>`` pairs, each URL-encoded, joined by commas.

    Storm decodes each pair and parses its value as JSON (a string otherwise), so maps and lists keep their shape.
    """
    return ",".join(quote_plus(f"{key}={json.dumps(value, separators=(',', ':'))}") for key, value in conf.items())


def client_storm_yaml(address: NimbusAddress) -> dict[str, Any]:
    """The client's storm.yaml: this cluster's Nimbus, as the streamparse path names it (``--nimbus`` or the local cluster)."""
    return {"nimbus.seeds": address.hosts, "nimbus.thrift.port": address.port}


def client_class_path(storm_home: Path, run: ClientRun) -> str:
    """Storm's client class path (what ``storm jar`` uses: ``lib-worker/``, not the daemons' ``lib/``), then the app's jars."""
    jars = list(run.class_path)
    if run.storm_jar not in jars:
        jars.append(run.storm_jar)
    entries = [f"{storm_home / 'lib-worker'}/*", f"{storm_home / 'extlib'}/*"] + [str(p) for p in jars]
    return os.pathsep.join(entries)


def java_command(run: ClientRun, storm_home: Path, conf_file: Path, java: str = "java",
                 jvm_options: Sequence[str] = ()) -> list[str]:
    return [
        java,
        "-client",
        *jvm_options,
        f"-Xmx{CLIENT_HEAP_MB}m",
        "-Djava.net.preferIPv4Stack=true",
        f"-Dstorm.home={storm_home}",
        f"-Dstorm.conf.file={conf_file}",
        f"-Dstorm.jar={run.storm_jar}",
        f"-Dstorm.options={storm_options(run.options)}",
        "-cp",
        client_class_path(storm_home, run),
        run.main_class,
        *run.args,
    ]


def check_jar(path: Path, what: str = "the jar") -> Path:
    """An existing jar (a zip file), else a sentence naming the fault."""
    if not path.exists():
        raise TopologyError(f"{what} {path} does not exist")
    if not path.is_file() or not zipfile.is_zipfile(path):
        raise TopologyError(f"{what} {path} is not a jar (not a zip file)")
    return path


def class_entry(class_name: str) -> str:
    return class_name.replace(".", "/") + ".class"


def jar_with_class(class_name: str, jars: list[Path]) -> Path | None:
    """The first of ``jars`` that holds the class, else None."""
    entry = class_entry(class_name)
    for jar in jars:
        try:
            with zipfile.ZipFile(jar) as zf:
                if entry in zf.namelist():
                    return jar
        except (OSError, zipfile.BadZipFile):
            continue
    return None


def check_main_class(class_name: str, run: ClientRun, storm_home: Path) -> None:
    """Refuse a main class that is in none of the app's jars nor on Storm's client class path."""
    if not re.fullmatch(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*", class_name):
        raise TopologyError(f"--class {class_name!r} is not a Java class name (e.g. com.example.Main)")
    storm_jars = sorted((storm_home / "lib-worker").glob("*.jar")) + sorted((storm_home / "extlib").glob("*.jar"))
    if jar_with_class(class_name, list(run.class_path) + [run.storm_jar] + storm_jars) is None:
        app_jars = ", ".join(str(p) for p in dict.fromkeys(list(run.class_path) + [run.storm_jar]))
        raise TopologyError(f"class {class_name} is not in {app_jars} nor on Storm's client class path")


_NIMBUS_DOWN = (
    "NimbusLeaderNotFoundException", "Could not find leader nimbus", "Connection refused",
    "TTransportException: java.net.ConnectException",
)


def client_failure(run: ClientRun, address: NimbusAddress, returncode: int, stderr: str, stdout: str = "") -> TopologyError:
    """One sentence for a client JVM that failed: the class missing, Nimbus not answering, or its own error.

    The sentence ends with the last lines of its stderr (of its stdout where stderr is empty: log lines).
    """
    lines = [line for line in (stderr if stderr.strip() else stdout).splitlines() if line.strip()]
    tail = "\n".join(lines[-STDERR_TAIL_LINES:])
    stderr = stderr + "\n" + stdout
    if re.search(rf"Could not find or load main class {re.escape(run.main_class)}\b", stderr) or re.search(
            rf"ClassNotFoundException: {re.escape(run.main_class)}\s*$", stderr, re.MULTILINE):
        return TopologyError(f"class {run.main_class} could not be loaded from {run.storm_jar} and Storm's client class path")
    if any(marker in stderr for marker in _NIMBUS_DOWN):
        return TopologyError(f"Nimbus at {address} (from {address.source}) did not answer the client JVM of "
                             f"{run.main_class}; is the cluster up? Its last lines of stderr:\n{tail}")
    taken = re.search(r"Topology name (\S+) is either not allowed or it already exists", stderr)
    if taken:
        return TopologyError(f"{run.main_class} submitted topology {taken.group(1)!r}, whose name is already running "
                             "on the cluster (or not allowed); kill it first with `hetsched kill NAME --wait`")
    already = re.search(r"AlreadyAliveException\S*:?\s*(.*)", stderr)
    if already or "already alive" in stderr.lower():
        return TopologyError(f"{run.main_class} submitted a topology whose name is already running "
                             f"({(already.group(1) if already else '').strip() or 'AlreadyAliveException'}); kill it first")
    missing = re.search(r"(?:ClassNotFoundException|NoClassDefFoundError):? ([\w$./]+)", stderr)
    if missing:
        name = missing.group(1).replace("/", ".")
        return TopologyError(f"{run.main_class} exited with code {returncode}: class {name} is on no class path "
                             f"(add the jar that holds it with --jar); its last lines of stderr:\n{tail}")
    return TopologyError(f"{run.main_class} exited with code {returncode}; its last lines of stderr:\n{tail or '(none)'}")


def run_client(run: ClientRun, address: NimbusAddress, storm_home: Path, timeout_s: float = CLIENT_TIMEOUT_S,
               java: str = "java", leader: str | None = None) -> ClientResult:
    """Run the client JVM to its end; a failure is a :class:`TopologyError` naming it.

    ``leader`` is the leader Nimbus's ``host:port`` as Nimbus names it, where known: when this host
    cannot reach it as named, the JVM is taken there through ``address`` (:mod:`topologies.leader_relay`).
    """
    if shutil.which(java) is None and not Path(java).is_file():
        raise TopologyError("Java is not installed (no 'java' on PATH); Storm's client needs Java 17")
    if not (storm_home / "lib-worker").is_dir():
        raise TopologyError(f"{storm_home} is not a Storm distribution (no lib-worker/); run `make setup`")
    with tempfile.TemporaryDirectory(prefix="hetsched-client-") as tmp:
        conf_file = Path(tmp) / "storm.yaml"
        conf_file.write_text(json.dumps(client_storm_yaml(address)) + "\n")  # JSON is YAML
        with leader_route(address, leader) as jvm_options:
            command = java_command(run, storm_home, conf_file, java, jvm_options)
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                      stdin=subprocess.DEVNULL, check=False)  # in the caller's folder, as `storm jar`
            except subprocess.TimeoutExpired:
                raise TopologyError(f"{run.main_class} did not finish within {timeout_s:g} s (killed)") from None
    if done.returncode != 0:
        raise client_failure(run, address, done.returncode, done.stderr, done.stdout)
    return ClientResult(done.stdout, done.stderr)
