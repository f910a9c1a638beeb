"""The workers' bind-address shim on a Storm cluster started by hand, as docs/operations/security.md tells an operator.

Issue 35 ("nothing listens beyond what it must, on any cluster"): the doc's section "The workers' Netty servers on
your cluster", done step by step on a one-host cluster that ``hetsched cluster up`` has nothing to do with:

1. a network interface of its own (``--interface``, a ``dummy`` link, else a bridge without ports where the kernel
   has no dummy driver) holding one address (``--address``), so nothing leaves the host;
2. the shim built with the doc's ``cc`` command (only its ``-o`` in this run's home);
3. a storm.yaml of its own (``STORM_CONF_DIR``): ZooKeeper, Nimbus, the supervisor's Thrift port and two slots from
   ``--port-base``, ``storm.local.dir`` in the home, the supervisor named by the address (``storm.local.hostname``);
4. Storm's own daemons started by hand, each under ``nice -n 19``: ``storm dev-zookeeper``, ``storm nimbus`` and
   ``storm supervisor``, the supervisor with ``LD_PRELOAD`` of the shim and ``HETSCHED_BIND_ADDRESS=<interface name>``.
   ZooKeeper and Nimbus get the shim too, only so that they do not listen on every address of this host (the doc
   does not ask for it). Storm's scripts are ``bin/storm`` of the Storm home, or ``--storm-bin``; the home assembled
   from Maven Central has no ``bin/``, and without one each daemon is started with the ``java`` command line
   Storm 2.8.3's ``bin/storm`` runs (``storm.py``'s ``exec_storm_class``), which it says;
5. Linear submitted with ``hetsched submit --nimbus`` (two workers, 5 tuples/s, no metrics), then the doc's check,
   ``ss -ltnpH '( sport >= :<first slot> and sport <= :<last slot> )'``: every worker on the address;
6. the same supervisor restarted without the shim: its running workers keep the address they bound (Storm's workers
   outlive their supervisor) until ``storm kill_workers`` makes it start them again, on every address.

It prints the ss lines of each step and exits 0 when the workers listened on the address with the shim and on every
address without it, 1 when not, 2 when something it needs is missing (one sentence). Processes (each started in a
session of its own and stopped by its process group, workers included), the interface and the home are removed at
the end, also on a failure or Ctrl-C.

    sudo .venv/bin/python -m benchmarks.hand_started_bind [--home /tmp/hand-bind] [--port-base 29200] \\
        [--interface hsbind0] [--address 10.77.0.5] [--storm-bin DIR] [--keep-home]
"""
from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cluster.storm_home import STORM_VERSION, storm_home_path

REPO = Path(__file__).resolve().parents[1]
SHIM_SOURCE = "cluster/native/bind_address.c"
"""Relative to the checkout's root, as in the doc's command."""
MARKER = ".hand-started-bind"
HOME_LINKS = ("lib", "lib-worker", "lib-webapp", "extlib", "extlib-daemon", "log4j2", "public")
WILDCARD_HOSTS = frozenset({"*", "0.0.0.0", "[::]"})
DAEMON_CLASSES = {
    "dev-zookeeper": ("dev_zookeeper", "org.apache.storm.command.DevZookeeper", "dev-zookeeper.log", None),
    "nimbus": ("nimbus", "org.apache.storm.daemon.nimbus.Nimbus", "nimbus.log", "nimbus.childopts"),
    "supervisor": ("supervisor", "org.apache.storm.daemon.supervisor.Supervisor", "supervisor.log", "supervisor.childopts"),
}
"""``storm.py`` 2.8.3: the daemon's name, main class, log file and childopts key, for starting it without the scripts."""
CHILDOPTS = {"nimbus.childopts": "-Xmx256m", "supervisor.childopts": "-Xmx256m", "worker.childopts": "-Xmx384m"}
JAVA_LIBRARY_PATH = "/usr/local/lib:/opt/local/lib:/usr/lib:/usr/lib64"
"""Storm 2.8.3's default ``java.library.path`` (conf/defaults.yaml), what ``storm.py`` passes."""
WAIT_S = 300.0
CONNECTED = "All connections are ready"
"""A worker's log line once it reaches every other worker of its topology (WorkerState, Storm 2.8.3)."""


class Missing(Exception):
    """Something the run needs is not there: one sentence, exit status 2."""


class Failed(Exception):
    """A step of the run did not happen: exit status 1."""


@dataclass(frozen=True)
class Ports:
    zookeeper: int
    nimbus: int
    supervisor: int
    slots: tuple[int, ...]

    @classmethod
    def from_base(cls, base: int) -> Ports:
        return cls(base, base + 1, base + 2, (base + 10, base + 11))

    @property
    def low(self) -> int:
        return self.zookeeper

    @property
    def high(self) -> int:
        return self.slots[-1]


@dataclass(frozen=True)
class Listener:
    line: str
    host: str
    port: int
    pid: int | None


def listeners(low: int, high: int) -> list[Listener]:
    """``ss -ltnpH`` for the ports low..high, each line with its local host, port and process."""
    text = subprocess.run(ss_command(low, high), capture_output=True, text=True, check=True).stdout
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        host, _, port = fields[3].rpartition(":")
        pid = None
        if "pid=" in line:
            pid = int(line.split("pid=", 1)[1].split(",", 1)[0])
        found.append(Listener(line.rstrip(), host, int(port), pid))
    return sorted(found, key=lambda item: item.port)


def ss_command(low: int, high: int) -> list[str]:
    return ["ss", "-ltnpH", f"( sport >= :{low} and sport <= :{high} )"]


def on_address(listener: Listener, address: str) -> bool:
    """Bound to the address: ``10.77.0.5:port``, or ``[::ffff:10.77.0.5]:port`` for Java's dual-stack socket."""
    return listener.host in (address, f"[::ffff:{address}]")


@dataclass
class Run:
    home: Path
    storm_home: Path
    storm_bin: Path | None
    interface: str
    address: str
    ports: Ports
    keep_home: bool = False
    sessions: list[subprocess.Popen[bytes]] = field(default_factory=list)
    labels: dict[int, str] = field(default_factory=dict)
    interface_made: bool = False
    home_made: bool = False

    # --- setting up -------------------------------------------------------------------------------------------

    def make_home(self) -> None:
        if self.home.exists():
            if not (self.home / MARKER).is_file():
                raise Missing(f"{self.home} exists and is not a home of this tool (no {MARKER}): give another --home.")
            shutil.rmtree(self.home)
        self.home.mkdir(parents=True)
        self.home_made = True
        (self.home / MARKER).write_text("benchmarks.hand_started_bind\n")
        for folder in ("conf", "logs", "console"):
            (self.home / folder).mkdir()
        if self.storm_bin is not None and self.storm_bin.resolve() != (self.storm_home / "bin").resolve():
            # storm.py finds its STORM_HOME as the folder above its own real path: a home of links and a copy of bin/.
            composed = self.home / "storm-home"
            (composed / "bin").mkdir(parents=True)
            for name in HOME_LINKS:
                if (self.storm_home / name).exists():
                    (composed / name).symlink_to(self.storm_home / name)
            for script in ("storm", "storm.py"):
                shutil.copy2(self.storm_bin / script, composed / "bin" / script)
                (composed / "bin" / script).chmod(0o755)  # as in the distribution (a copy from git may have lost it)
            self.storm_home, self.storm_bin = composed, composed / "bin"
        (self.home / "conf" / "storm.yaml").write_text(self.storm_yaml())

    def storm_yaml(self) -> str:
        p, home = self.ports, self.home
        lines = [
            f'storm.zookeeper.servers: ["{self.address}"]',
            f"storm.zookeeper.port: {p.zookeeper}",
            f'dev.zookeeper.path: "{home / "dev-zookeeper"}"',
            f'nimbus.seeds: ["{self.address}"]',
            f"nimbus.thrift.port: {p.nimbus}",
            f"supervisor.thrift.port: {p.supervisor}",
            f"supervisor.slots.ports: [{', '.join(map(str, p.slots))}]",
            f'storm.local.dir: "{home / "storm-local"}"',
            f'storm.local.hostname: "{self.address}"',
            f'storm.log.dir: "{home / "logs"}"',
        ] + [f'{key}: "{value}"' for key, value in CHILDOPTS.items()]
        return "\n".join(lines) + "\n"

    def make_interface(self) -> str:
        if subprocess.run(["ip", "link", "show", self.interface], capture_output=True).returncode == 0:
            raise Missing(f"the interface {self.interface} exists already (a run stopped with SIGKILL? "
                          f"`ip link del {self.interface}`), or give another --interface.")
        held = subprocess.run(["ip", "-o", "addr", "show", "to", self.address], capture_output=True, text=True).stdout
        if held.strip():
            raise Missing(f"{self.address} is already an address of this host ({held.split()[1]}): give another --address.")
        kind = "dummy"
        made = subprocess.run(["ip", "link", "add", self.interface, "type", "dummy"], capture_output=True, text=True)
        if made.returncode != 0:
            kind = "bridge (no dummy driver here: a bridge without ports, which carries nothing off the host)"
            made = subprocess.run(["ip", "link", "add", self.interface, "type", "bridge"], capture_output=True, text=True)
        if made.returncode != 0:
            raise Missing(f"`ip link add {self.interface}` failed: {made.stderr.strip()}.")
        self.interface_made = True
        for command in (["ip", "addr", "add", f"{self.address}/32", "dev", self.interface],
                        ["ip", "link", "set", self.interface, "up"]):
            subprocess.run(command, check=True, capture_output=True)
        return kind

    def build_shim(self) -> Path:
        library = self.home / "hetsched-bind-address.so"
        command = ["cc", "-shared", "-fPIC", "-O2", "-o", str(library), SHIM_SOURCE, "-ldl"]
        say(f"$ (cd {REPO} && {shlex.join(command)})")
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            raise Failed(f"cc could not build the shim: {done.stderr.strip()}")
        return library

    # --- Storm's daemons ------------------------------------------------------------------------------------------

    def environment(self, shim: Path | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "HETSCHED_BIND_ADDRESS")}
        env["STORM_CONF_DIR"] = str(self.home / "conf")
        if shim is not None:
            env["LD_PRELOAD"] = str(shim)
            env["HETSCHED_BIND_ADDRESS"] = self.interface
        return env

    def storm_command(self, command: str) -> list[str]:
        """``bin/storm COMMAND``, or without the scripts the java command line storm.py 2.8.3 runs for it."""
        if self.storm_bin is not None:
            return [str(self.storm_bin / "storm"), command]
        home, conf = self.storm_home, self.home / "conf"
        class_path = os.pathsep.join([f"{home}/*", f"{home}/lib/*", f"{home}/extlib/*", f"{home}/extlib-daemon/*", str(conf)])
        if command == "kill_workers":
            name, klass, jvm, extra = "", "org.apache.storm.command.KillWorkers", "-client", []
        else:
            name, klass, log_file, childopts = DAEMON_CLASSES[command]
            jvm = "-server"
            extra = shlex.split(CHILDOPTS[childopts]) if childopts else []
            extra += ([] if command == "dev-zookeeper" else ["-Djava.deserialization.disabled=true"])
            extra += [f"-Dlogfile.name={log_file}", f"-Dlog4j.configurationFile={home / 'log4j2' / 'cluster.xml'}"]
        return ["java", jvm, f"-Ddaemon.name={name}", "-Dstorm.options=", f"-Dstorm.home={home}",
                f"-Dstorm.log.dir={self.home / 'logs'}", f"-Djava.library.path={JAVA_LIBRARY_PATH}", "-Dstorm.conf.file=",
                "-cp", class_path, *extra, klass]

    def start(self, command: str, shim: Path | None, label: str) -> subprocess.Popen[bytes]:
        argv = ["nice", "-n", "19", *self.storm_command(command)]
        env = self.environment(shim)
        shown = f"LD_PRELOAD={shim} HETSCHED_BIND_ADDRESS={self.interface} " if shim else ""
        say(f"$ STORM_CONF_DIR={self.home / 'conf'} {shown}nice -n 19 {'storm ' + command if self.storm_bin else shlex.join(argv[3:])}")
        with (self.home / "console" / f"{label}.out").open("wb") as out:
            process = subprocess.Popen(argv, env=env, cwd=self.home, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        self.sessions.append(process)
        self.labels[process.pid] = label
        return process

    def run_once(self, command: str, label: str, timeout_s: float = WAIT_S) -> None:
        process = self.start(command, None, label)
        try:
            code = process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise Failed(f"`storm {command}` did not end within {timeout_s:.0f} s; see {self.home / 'console' / label}.out") from None
        if code != 0:
            raise Failed(f"`storm {command}` exited with {code}: {tail(self.home / 'console' / f'{label}.out')}")

    def wait_for(self, what: str, ready: Callable[[list[Listener]], bool], watched: list[subprocess.Popen[bytes]],
                 timeout_s: float = WAIT_S) -> list[Listener]:
        t0 = time.monotonic()
        while True:
            now = listeners(self.ports.low, self.ports.high)
            if ready(now):
                say(f"  {what}: {time.monotonic() - t0:.0f} s")
                return now
            for process in watched:
                if process.poll() is not None:
                    label = self.labels[process.pid]
                    raise Failed(f"{what}: {label} exited with {process.returncode}: {tail(self.log_of(label))}")
            if time.monotonic() - t0 > timeout_s:
                raise Failed(f"{what}: not within {timeout_s:.0f} s. Listening now:\n" + "\n".join(x.line for x in now))
            time.sleep(2.0)

    def wait_connected(self, slots: set[int], timeout_s: float = WAIT_S) -> None:
        """Every worker on ``slots`` has reached the others where they listen (its worker.log says so)."""
        t0 = time.monotonic()
        while True:
            ready = {int(log.parent.name) for log in (self.home / "logs" / "workers-artifacts").glob("*/*/worker.log")
                     if int(log.parent.name) in slots and CONNECTED in log.read_text(errors="replace")}
            if ready == slots:
                say(f"  the workers reach each other at {self.address} (worker.log: {CONNECTED}): {time.monotonic() - t0:.0f} s")
                return
            if time.monotonic() - t0 > timeout_s:
                raise Failed(f"the workers on {sorted(slots - ready)} did not connect to the others within {timeout_s:.0f} s")
            time.sleep(2.0)

    def log_of(self, label: str) -> Path:
        """The daemon's own log (storm.log.dir), else what it printed."""
        for name, (_daemon, _klass, log_file, _opts) in DAEMON_CLASSES.items():
            if label.startswith(name) and (self.home / "logs" / log_file).is_file():
                return self.home / "logs" / log_file
        return self.home / "console" / f"{label}.out"

    def hetsched(self, *args: str) -> str:
        command = [str(Path(sys.prefix) / "bin" / "hetsched"), *args, "--nimbus", f"{self.address}:{self.ports.nimbus}"]
        say(f"$ nice -n 19 hetsched {shlex.join(command[1:])}")
        done = subprocess.run(["nice", "-n", "19", *command], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "COLUMNS": "120"}, timeout=WAIT_S)
        if done.returncode != 0:
            raise Failed(f"hetsched {args[0]} failed ({done.returncode}): {(done.stdout + done.stderr).strip()}")
        return done.stdout.rstrip()

    # --- tearing down ---------------------------------------------------------------------------------------------

    def ours(self, pid: int) -> bool:
        """A process of this run: its command line or working folder names the home."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            return False
        return str(self.home) in cmdline or cwd.startswith(str(self.home))

    def members(self, group: int) -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[2]) == group and self.ours(int(entry.name)):
                found.append(int(entry.name))
        return found

    def stop_all(self) -> list[str]:
        notes = []
        groups = [p.pid for p in self.sessions]
        for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
            for group in groups:
                for pid in self.members(group):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(self.members(g) for g in groups):
                time.sleep(0.5)
        for process in self.sessions:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                notes.append(f"process {process.pid} did not end")
        left = [pid for g in groups for pid in self.members(g)]
        if left:
            notes.append(f"processes still running: {left}")
        return notes

    def clean_up(self) -> None:
        notes = self.stop_all()
        if self.interface_made:
            done = subprocess.run(["ip", "link", "del", self.interface], capture_output=True, text=True)
            if done.returncode != 0:
                notes.append(f"`ip link del {self.interface}`: {done.stderr.strip()}")
        if self.home_made and not self.keep_home:
            shutil.rmtree(self.home, ignore_errors=True)
        still = listeners(self.ports.low, self.ports.high)
        if still:
            notes.append("still listening: " + "; ".join(x.line for x in still))
        summary = [f"{len(self.sessions)} process groups stopped"]
        if self.interface_made:
            summary.append(f"{self.interface} removed")
        if self.home_made:
            summary.append(f"home kept: {self.home}" if self.keep_home else f"{self.home} removed")
        summary.append(f"nothing listens on {self.ports.low}-{self.ports.high}")
        say("clean-up: " + ("; ".join(notes) if notes else ", ".join(summary)))


def say(text: str) -> None:
    print(text, flush=True)


def tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


def show(title: str, found: list[Listener], ports: Ports) -> list[Listener]:
    """The doc's check (the slots), then the cluster's other listeners; the slots' lines."""
    low, high = ports.slots[0], ports.slots[-1]
    say(f"\n{title}\n$ {shlex.join(ss_command(low, high))}")
    slot_lines = [x for x in found if low <= x.port <= high]
    for x in slot_lines:
        say(x.line)
    say(f"(the daemons, ports {ports.low}-{low - 1}:)")
    for x in found:
        if x.port < low:
            say(x.line)
    return slot_lines


def preflight(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The Storm home and Storm's scripts (None: start the java command lines), or Missing in one sentence."""
    if not sys.platform.startswith("linux"):
        raise Missing("this needs Linux (LD_PRELOAD, ip, ss).")
    if os.geteuid() != 0:
        raise Missing(f"run it as root: it creates the network interface {args.interface} (`ip link add`).")
    for tool, why in (("cc", "the doc's step 1 builds the shim with it (a C compiler and glibc's headers: apt-get install gcc libc6-dev)"),
                      ("ip", "it creates the interface with it (apt-get install iproute2)"),
                      ("ss", "the doc's check is an ss command (apt-get install iproute2)"),
                      ("java", "Storm 2.8 runs on Java 17 (apt-get install openjdk-17-jdk-headless)"),
                      ("nice", "every process starts under nice -n 19")):
        if shutil.which(tool) is None:
            raise Missing(f"no `{tool}` on PATH: {why}.")
    for program in ("hetsched", "streamparse_run"):
        if not (Path(sys.prefix) / "bin" / program).is_file():
            raise Missing(f"no {program} in {sys.prefix}/bin: run this with the project's virtualenv (.venv/bin/python).")
    storm_home = storm_home_path()
    if not (storm_home / "lib" / f"storm-core-{STORM_VERSION}.jar").is_file() or not (storm_home / "lib-worker").is_dir():
        raise Missing(f"no Storm {STORM_VERSION} home at {storm_home}: assemble it with `.venv/bin/python -m cluster.storm_home` "
                      "(or set HETSCHED_STORM_HOME to a Storm distribution).")
    storm_bin = args.storm_bin or (storm_home / "bin")
    if not ((storm_bin / "storm").is_file() and (storm_bin / "storm.py").is_file()):
        if args.storm_bin is not None:
            raise Missing(f"{args.storm_bin} has no Storm scripts (storm and storm.py of Storm {STORM_VERSION}'s bin/).")
        storm_bin = None
    try:
        address = ipaddress.IPv4Address(args.address)
    except ValueError:
        raise Missing(f"--address {args.address} is not an IPv4 address.") from None
    if address.is_loopback or address.is_unspecified:
        raise Missing(f"--address {args.address} must be an address the interface holds, not loopback or 0.0.0.0.")
    ports = Ports.from_base(args.port_base)
    busy = listeners(ports.low, ports.high)
    if busy:
        raise Missing(f"ports {ports.low}-{ports.high} are not free ({busy[0].line.split()[3]} listens): give another --port-base.")
    return storm_home, storm_bin


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/hand-bind"), help="This run's folder, removed at the end.")
    parser.add_argument("--port-base", type=int, default=29200, help="ZooKeeper BASE, Nimbus +1, supervisor +2, slots +10, +11.")
    parser.add_argument("--interface", default="hsbind0", help="The interface to create; HETSCHED_BIND_ADDRESS names it.")
    parser.add_argument("--address", default="10.77.0.5", help="Its one IPv4 address (/32), the supervisor's storm.local.hostname.")
    parser.add_argument("--storm-bin", type=Path, default=None,
                        help="A folder holding Storm 2.8.3's bin/storm and bin/storm.py (default: the Storm home's bin/).")
    parser.add_argument("--keep-home", action="store_true", help="Keep the home (logs, storm.yaml) for reading.")
    args = parser.parse_args()
    try:
        storm_home, storm_bin = preflight(args)
    except Missing as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    run = Run(home=args.home.resolve(), storm_home=storm_home, storm_bin=storm_bin, interface=args.interface,
              address=args.address, ports=Ports.from_base(args.port_base), keep_home=args.keep_home)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return checked(run)
    except Missing as missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    except Failed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    finally:
        run.clean_up()


def checked(run: Run) -> int:
    p = run.ports
    say(f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}; Storm home {run.storm_home}; "
        + (f"Storm's scripts {run.storm_bin}" if run.storm_bin else
           "no bin/storm in it (the home assembled from Maven Central has none): each daemon starts with the java "
           "command line Storm 2.8.3's bin/storm runs"))
    run.make_home()
    kind = run.make_interface()
    say(f"interface {run.interface}: {kind}, {run.address}/32")
    say(f"storm.yaml ({run.home / 'conf'}):\n" + "".join(f"  {line}\n" for line in run.storm_yaml().splitlines()).rstrip())
    shim = run.build_shim()

    zookeeper = run.start("dev-zookeeper", shim, "dev-zookeeper")
    run.wait_for(f"ZooKeeper listens on {p.zookeeper}", lambda ls: any(x.port == p.zookeeper for x in ls), [zookeeper])
    nimbus = run.start("nimbus", shim, "nimbus")
    run.wait_for(f"Nimbus listens on {p.nimbus}", lambda ls: any(x.port == p.nimbus for x in ls), [zookeeper, nimbus])
    supervisor = run.start("supervisor", shim, "supervisor")
    daemons = [zookeeper, nimbus]
    run.wait_for(f"the supervisor listens on {p.supervisor}", lambda ls: any(x.port == p.supervisor for x in ls),
                 daemons + [supervisor])
    say(run.hetsched("submit", "linear", "--workers", "2", "--rate", "5", "--no-metrics",
                     "--multilang-command", str(Path(sys.prefix) / "bin" / "streamparse_run")))

    def all_slots(ls: list[Listener]) -> bool:
        return {x.port for x in ls} >= set(p.slots)

    with_shim = run.wait_for("both workers listen", all_slots, daemons + [supervisor])
    run.wait_connected(set(p.slots))
    say(run.hetsched("topologies"))
    shimmed = show(f"with the shim (LD_PRELOAD, HETSCHED_BIND_ADDRESS={run.interface}):", with_shim, p)
    ok_with = len(shimmed) == len(p.slots) and all(on_address(x, run.address) for x in shimmed)
    say(f"the doc's check: {'every worker on' if ok_with else 'NOT every worker on'} {run.address}")

    say("\nthe supervisor restarted without LD_PRELOAD and HETSCHED_BIND_ADDRESS:")
    old_workers = {x.pid for x in shimmed}
    supervisor.send_signal(signal.SIGTERM)
    try:
        supervisor.wait(60)
    except subprocess.TimeoutExpired:
        raise Failed("the supervisor did not stop within 60 s of SIGTERM") from None
    plain = run.start("supervisor", None, "supervisor-without-shim")
    kept = run.wait_for(f"the supervisor listens on {p.supervisor}", lambda ls: any(x.port == p.supervisor for x in ls),
                        daemons + [plain])
    still = show("its workers from before still run, where they bound:", kept, p)
    say(f"  {sum(x.pid in old_workers and on_address(x, run.address) for x in still)} of {len(p.slots)} "
        f"workers still on {run.address}; `storm kill_workers` on the host makes the supervisor start them again:")
    run.run_once("kill_workers", "kill-workers")
    without = run.wait_for("the supervisor started both workers again",
                           lambda ls: all_slots(ls) and not {x.pid for x in ls if x.port in p.slots} & old_workers,
                           daemons + [plain])
    unshimmed = show("without the shim:", without, p)
    ok_without = len(unshimmed) == len(p.slots) and all(x.host in WILDCARD_HOSTS for x in unshimmed)
    say(f"the doc's check: {'every worker on every address' if ok_without else 'NOT every worker on every address'}")
    return 0 if ok_with and ok_without else 1


if __name__ == "__main__":
    sys.exit(main())
