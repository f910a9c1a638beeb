"""What a tuple that crosses workers costs in CPU, per machine type, on the local cluster.

The topology (topologies/java RemotePairTopology): a paced Java spout ``src`` (a sequence number per tuple, as
Linear's spout emits, unanchored, no ackers) and a no-op ``sink`` bolt fed by a shuffle grouping, so the only work
per tuple is Storm's. Every placement is pinned by a stored plan (``hetsched.plan.id``: the Nimbus plugin places the
executors where the plan says). Three kinds of topology, per machine type t:

- ``alone`` on t: the spout with no subscriber, its slope ``A_t`` (CPU per tuple of emitting to nobody);
- ``local`` on t: spout and sink in one worker, slope ``L_t``;
- ``pair`` X -> Y: the spout on X, the sink in a worker on Y; the slope of X (``S_X``) and of Y (``R_Y``).

So, in CPU per tuple: the sink's own cost with its tuples from its own worker is ``L_t - A_t``; a tuple that
leaves its worker costs its sender's machine ``send_X = S_X - A_X`` beyond its emitting component's own cost, and
its receiver's machine ``recv_Y = R_Y - (L_Y - A_Y)`` beyond what the receiving component costs when the tuple
comes from its own worker. These are the model's ``remote_send`` and ``remote_receive`` (docs/model.md).

Four phases, the topologies of a phase on different machines, running at once: pair small->medium with local on
large; pair medium->large with local on small; pair large->small with local on medium; alone on all three. In each
phase, ``--repeats`` times, every topology's spout rate (a rate file the spout re-reads) steps through 0 and each of
``--rates``; each window reads every machine's cgroup CPU and Nimbus's counts. A machine's slope is the least-squares
line of its CPU (cores) against the tuples per second its component handled (the spout's emits, the sink's
executes) over the windows of one repeat, so fixed costs (the supervisor, the idle worker JVM) drop out. Each
repeat gives one estimate; the table shows the median and range over the repeats, in CPU milliseconds per tuple
(one core's) and in the model's unit, ms of the machine's whole CPU (core ms / the machine's cores).

Run under the machine-wide lock (about 25 minutes with the defaults):
    flock /tmp/hetsched-live.lock .venv/bin/python -m bench.remote_tuple_cost --port-base 24000 \
        --out var/remote-tuples/run-1.txt
The figures go to the ``.json`` next to ``--out``; ``hetsched profiles remote`` (planner/remote_cost.py) turns them
into a profile set's ``remote_send`` / ``remote_receive``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from bench.live import add_run_options, cluster_and_planner, header, recording_console, up_with_plugin
from rich.console import Console
from rich.table import Table

from bench.profiles import load_profile_set
from cluster.handle import LocalClusterHandle
from cluster.local import LocalCluster
from cluster.spec import load_spec
from observe.nimbus import connect
from observe.rates import CountSample, component_rates
from planner.client import PlannerClient
from planner.model import (
    Component,
    EvaluationRequest,
    InstanceAssignment,
    Plan,
    ProfileRef,
    ProfileVersionRef,
    Stream,
    Topology,
)
from planner.profiles import machine_base_load
from planner.storage import Storage
from topologies.java_submit import JavaSubmitRequest, submit_java
from topologies.rate_control import RATE_FILE, write_rate

REPO = Path(__file__).resolve().parents[1]

PROFILES = "default-cluster"
JAR = REPO / "topologies" / "java" / "target" / "hetsched-java-topologies.jar"
MAIN_CLASS = "org.hetsched.topologies.RemotePairTopology"
PROFILE_KEYS = {"src": "spout", "sink": "lowCompute"}
"""Keys the plugin's request needs; the pinned placement is kept whatever they say."""
TYPES = ("small", "medium", "large")
SETTLE_S = 5.0
SAMPLE_S = 0.5


@dataclass(frozen=True)
class Run:
    """One topology of a phase: its kind, and where its spout (and sink) run."""

    kind: str  # alone, local or pair
    src: str  # machine id
    sink: str | None  # machine id; None for alone

    @property
    def name(self) -> str:
        where = self.src if self.sink in (None, self.src) else f"{self.src}-to-{self.sink}"
        return f"rt-{self.kind}-{where}"

    def roles(self) -> dict[str, str]:
        return {"src": "spout"} if self.sink is None else {"src": "spout", "sink": "sink"}


def phases(machine: dict[str, str]) -> list[list[Run]]:
    """The four phases over one machine per type (``machine``: type -> machine id)."""
    s, m, big = (machine[t] for t in TYPES)
    return [
        [Run("pair", s, m), Run("local", big, big)],
        [Run("pair", m, big), Run("local", s, s)],
        [Run("pair", big, s), Run("local", m, m)],
        [Run("alone", s, None), Run("alone", m, None), Run("alone", big, None)],
    ]


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of CPU (cores) against tuples/s: core seconds per tuple."""
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    if np.ptp(x) <= 0:
        raise ValueError("the windows of a repeat did not differ in rate")
    return float(np.polyfit(x, y, 1)[0])


def estimates(windows: list[dict], types: dict[str, str]) -> list[dict[str, dict[str, float]]]:
    """Per repeat: per machine type, the slopes A, L, S, R and the costs send, recv, local (core ms per tuple).

    ``windows``: every window of the run (phase, repeat, run name, machine, rate handled, cores); pure.
    """
    repeats = sorted({w["repeat"] for w in windows})
    out = []
    for k in repeats:
        points: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for w in windows:
            if w["repeat"] == k:
                points.setdefault((w["slot"], w["machine"]), []).append((w["tuples_per_s"], w["cores"]))
        slopes = {key: slope(p) * 1000 for key, p in points.items()}  # core ms per tuple
        per_type = {}
        for t, mid in types.items():
            a = slopes[("alone", mid)]
            loc = slopes[("local", mid)]
            s = slopes[("send", mid)]
            r = slopes[("receive", mid)]
            per_type[t] = {"alone": a, "local": loc, "sender": s, "receiver": r,
                           "sink_local": loc - a, "send": s - a, "recv": r - (loc - a)}
        out.append(per_type)
    return out


def drift_fit(windows: list[dict], types: dict[str, str]) -> dict[str, dict[str, float]]:
    """Per machine type, send, recv and the slopes from one least-squares fit per (slot, machine) over every repeat,
    with a term linear in the window's position in its phase (a machine's idle CPU drifts while its JVMs settle,
    and each repeat steps the rates upward, so a per-repeat line takes part of the drift for cost); pure."""
    slopes: dict[tuple[str, str], float] = {}
    keys = sorted({(w["slot"], w["machine"]) for w in windows})
    for key in keys:
        rows = [w for w in windows if (w["slot"], w["machine"]) == key]
        order = sorted({(w["repeat"], w["rate"]) for w in rows})
        position = {o: i for i, o in enumerate(order)}
        x = np.array([[1.0, position[(w["repeat"], w["rate"])], w["tuples_per_s"]] for w in rows])
        y = np.array([w["cores"] for w in rows])
        slopes[key] = float(np.linalg.lstsq(x, y, rcond=None)[0][2]) * 1000
    out = {}
    for t, mid in types.items():
        a, loc = slopes[("alone", mid)], slopes[("local", mid)]
        s, r = slopes[("send", mid)], slopes[("receive", mid)]
        out[t] = {"alone": a, "local": loc, "sender": s, "receiver": r, "sink_local": loc - a, "send": s - a,
                  "recv": r - (loc - a)}
    return out


def summary(per_repeat: list[dict[str, dict[str, float]]], cores: dict[str, float]) -> dict:
    """Median, min and max over repeats of each figure, in core ms and in ms of the machine's whole CPU."""
    result: dict = {}
    for t in per_repeat[0]:
        result[t] = {}
        for figure in per_repeat[0][t]:
            values = [r[t][figure] for r in per_repeat]
            result[t][figure] = {"median": statistics.median(values), "min": min(values), "max": max(values),
                                 "values": values, "machine_ms_median": statistics.median(values) / cores[t]}
    return result


def pinned_plan(client: PlannerClient, run: Run, cluster, profile_ref: ProfileVersionRef) -> Plan:
    """The run's placement as a plan the plugin can be pointed at (evaluated by the planner, stored as is)."""
    components = [Component(id="src", kind="spout", profile=PROFILE_KEYS["src"])]
    streams = []
    assignments = [InstanceAssignment(component="src", machine=run.src)]
    if run.sink is not None:
        components.append(Component(id="sink", kind="bolt", profile=PROFILE_KEYS["sink"]))
        streams.append(Stream(**{"from": "src", "to": "sink"}))
        assignments.append(InstanceAssignment(component="sink", machine=run.sink))
    topology = Topology(name=run.name, components=components, streams=streams)
    evaluation = client.evaluate(EvaluationRequest(topology=topology, cluster=cluster,
                                                   profiles=ProfileRef(name=profile_ref.name),
                                                   assignments=assignments))
    return Plan(**evaluation.model_dump(exclude={"stats"}), strategy="pinned", profiles=profile_ref,
                stats={"pinned": "bench/remote_tuple_cost.py"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(parser, "Where the printed output goes; figures to .json.", "/tmp/s8-remote/cluster", 24000)
    parser.add_argument("--rates", default="150,400", help="Paced rates, tuples/s (each window also has rate 0).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window", type=float, default=25.0, help="Seconds of each window (Nimbus steps every 10).")
    parser.add_argument("--warmup", type=float, default=20.0, help="Seconds at the highest rate before measuring.")
    parser.add_argument("--phases", default="0,1,2,3", help="Which phases to run (for trying the script).")
    parser.add_argument("--report", type=Path, help="Only analyse the windows of an earlier run's JSON (written to "
                        "--out's .json again, with the figures of this version of the analysis).")
    args = parser.parse_args()
    rates = [float(x) for x in args.rates.split(",")]
    if args.report is not None:
        earlier = json.loads(args.report.read_text())
        console = recording_console()
        console.print(f"re-analysed from {args.report}")
        report(console, earlier["windows"], earlier["machines"], earlier["cores"], args)
        args.out.write_text(console.export_text())
        return 0

    console = recording_console()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    work = args.home.parent / "run"
    (work / "rates").mkdir(parents=True, exist_ok=True)
    spec = load_spec()
    profile_set, _ = load_profile_set(PROFILES)
    machine = {t.name: mid for mid, t in reversed(spec.machine_ids())}  # the first machine of each type
    types = {t: machine[t] for t in TYPES}
    cores = {t.name: t.cpu_cores for t in spec.machine_types}
    console.print(header("remote tuple cost") + f"; machines {json.dumps(types)}; cores "
                  f"{json.dumps(cores)}; rates 0,{args.rates} tuples/s; {args.repeats} repeats of "
                  f"{args.window:g} s windows")
    windows: list[dict] = []
    started = time.monotonic()
    with cluster_and_planner(spec, args.home, args.port_base, work) as (cluster, service):
        url = service.start()
        with PlannerClient(url) as client:
            stored = client.put_profile_set(profile_set)
            ref = ProfileVersionRef(name=stored.name, version=stored.version)
            planner_cluster = spec.planner_cluster(machine_base_load(profile_set))
            storage = Storage(work / "planner.db")
            plans = {run.name: _stored_id(storage.save_plan(pinned_plan(client, run, planner_cluster, ref)))
                     for phase in phases(machine) for run in phase}
            storage.close()
        up_with_plugin(cluster, url, lambda _: None)
        for p in (int(x) for x in args.phases.split(",")):
            phase = phases(machine)[p]
            console.rule(f"phase {p}: " + ", ".join(r.name for r in phase))
            windows += run_phase(console, cluster, url, phase, plans, work, rates, args, p)
    console.print(f"took {time.monotonic() - started:.0f} s")
    report(console, windows, types, cores, args)
    args.out.write_text(console.export_text())
    return 0


def _stored_id(plan: Plan) -> str:
    """The id Storage.save_plan gave the plan (always set; typed optional as a plan made elsewhere has none)."""
    if plan.id is None:
        raise SystemExit(f"the plan of {plan.topology} was stored without an id")
    return plan.id


def run_phase(console: Console, cluster: LocalCluster, url: str, phase: list[Run], plans: dict[str, str],
              work: Path, rates: list[float], args, index: int) -> list[dict]:
    """Submit the phase's topologies, step their rates together, read every window; kill them."""
    address = cluster_address(cluster)
    rate_files = {r.name: work / "rates" / f"{r.name}.json" for r in phase}
    ids: dict[str, str] = {}
    try:
        for run in phase:
            write_rate(rate_files[run.name], rates[-1])
            request = JavaSubmitRequest(
                jar=JAR, main_class=MAIN_CLASS, args=[run.name, "0", "0", "alone" if run.sink is None else "pair"],
                plan_id=plans[run.name], profiles=PROFILES, planner_url=url,
                profile_keys={c: k for c, k in PROFILE_KEYS.items() if c in run.roles()},
                conf={RATE_FILE: str(rate_files[run.name]), "topology.acker.executors": 0}, metrics=False)
            submitted = submit_java(request, address)
            if submitted.topology_id is None:
                raise SystemExit(f"{run.name} was submitted but Nimbus does not list it")
            ids[run.name] = submitted.topology_id
        placed = wait_placed(cluster, address, phase, ids)
        console.print("placed: " + "; ".join(f"{n}: {p}" for n, p in placed.items()))
        time.sleep(args.warmup)
        out = []
        for k in range(args.repeats):
            for rate in [0.0, *rates]:
                for run in phase:
                    write_rate(rate_files[run.name], rate)
                time.sleep(SETTLE_S)
                out += window(console, cluster, address, phase, ids, rate, k, index, args.window)
        return out
    finally:
        with connect(address) as nimbus:
            for run in phase:
                try:
                    nimbus.kill(run.name, wait_s=0)
                except Exception as exc:  # noqa: BLE001 - a topology that never started has nothing to kill
                    console.print(f"kill {run.name}: {exc}")
            for run in phase:
                try:
                    nimbus.wait_gone(run.name, 120.0)
                except Exception as exc:  # noqa: BLE001
                    console.print(f"{run.name} still listed: {exc}")


def cluster_address(cluster: LocalCluster):
    return LocalClusterHandle(cluster).nimbus


def wait_placed(cluster: LocalCluster, address, phase: list[Run], ids: dict[str, str], timeout_s: float = 240.0
                ) -> dict[str, str]:
    """Until every executor runs on the machine its pinned plan names and has handled tuples; where each runs."""
    machine_of_host = {m.host: m.id for m in cluster.layout.machines}
    deadline = time.monotonic() + timeout_s
    with connect(address) as nimbus:
        while True:
            placed, ok = {}, True
            for run in phase:
                counts = nimbus.counts(ids[run.name])
                where = {e.component: machine_of_host.get(e.host, e.host) for e in counts.executors.values()
                         if not e.component.startswith("__")}
                placed[run.name] = ", ".join(f"{c} on {m}" for c, m in sorted(where.items()))
                wanted = {"src": run.src} if run.sink is None else {"src": run.src, "sink": run.sink}
                totals = counts.totals()
                ok &= where == wanted and all(totals.get(c, 0) > 0 for c in wanted)
            if ok:
                return placed
            if time.monotonic() > deadline:
                raise SystemExit(f"the phase's topologies did not run where pinned within {timeout_s:g} s: {placed}")
            time.sleep(2.0)


def window(console: Console, cluster: LocalCluster, address, phase: list[Run], ids: dict[str, str], rate: float,
           repeat: int, index: int, seconds: float) -> list[dict]:
    """One window at one rate: every machine's CPU (cores) and every component's tuples/s."""
    machines = sorted({m for r in phase for m in (r.src, r.sink) if m})
    samples: dict[str, list[CountSample]] = {r.name: [] for r in phase}
    cpu0 = {m: cluster.machine_cpu_seconds(m) for m in machines}
    t0 = time.monotonic()
    with connect(address) as nimbus:
        while time.monotonic() - t0 < seconds:
            for run in phase:
                samples[run.name].append(CountSample(time.monotonic(), nimbus.counts(ids[run.name])))
            time.sleep(SAMPLE_S)
    elapsed = time.monotonic() - t0
    cores = {m: (cluster.machine_cpu_seconds(m) - cpu0[m]) / elapsed for m in machines}
    out: list[dict[str, Any]] = []
    for run in phase:
        handled = {r.component: (r.per_second if r.measured_executors else 0.0)
                   for r in component_rates(samples[run.name], run.roles())}
        if rate > 0 and any(v <= 0 for v in handled.values()):
            raise SystemExit(f"{run.name}: counts did not move twice in a {seconds:g} s window at {rate:g} tuples/s")
        if run.kind == "alone":
            slots = [("alone", run.src, handled["src"])]
        elif run.kind == "local":
            slots = [("local", run.src, handled["src"])]
        elif run.sink is not None:
            slots = [("send", run.src, handled["src"]), ("receive", run.sink, handled["sink"])]
        else:
            raise SystemExit(f"{run.name}: a {run.kind} run needs a sink machine")
        for slot, m, tps in slots:
            out.append({"phase": index, "repeat": repeat, "run": run.name, "slot": slot, "machine": m,
                        "rate": rate, "tuples_per_s": tps, "cores": cores[m], "seconds": elapsed})
    console.print(f"repeat {repeat + 1} rate {rate:g}: " + "; ".join(
        f"{w['run']} {w['slot']} on {w['machine']} {w['tuples_per_s']:.1f} t/s, {w['cores'] * 1000:.1f} core ms/s"
        for w in out))
    return out


def report(console: Console, windows: list[dict], types: dict[str, str], cores: dict[str, float], args) -> None:
    per_repeat = estimates(windows, types)
    figures = summary(per_repeat, cores)
    table = Table(title=f"CPU per tuple, core ms (median [min, max] over {len(per_repeat)} repeats); "
                        "last two columns in the model's unit, ms of the machine's whole CPU (medians)")
    for column in ("type", "cores", "spout alone A", "local pair L", "sink local L-A", "sender S", "receiver R",
                   "send = S-A", "recv = R-(L-A)", "remote_send ms", "remote_receive ms"):
        table.add_column(column, justify="right")

    def cell(f: dict) -> str:
        return f"{f['median']:.4f} [{f['min']:.4f}, {f['max']:.4f}]"

    for t in types:
        f = figures[t]
        table.add_row(t, f"{cores[t]:g}", cell(f["alone"]), cell(f["local"]), cell(f["sink_local"]), cell(f["sender"]),
                      cell(f["receiver"]), cell(f["send"]), cell(f["recv"]), f"{f['send']['machine_ms_median']:.4f}",
                      f"{f['recv']['machine_ms_median']:.4f}")
    console.print(table)
    drift = drift_fit(windows, types)
    table = Table(title="the same, one fit over all repeats with a linear drift term (core ms per tuple)")
    for column in ("type", "spout alone A", "local pair L", "sink local L-A", "sender S", "receiver R", "send = S-A",
                   "recv = R-(L-A)"):
        table.add_column(column, justify="right")
    for t in types:
        f = drift[t]
        table.add_row(t, *(f"{f[k]:.4f}" for k in ("alone", "local", "sink_local", "sender", "receiver", "send",
                                                    "recv")))
    console.print(table)
    data = {"script": "bench/remote_tuple_cost.py", "args": {k: str(v) for k, v in vars(args).items()},
            "machines": types, "cores": cores, "windows": windows, "per_repeat": per_repeat, "summary": figures,
            "drift_fit": drift,
            "remote_cost": {t: {"remote_send": figures[t]["send"]["machine_ms_median"] / 1000,
                                "remote_receive": figures[t]["recv"]["machine_ms_median"] / 1000} for t in types}}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
