"""Build, submit, or run in Storm's local mode one of the held-out topologies (benchmarks/heldout/README.md).

    python -m benchmarks.heldout.run build
    python -m benchmarks.heldout.run submit heldout-java [-- more hetsched submit options]
    python -m benchmarks.heldout.run submit heldout-shell [-- more hetsched submit options]
    python -m benchmarks.heldout.run submit heldout-streamparse [--double-after 600] [--nimbus H:P] [...]
    python -m benchmarks.heldout.run local heldout-streamparse --seconds 30 --conf heldout.double.after.secs=15

heldout-java and heldout-shell go through ``hetsched submit`` itself (an app jar, a Flux file): this script only
spells out the command. heldout-streamparse is not in the catalog, which is all ``hetsched submit TOPOLOGY`` can
name, so it is submitted here with the library ``hetsched submit`` uses: the same topology conf
(:func:`topologies.submission.topology_conf`, metrics hook included), uploaded and submitted to Nimbus the same
way, with a jar of its own components. It does not set ``hetsched.topology`` (the catalog name), so every
``hetsched`` command treats it as it treats an app jar's topology: by its name and the graph Nimbus keeps.

``local`` runs a topology for a few seconds in Storm's local mode, in this process's JVM child (no cluster), and
reads the spouts' own acked/failed counts from its log.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from topologies import conf as keys
from topologies.catalog import CatalogEntry
from topologies.errors import TopologyError
from topologies.submission import (
    MULTILANG_COMMAND,
    Submission,
    SubmitRequest,
    check_multilang_command,
    check_options,
    parse_conf,
    topology_conf,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
POM = HERE / "java" / "pom.xml"
JAR = HERE / "java" / "target" / "hetsched-heldout.jar"
FLUX_FILE = HERE / "shell" / "heldout-shell.yaml"
JAVA_MAIN = "org.hetsched.heldout.ClickstreamTopology"
LOCAL_LOG4J = HERE / "local-log4j2.xml"

NAMES = ("heldout-java", "heldout-shell", "heldout-streamparse")
STREAMPARSE_SPARE_TASKS = 2.0
"""heldout-streamparse's default tasks per executor: twice, so a rebalance can double any component (each task of
a Python component is its own subprocess, which is why ``hetsched submit`` defaults to 1)."""
SENSOR_SOURCES = ("benchmarks/__init__.py", "benchmarks/heldout/__init__.py", "benchmarks/heldout/sensor_components.py")
"""What heldout-streamparse's workers import: its components and the two packages above them."""
_FIXED_TIME = (2024, 1, 1, 0, 0, 0)


def sensor_entry() -> CatalogEntry:
    """heldout-streamparse as the submit library describes a topology (not registered in the catalog)."""
    from benchmarks.heldout.sensor_topology import NAME, HeldoutStreamparse

    return CatalogEntry(NAME, HeldoutStreamparse, "readings -> gate -> window -> drift (held out)")


# --- building -----------------------------------------------------------------------------------------------------

def build_java(quiet: bool = True) -> Path:
    """Build the heldout jar (heldout-java's classes and heldout-shell's scripts) with Maven, tests included."""
    if shutil.which("mvn") is None:
        raise TopologyError("Maven is not installed (no 'mvn' on PATH): apt-get install maven, or make setup")
    result = subprocess.run(["mvn", *(["-q"] if quiet else []), "-f", str(POM), "package"], cwd=ROOT)
    if result.returncode != 0 or not JAR.is_file():
        raise TopologyError(f"mvn -f {POM.relative_to(ROOT)} package failed (exit code {result.returncode})")
    return JAR


def sensor_jar(destination: Path) -> Path:
    """heldout-streamparse's topology jar: its Python sources under ``resources/``, where a supervisor extracts
    them and ``streamparse_run`` imports them from."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(destination, "w") as zf:
        for name, data in [("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nCreated-By: hetsched\r\n\r\n")] + [
            (f"resources/{source}", (ROOT / source).read_bytes()) for source in SENSOR_SOURCES
        ]:
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return destination


# --- heldout-streamparse: what goes to Nimbus -------------------------------------------------------------------

def streamparse_submission(request: SubmitRequest, multilang_command: str | None = None) -> Submission:
    """The Thrift topology and conf of heldout-streamparse, as :func:`topologies.submission.build_submission` makes
    them for a catalog topology, without the catalog name (``hetsched.topology``). Pure."""
    entry = sensor_entry()
    unknown = sorted(set(request.parallelism) - set(entry.component_ids))
    if unknown:
        raise TopologyError(f"{entry.name} has no component {', '.join(unknown)}; its components are "
                            f"{', '.join(entry.component_ids)}")
    check_options(request.workers, request.sample_rate, request.name)
    conf = topology_conf(request, entry)
    conf.pop(keys.TOPOLOGY, None)
    spare = float(conf[keys.SPARE_TASKS])
    if not math.isfinite(spare) or spare < 1:
        raise TopologyError(f"spare tasks must be a factor of at least 1, not {spare}")
    run = check_multilang_command(MULTILANG_COMMAND if multilang_command is None else multilang_command)
    topology = copy.deepcopy(entry.topology.thrift_topology)
    parallelism: dict[str, int] = {}
    tasks: dict[str, int] = {}
    for component_id, spec in {**topology.spouts, **topology.bolts}.items():
        common = spec.common
        common.parallelism_hint = request.parallelism.get(component_id, common.parallelism_hint)
        parallelism[component_id] = common.parallelism_hint
        tasks[component_id] = math.ceil(common.parallelism_hint * spare)
        component_conf = json.loads(common.json_conf or "{}")
        component_conf[keys.TASKS] = tasks[component_id]
        common.json_conf = json.dumps(component_conf)
        component = spec.spout_object if component_id in topology.spouts else spec.bolt_object
        component.shell.execution_command = run
    name = (request.name or entry.name).strip()
    return Submission(name=name, entry=entry, topology=topology, conf=conf, parallelism=parallelism, tasks=tasks)


def submit_streamparse(request: SubmitRequest, nimbus: str | None, force: bool,
                       multilang_command: str | None) -> tuple[Submission, str | None]:
    """Upload heldout-streamparse's jar and submit it; return the submission and the topology id."""
    from observe.nimbus import connect
    from topologies.locate import nimbus_address
    from topologies.submit import KILL_TIMEOUT_S

    submission = streamparse_submission(request, multilang_command)
    address = nimbus_address(nimbus)
    with connect(address) as client:
        running = client.find(submission.name)
        if running is not None and not force:
            raise TopologyError(f"a topology named {submission.name!r} is already running ({running.id}, "
                                f"{running.status}); use --force to kill and replace it, or --name to run another copy")
        if running is not None:
            client.kill(submission.name, wait_s=0)
            client.wait_gone(submission.name, KILL_TIMEOUT_S)
        with tempfile.TemporaryDirectory(prefix="heldout-jar-") as tmp:
            location = client.upload_jar(sensor_jar(Path(tmp) / "heldout-streamparse.jar"))
        client.submit(submission.name, location, submission.conf, submission.topology)
        started = client.find(submission.name)
    return submission, started.id if started else None


# --- heldout-java and heldout-shell: hetsched submit ------------------------------------------------------------

def hetsched_submit_command(name: str, extra: list[str]) -> list[str]:
    """The ``hetsched submit`` line for heldout-java or heldout-shell, with ``extra`` options appended."""
    hetsched = str(Path(sys.prefix) / "bin" / "hetsched") if (Path(sys.prefix) / "bin" / "hetsched").exists() else "hetsched"
    if name == "heldout-java":
        return [hetsched, "submit", "--jar", str(JAR), "--class", JAVA_MAIN, *extra, "--", name]
    if name == "heldout-shell":
        return [hetsched, "submit", "--flux", str(FLUX_FILE), "--jar", str(JAR), *extra]
    raise TopologyError(f"{name} is not submitted through hetsched submit")


# --- local mode ---------------------------------------------------------------------------------------------------

def sensor_flux_document(conf: dict[str, Any], command: str = MULTILANG_COMMAND) -> dict[str, Any]:
    """heldout-streamparse as a Flux document of shell components (the same scripts, groupings, executors and
    tasks): Storm's local mode runs a JVM-built topology, so this is how the Python components run locally."""
    submission = streamparse_submission(SubmitRequest(topology="heldout-streamparse", conf=conf, metrics=False),
                                        command)
    topology = submission.topology
    document: dict[str, Any] = {"name": submission.name, "config": submission.conf, "spouts": [], "bolts": [],
                                "streams": []}
    for component_id, spec in {**topology.spouts, **topology.bolts}.items():
        is_spout = component_id in topology.spouts
        shell = (spec.spout_object if is_spout else spec.bolt_object).shell
        fields = list(spec.common.streams["default"].output_fields) if "default" in spec.common.streams else []
        wrapper = "spouts.FluxShellSpout" if is_spout else "bolts.FluxShellBolt"
        document["spouts" if is_spout else "bolts"].append({
            "id": component_id,
            "className": f"org.apache.storm.flux.wrappers.{wrapper}",
            # Flux cannot type an empty list: a sink (no output fields) gets the command alone
            "constructorArgs": [[shell.execution_command, shell.script]] + ([fields] if fields else []),
            "parallelism": submission.parallelism[component_id],
            "numTasks": submission.tasks[component_id],
        })
        for stream_id, grouping in spec.common.inputs.items():
            flux_grouping: dict[str, Any] = {"type": "SHUFFLE"}
            if grouping.fields is not None:
                flux_grouping = {"type": "FIELDS", "args": list(grouping.fields)}
            document["streams"].append({"from": stream_id.componentId, "to": component_id, "grouping": flux_grouping})
    return document


@dataclass
class LocalCounts:
    """What a local run's spouts and drift bolt logged: the last count line of each task, summed."""

    emitted: int = 0
    acked: int = 0
    failed: int = 0
    tasks: int = 0
    drift_lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.acked > 0 and self.failed == 0


_SPOUT_LINE = re.compile(r"heldout spout (\S+): emitted (\d+) acked (\d+) failed (\d+)")


def local_counts(log_text: str) -> LocalCounts:
    """The spouts' count lines (``heldout spout C:T: emitted E acked A failed F ...``), last per task, summed."""
    last: dict[str, tuple[int, int, int]] = {}
    drift: list[str] = []
    for line in log_text.splitlines():
        match = _SPOUT_LINE.search(line)
        if match:
            last[match.group(1)] = (int(match.group(2)), int(match.group(3)), int(match.group(4)))
        elif "heldout drift" in line:
            drift.append(line[line.index("heldout drift"):])
    return LocalCounts(emitted=sum(v[0] for v in last.values()), acked=sum(v[1] for v in last.values()),
                       failed=sum(v[2] for v in last.values()), tasks=len(last), drift_lines=drift)


def run_local(name: str, seconds: int, conf: dict[str, Any], workdir: Path) -> LocalCounts:
    """Run the topology ``seconds`` in Storm's local mode (org.apache.storm.LocalCluster) and read its log."""
    from cluster.storm_home import ensure_flux, ensure_storm_home

    home = ensure_storm_home(quiet=True)
    log_file = workdir / f"{name}.log"
    if name == "heldout-streamparse":
        jar = sensor_jar(workdir / "heldout-streamparse.jar")
        flux_file = workdir / "heldout-streamparse.yaml"
        flux_file.write_text(yaml.safe_dump(sensor_flux_document(conf), sort_keys=False))
        main, args, class_path = "org.apache.storm.flux.Flux", ["--local", "--no-splash", str(flux_file)], ensure_flux()
    elif name == "heldout-shell":
        jar = JAR
        flux_file = workdir / "heldout-shell.yaml"
        document = yaml.safe_load(FLUX_FILE.read_text())
        document["config"] = {**document.get("config", {}), **conf}
        flux_file.write_text(yaml.safe_dump(document, sort_keys=False))
        main, args, class_path = "org.apache.storm.flux.Flux", ["--local", "--no-splash", str(flux_file)], ensure_flux()
    elif name == "heldout-java":
        if conf:
            raise TopologyError("heldout-java takes no --conf in local mode (its main class sets its own conf)")
        jar, main, args, class_path = JAR, JAVA_MAIN, [name], []
    else:
        raise TopologyError(f"unknown held-out topology {name!r}; known: {', '.join(NAMES)}")
    if not jar.is_file():
        raise TopologyError(f"{jar} does not exist: build it first (python -m benchmarks.heldout.run build)")
    # the topology jar first: local mode extracts resources/ from the first jar on the class path that has one
    cp = os.pathsep.join([str(jar), str(home / "lib" / "*"), *map(str, class_path)])
    env = {**os.environ, "PATH": f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = ["java", f"-Dstorm.jar={jar}", f"-Dstorm.local.sleeptime={seconds}", f"-Dheldout.local.log={log_file}",
               f"-Dlog4j.configurationFile={LOCAL_LOG4J}", "-cp", cp, "org.apache.storm.LocalCluster", main, *args]
    result = subprocess.run(command, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=seconds + 90)
    text = log_file.read_text(errors="replace") if log_file.exists() else ""
    if result.returncode != 0:
        raise TopologyError(f"local mode exited with code {result.returncode}; log {log_file}; last output:\n"
                            + "\n".join(result.stdout.splitlines()[-8:]))
    return local_counts(text)


def local_nimbus_command(port: int, seconds: int, jar: Path, log_file: Path) -> list[str]:
    """A private in-process Storm (local/LocalNimbus.java) whose Nimbus answers on ``port``; ``jar`` first on its
    class path, where its local-mode workers find the topology's classes and ``resources/``."""
    from cluster.storm_home import ensure_storm_home

    home = ensure_storm_home(quiet=True)
    plugin = ROOT / "storm-plugin" / "target" / "hetsched-storm-plugin.jar"  # the metrics hook, where built
    cp = os.pathsep.join([str(jar), str(home / "lib" / "*"), *([str(plugin)] if plugin.is_file() else [])])
    return ["java", f"-Dheldout.local.log={log_file}", f"-Dlog4j.configurationFile={LOCAL_LOG4J}", "-cp", cp,
            str(HERE / "local" / "LocalNimbus.java"), str(port), str(seconds)]


# --- command line ---------------------------------------------------------------------------------------------------

def _streamparse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.heldout.run submit heldout-streamparse",
                                     description="Submit heldout-streamparse with the conf hetsched submit writes.")
    parser.add_argument("--name")
    parser.add_argument("--nimbus", help="Nimbus host:port (default: $HETSCHED_NIMBUS, else the local cluster's)")
    parser.add_argument("--conf", "-c", action="append", default=[], help="topology conf key=value, repeatable")
    parser.add_argument("--double-after", type=float, help="heldout.double.after.secs: seconds after launch from "
                        "which the drift bolt's work per tuple doubles")
    parser.add_argument("--double-at", type=float, help="heldout.double.at: epoch seconds from which it doubles")
    parser.add_argument("--parallelism", "-p", help="executors per component: comp=N,comp=N")
    parser.add_argument("--spare-tasks", type=float, default=STREAMPARSE_SPARE_TASKS)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--profiles", help="hetsched.profiles (none: Storm's scheduler or the plugin places it evenly)")
    parser.add_argument("--planner", default=os.environ.get("HETSCHED_PLANNER_URL"))
    parser.add_argument("--metrics-url")
    parser.add_argument("--no-metrics", action="store_true")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--dry-run", action="store_true", help="print the components and the topology conf; "
                        "reach no Nimbus")
    parser.add_argument("--multilang-command", default=os.environ.get("HETSCHED_MULTILANG_COMMAND", MULTILANG_COMMAND))
    return parser.parse_args(argv)


def _submit(name: str, extra: list[str]) -> int:
    if name != "heldout-streamparse":
        if not JAR.is_file():
            build_java()
        command = hetsched_submit_command(name, extra)
        print("$ " + " ".join(command), flush=True)
        return subprocess.run(command, cwd=ROOT).returncode
    from topologies.plans import check_profile_set
    from topologies.submission import parse_parallelism

    args = _streamparse_args(extra)
    conf = parse_conf(args.conf)
    if args.double_after is not None:
        conf["heldout.double.after.secs"] = args.double_after
    if args.double_at is not None:
        conf["heldout.double.at"] = args.double_at
    if args.profiles and args.planner:
        check_profile_set(args.profiles, args.planner)
    request = SubmitRequest(topology="heldout-streamparse", name=args.name, parallelism=parse_parallelism(args.parallelism),
                            workers=args.workers, conf=conf, profiles=args.profiles, spare_tasks=args.spare_tasks,
                            metrics=not args.no_metrics, metrics_url=None if args.no_metrics else (args.metrics_url or args.planner))
    if args.dry_run:
        submission, topology_id = streamparse_submission(request, args.multilang_command), None
    else:
        submission, topology_id = submit_streamparse(request, args.nimbus, args.force, args.multilang_command)
    for component, n in submission.parallelism.items():
        print(f"{component:10} {submission.conf[keys.COMPONENT_PROFILES][component]:20} executors {n}, "
              f"tasks {submission.tasks[component]}")
    if args.dry_run:
        print(json.dumps(submission.conf, indent=2, sort_keys=True))
        return 0
    print(f"submitted {submission.name} as {topology_id or '(not listed yet)'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.heldout.run", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the heldout jar (mvn package, with its JUnit tests)")
    submit = sub.add_parser("submit", help="submit one topology; options after it go to hetsched submit "
                            "(heldout-java, heldout-shell) or to this script (heldout-streamparse: --help)")
    submit.add_argument("name", choices=NAMES)
    local = sub.add_parser("local", help="run one topology in Storm's local mode and report its acked tuples")
    local.add_argument("name", choices=NAMES)
    local.add_argument("--seconds", type=int, default=30)
    local.add_argument("--conf", "-c", action="append", default=[])
    nimbus = sub.add_parser("local-nimbus", help="a private in-process Storm whose Nimbus answers on --port for "
                            "--seconds, to try the real submit commands on (not the shared cluster)")
    nimbus.add_argument("--port", type=int, default=16997)
    nimbus.add_argument("--seconds", type=int, default=60)
    nimbus.add_argument("--for", dest="topology", choices=NAMES, default="heldout-java",
                        help="whose jar goes first on its class path (local mode takes classes and resources/ from it)")
    nimbus.add_argument("--log", type=Path, default=Path(tempfile.gettempdir()) / "heldout-local-nimbus.log")
    args, extra = parser.parse_known_args(argv)
    if extra and extra[0] == "--":
        extra = extra[1:]
    try:
        if args.command == "build":
            print(build_java())
            return 0
        if args.command == "submit":
            return _submit(args.name, extra)
        if args.command == "local-nimbus":
            jar = sensor_jar(args.log.with_suffix(".jar")) if args.topology == "heldout-streamparse" else JAR
            env = {**os.environ, "PATH": f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
            print(f"log: {args.log}", flush=True)
            return subprocess.run(local_nimbus_command(args.port, args.seconds, jar, args.log), env=env).returncode
        if extra:
            parser.error(f"unknown arguments {' '.join(extra)}")
        with tempfile.TemporaryDirectory(prefix="heldout-local-") as tmp:
            counts = run_local(args.name, args.seconds, parse_conf(args.conf), Path(tmp))
        print(f"{args.name}: {counts.tasks} spout tasks, emitted {counts.emitted}, acked {counts.acked}, "
              f"failed {counts.failed} in {args.seconds} s of local mode")
        for line in counts.drift_lines:
            print("  " + line)
        return 0 if counts.ok else 1
    except TopologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
