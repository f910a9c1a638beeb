"""Is a compute bolt's CPU per tuple what it is configured to spend, and how much is multi-lang overhead?

Runs Linear (spout -> low -> mid -> high, one instance each) on a live Storm
cluster twice: once with the configured CPU per tuple, once with 0 ms (so all
that is left is the multi-lang overhead: JSON in and out, the ack). For each
component it measures the CPU time of its Python processes (psutil) against
the tuples Nimbus says it executed, over the same window. Nimbus's counts
move in steps (each worker heartbeat), so both ends of the window are the
executor's own first and last count step (observe.rates), and the CPU is
read at every count sample and interpolated to those moments.

    .venv/bin/python -m benchmarks.topology_cpu_per_tuple [--nimbus host:port] [--window 90]

Prints a table and, with --json, writes the figures to a file.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from observe.nimbus import Nimbus, NimbusAddress, connect
from observe.rates import ComponentRate, CountSample, component_rates, executor_windows, interpolate, unmeasured
from observe.window import sample_window
from topologies import conf as keys
from topologies.catalog import lookup
from topologies.errors import TopologyError
from topologies.locate import nimbus_address
from topologies.measure import roles
from topologies.submission import SubmitRequest, parse_conf
from topologies.submit import kill, submit
from topologies.workers import ProcessGroup, component_groups, worker_jvms

console = Console(width=140)
TOPOLOGY = "linear"
TOLERANCE = 0.10


@dataclass
class ComponentResult:
    component: str
    role: str
    configured_ms: float | None
    tuples: int
    window_s: float
    cpu_ms_per_tuple: float
    processes: int


def wait_until_flowing(nimbus: Nimbus, name: str, timeout_s: float = 300.0) -> str:
    """Block until every component has handled tuples; return the topology id."""
    entry = lookup(TOPOLOGY)
    deadline = time.monotonic() + timeout_s
    with console.status(f"waiting for {name} to run and tuples to reach every component"):
        while time.monotonic() < deadline:
            running = nimbus.find(name)
            if running is not None:
                handled = nimbus.counts(running.id).totals()
                if all(handled.get(c, 0) > 0 for c in entry.component_ids):
                    return running.id
            time.sleep(2.0)
    raise TopologyError(f"{name}: tuples did not reach every component within {timeout_s:.0f} s")


def measure(nimbus: Nimbus, topology_id: str, groups: list[ProcessGroup], window_s: float
            ) -> tuple[list[tuple[ComponentRate, float]], tuple[float, float]]:
    """Each component's rate and the CPU seconds of its Python processes between its executor's first and last
    count step in the window; the worker JVMs' CPU seconds between the spout's steps, and the seconds between them."""
    kinds = roles(lookup(TOPOLOGY))
    by_component = {g.components[0]: g for g in groups}
    component_roles = {c: kinds[c] for c in by_component}
    jvms = worker_jvms(groups)
    python_cpu: dict[str, list[tuple[float, float]]] = {c: [] for c in by_component}
    jvm_cpu: list[tuple[float, float]] = []

    with Progress(TextColumn("measuring"), BarColumn(), TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("window", total=window_s)

        def read_cpu(sample: CountSample, elapsed: float, _length: float) -> None:
            for component, group in by_component.items():
                python_cpu[component].append((sample.at, group.cpu_seconds()))
            jvm_cpu.append((sample.at, sum(sum(p.cpu_times()[:2]) for p in jvms)))
            bar.update(task, completed=elapsed)

        samples = sample_window(nimbus, topology_id, window_s, component_roles, on_sample=read_cpu)
    rates = component_rates(samples, component_roles)
    flat = unmeasured(rates)
    if flat:
        raise TopologyError(f"counts of {', '.join(flat)} did not move twice within {window_s:.0f} s; "
                            "use a longer --window (Nimbus gets stats every executor.metrics.frequency.secs)")
    windows = executor_windows(samples)
    window_of = {w.first.counts.component: w for w in windows.values()}
    if len(window_of) != len(windows):
        raise TopologyError(f"{TOPOLOGY} runs more than one executor of a component; this check needs one each")
    measured = []
    for rate in rates:
        w = window_of[rate.component]
        cpu = python_cpu[rate.component]
        measured.append((rate, interpolate(cpu, w.last.at) - interpolate(cpu, w.first.at)))
    spout = window_of["spout"]
    return measured, (interpolate(jvm_cpu, spout.last.at) - interpolate(jvm_cpu, spout.first.at), spout.seconds)


def run_phase(address: NimbusAddress, name: str, cpu_ms: dict[str, float], rate: float | None,
              warmup_s: float, window_s: float, extra_conf: dict) -> tuple[list[ComponentResult], dict]:
    entry = lookup(TOPOLOGY)
    request = SubmitRequest(
        TOPOLOGY, name=name, workers=1, rate=rate,
        conf={**extra_conf, **{keys.cpu_ms_key(p): ms for p, ms in cpu_ms.items()}},
    )
    result = submit(request, address, force=True)
    console.print(f"submitted {TOPOLOGY} as {name} ({result.topology_id}) with CPU ms per tuple {cpu_ms}", highlight=False)
    try:
        with connect(address) as nimbus:
            topology_id = wait_until_flowing(nimbus, name)
            with console.status(f"warming up for {warmup_s:g} s"):
                time.sleep(warmup_s)
            groups = component_groups(entry, topology_id)
            empty = [g.label for g in groups if not g.processes]
            if empty:
                raise TopologyError(f"found no Python process of {', '.join(empty)} (is the cluster on this machine?)")
            workers = len(worker_jvms(groups))
            measured, (jvm_cpu_s, spout_s) = measure(nimbus, topology_id, groups, window_s)
    finally:
        kill(name, address, wait=True)
    results = []
    processes = {g.components[0]: len(g.processes) for g in groups}
    for rate, cpu_s in measured:
        profile = entry.profiles()[rate.component]
        results.append(ComponentResult(
            component=rate.component,
            role=rate.role,
            configured_ms=cpu_ms.get(profile),
            tuples=rate.tuples,
            window_s=rate.window_s,
            cpu_ms_per_tuple=cpu_s / rate.tuples * 1000 if rate.tuples else float("nan"),
            processes=processes[rate.component],
        ))
    spout = next(r for r, _cpu in measured if r.component == "spout")
    jvm = {"workers": workers, "spout_tuples": spout.tuples,
           "cpu_ms_per_spout_tuple": jvm_cpu_s / spout.tuples * 1000,
           "cores": jvm_cpu_s / spout_s}
    return results, jvm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nimbus", help="host:port (default: $HETSCHED_NIMBUS, else the local cluster's Nimbus)")
    parser.add_argument("--window", type=float, default=90.0, help="seconds measured per phase")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds after tuples flow before measuring")
    parser.add_argument("--rate", type=float, default=None, help="spout tuples/s (default: flow control)")
    for profile, ms in keys.DEFAULT_CPU_MS.items():
        parser.add_argument(f"--{profile.removesuffix('Compute')}-ms", type=float, default=ms, dest=profile,
                            help=f"CPU ms per tuple of {profile} (default {ms})")
    parser.add_argument("--conf", action="append", default=[], help="extra topology config key=value; repeatable")
    parser.add_argument("--name", default="hetsched-cpu-per-tuple")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    configured = {p: getattr(args, p) for p in keys.DEFAULT_CPU_MS}
    try:
        address = nimbus_address(args.nimbus)
        extra = parse_conf(args.conf)
        loaded, jvm_loaded = run_phase(address, args.name, configured, args.rate, args.warmup, args.window, extra)
        bare, jvm_bare = run_phase(address, args.name, {p: 0.0 for p in configured}, args.rate, args.warmup,
                                   args.window, extra)
    except TopologyError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return 1

    bare_ms = {r.component: r.cpu_ms_per_tuple for r in bare}
    table = Table(title="Python CPU per tuple (ms), Linear, one instance each", title_justify="left")
    for column in ("component", "configured", "measured", "measured / configured", "overhead",
                   "overhead share", "overhead at 0 ms", "tuples", "seconds"):
        table.add_column(column, justify="left" if column == "component" else "right")
    verdicts = []
    rows = []
    for r in loaded:
        overhead = r.cpu_ms_per_tuple - (r.configured_ms or 0.0)
        share = overhead / r.cpu_ms_per_tuple if r.cpu_ms_per_tuple else float("nan")
        ratio = r.cpu_ms_per_tuple / r.configured_ms if r.configured_ms else None
        if ratio is not None:
            verdicts.append(abs(ratio - 1) <= TOLERANCE)
        table.add_row(
            r.component,
            f"{r.configured_ms:.2f}" if r.configured_ms is not None else "-",
            f"{r.cpu_ms_per_tuple:.3f}",
            f"{ratio:.3f}" if ratio is not None else "-",
            f"{overhead:.3f}",
            f"{share:.1%}",
            f"{bare_ms[r.component]:.3f}",
            str(r.tuples),
            f"{r.window_s:.1f}",
        )
        rows.append({**asdict(r), "overhead_ms_per_tuple": overhead, "overhead_share": share,
                     "overhead_ms_per_tuple_at_0ms": bare_ms[r.component], "ratio": ratio})
    console.print(table)
    console.print("overhead = measured - configured: the multi-lang cost (JSON in and out, emit, ack) as it is "
                  "with the work; 'at 0 ms' is the same topology with no work per tuple", highlight=False)
    console.print(
        f"worker JVM CPU per spout tuple: {jvm_loaded['cpu_ms_per_spout_tuple']:.3f} ms "
        f"({jvm_loaded['cores']:.3f} cores) in the configured run, {jvm_bare['cpu_ms_per_spout_tuple']:.3f} ms "
        f"({jvm_bare['cores']:.3f} cores) in the 0 ms run; it includes ShellBolt/ShellSpout serialization, "
        "ackers, transfer and idle executors' waiting for all four components",
        highlight=False,
    )
    ok = all(verdicts)
    console.print(f"compute bolts within {TOLERANCE:.0%} of their configured CPU per tuple: {'yes' if ok else 'NO'}",
                  highlight=False)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"components": rows, "overhead_run": [asdict(r) for r in bare],
                                         "jvm": {"configured": jvm_loaded, "zero": jvm_bare},
                                         "within_tolerance": ok, "tolerance": TOLERANCE}, indent=2))
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
