"""Memory as a hard limit on the local cluster (issue #18 part 1): a memory-blind placement fails there, the
memory-aware ones run.

The cluster: the default spec's ``medium`` (0.4 cores) and ``large`` (0.8 cores) machines, each held by its cgroup to
``memory_limit_mb`` (supervisor and workers together), with Storm's ``supervisor.memory.capacity.mb`` (``memory_mb``)
what is left for workers. The topology (topologies/java MemoryTopology): Storm's TestWordSpout into ``--holds``
MemoryBolts that each really hold ``--hold-mb`` MB (allocated and touched), declared to Storm as ``--declared-mb`` of
on-heap memory. Every worker may grow its heap to 2 GB (``-Xmx2048m``), so only the cgroup stops it.

For each scheduler, one cluster up, one submission, ``--run`` seconds watched:
- ``default``: Storm's DefaultScheduler, memory-blind (two workers, executors dealt round-robin);
- ``resource_aware``: Storm's RAS, which fits executors' memory into ``supervisor.memory.capacity.mb``;
- ``plugin``: hetsched (strategy ``fast``), the topology setting ``hetsched.worker.memory.mb`` so that the plugin
  sends the components' and the worker's memory and the plan keeps every machine within its memory.
Printed per scheduler: where the hold bolts ran, each machine's memory (peak, limit, times it hit the limit, OOM
kills in its cgroup), the worker restarts Nimbus saw, tuples the hold bolts executed in the last part of the run,
and the verdict. The CPU profiles sent to the planner are the shipped set's (``spout`` for the spout, ``lowCompute``
for the hold bolts): they steer the CPU part of the plan only and are not predictions for this topology.

Run under the machine-wide lock:
    flock /tmp/hetsched-live.lock .venv/bin/python benchmarks/memory_limit_live.py \
        --out docs/results/measurements/issue18/memory-limit-1.txt
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.planner_service import PlannerService  # noqa: E402
from bench.profiles import load_profile_set  # noqa: E402
from cluster import cgroups  # noqa: E402
from cluster.handle import LocalClusterHandle  # noqa: E402
from cluster.local import LocalCluster  # noqa: E402
from cluster.spec import load_spec  # noqa: E402
from observe.nimbus import connect  # noqa: E402
from planner.client import PlannerClient  # noqa: E402
from topologies.java_submit import JavaSubmitRequest, submit_java  # noqa: E402

PROFILES = "default-cluster"
JAR = REPO / "topologies" / "java" / "target" / "hetsched-java-topologies.jar"
MAIN_CLASS = "org.hetsched.topologies.MemoryTopology"
SCHEDULERS = ("default", "resource_aware", "plugin")
PROFILE_KEYS = {"words": "spout", "hold": "lowCompute"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="Where the raw output goes (also printed).")
    parser.add_argument("--home", type=Path, default=Path("/tmp/s7-memory/cluster"))
    parser.add_argument("--port-base", type=int, default=23300,
                        help="Below the kernel's ephemeral range (32768+), which the local cluster refuses.")
    parser.add_argument("--schedulers", default=",".join(SCHEDULERS))
    parser.add_argument("--holds", type=int, default=4, help="MemoryBolt executors.")
    parser.add_argument("--hold-mb", type=int, default=400, help="MB each MemoryBolt really holds.")
    parser.add_argument("--declared-mb", type=float, default=450, help="MB each MemoryBolt declares (on-heap).")
    parser.add_argument("--worker-mb", type=float, default=256, help="hetsched.worker.memory.mb: one worker JVM, MB.")
    parser.add_argument("--medium", default="768,1024", help="medium's memory_mb,memory_limit_mb.")
    parser.add_argument("--large", default="2048,2560", help="large's memory_mb,memory_limit_mb.")
    parser.add_argument("--run", type=float, default=150.0, help="Seconds each topology is watched after submission.")
    parser.add_argument("--tail", type=float, default=60.0, help="The last seconds in which executed tuples are counted.")
    args = parser.parse_args()

    console = Console(width=170, highlight=False, record=True)  # printed, and kept for --out
    args.out.parent.mkdir(parents=True, exist_ok=True)
    work = args.home.parent / "run"
    work.mkdir(parents=True, exist_ok=True)
    memory = {"medium": [int(x) for x in args.medium.split(",")], "large": [int(x) for x in args.large.split(",")]}
    spec = load_spec()
    spec = spec.model_copy(update={"name": "memory", "machine_types": [
        t.model_copy(update={"memory_mb": memory[t.name][0], "memory_limit_mb": memory[t.name][1], "count": 1})
        for t in spec.machine_types if t.name in memory]})
    profile_set, _ = load_profile_set(PROFILES)
    conf = {
        "topology.workers": 2,
        "topology.worker.childopts": "-Xmx2048m",
        "topology.worker.max.heap.size.mb": 2048.0,
        "topology.component.cpu.pcore.percent": 5.0,
        "topology.acker.executors": 1,
        "hetsched.worker.memory.mb": args.worker_mb,
    }
    console.print(f"memory limit on the local cluster; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; "
                  f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    console.print("machines: " + "; ".join(f"{t.name}: {t.cpu_cores} cores, supervisor.memory.capacity.mb "
                                           f"{t.memory_mb}, cgroup limit {t.memory_limit_mb} MB"
                                           for t in spec.machine_types))
    console.print(f"topology: words x1 -> hold x{args.holds}, each holding {args.hold_mb} MB and declaring "
                  f"{args.declared_mb:g} MB; conf {json.dumps(conf, sort_keys=True)}")
    service = PlannerService(work / "planner.db", work / "planner.log")
    started = time.monotonic()
    verdicts: dict[str, str] = {}
    try:
        url = service.start()
        with PlannerClient(url) as client:
            client.put_profile_set(profile_set)
        for scheduler in args.schedulers.split(","):
            console.rule(f"scheduler {scheduler}")
            verdicts[scheduler] = run_one(console, spec, scheduler, url, conf, args)
    finally:
        service.stop()
        console.rule("summary")
        for scheduler, verdict in verdicts.items():
            console.print(f"{scheduler}: {verdict}")
        console.print(f"took {time.monotonic() - started:.0f} s")
        args.out.write_text(console.export_text())
    return 0


def run_one(console: Console, spec, scheduler: str, url: str, conf: dict, args) -> str:
    """One cluster up with this scheduler, the topology submitted and watched; the verdict in one sentence."""
    cluster = LocalCluster(spec, home=args.home, port_base=args.port_base)
    name = f"memory-{scheduler.replace('_', '-')}"
    try:
        status = cluster.up(scheduler=scheduler, conf={"hetsched.planner.url": url}, timeout_s=420.0,
                            report=lambda line: None)
        if not status.heterogeneous:
            return "the cluster has no cgroups: nothing measured"
        handle = LocalClusterHandle(cluster)
        address = handle.nimbus
        hosts = {m.host: m.id for m in cluster.layout.machines}
        request = JavaSubmitRequest(jar=JAR, main_class=MAIN_CLASS,
                                    args=[name, str(args.holds), str(args.hold_mb), str(args.declared_mb)],
                                    profiles=PROFILES if scheduler == "plugin" else None,
                                    planner_url=url if scheduler == "plugin" else None,
                                    profile_keys=PROFILE_KEYS, conf=conf, metrics=False)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        submitted = submit_java(request, address)
        console.print(f"submitted {submitted.name} ({submitted.topology_id}); executors {submitted.executors}")
        samples = watch(console, cluster, address, submitted.topology_id, hosts, args.run)
        return report(console, cluster, samples, hosts, scheduler, url, name, args, since)
    finally:
        cluster.down()


def watch(console: Console, cluster: LocalCluster, address, topology_id: str, hosts: dict[str, str],
          seconds: float) -> list[dict]:
    """Every 10 s: where the hold executors are, their executed counts and uptimes, each machine's memory."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(10)
        with connect(address) as nimbus:
            counts = nimbus.counts(topology_id)
        holds = [e for e in counts.executors.values() if e.component == "hold"]
        machines = {}
        for m in cluster.layout.machines:
            events = cgroups.memory_events(cluster.hierarchies, m.cgroup)
            rss = sum(_rss(pid) for pid in cgroups.members(cluster.hierarchies, m.cgroup))
            machines[m.id] = {**events, "rss": rss}
        sample = {"t": seconds - (end - time.monotonic()), "status": counts.scheduler_status,
                  "holds": [(hosts.get(e.host, e.host or "-"), e.executed, e.uptime_s) for e in holds],
                  "machines": machines}
        samples.append(sample)
        placed = ", ".join(f"{h}" for h, _, _ in sample["holds"])
        console.print(f"t={sample['t']:5.0f}s holds on ({placed}) executed {sum(x for _, x, _ in sample['holds'])}; "
                      + "; ".join(f"{mid} {v['usage_in_bytes'] / 2**20:.0f} MB used, {v['rss'] / 2**20:.0f} MB rss, "
                                  f"oom_kill {v.get('oom_kill', '?')}" for mid, v in machines.items()))
    return samples


def report(console: Console, cluster: LocalCluster, samples: list[dict], hosts: dict[str, str], scheduler: str,
           url: str, name: str, args, since: str) -> str:
    last = samples[-1]
    table = Table(title=f"{scheduler}: each machine over the run")
    for column in ("machine", "hold bolts (last)", "peak MB", "limit MB", "hit the limit", "OOM kills"):
        table.add_column(column, justify="right")
    per_machine = {}
    for m in cluster.layout.machines:
        v = last["machines"][m.id]
        on = sum(1 for h, _, _ in last["holds"] if h == m.id)
        per_machine[m.id] = v
        table.add_row(m.id, str(on), f"{v['max_usage_in_bytes'] / 2**20:.0f}", f"{v['limit_in_bytes'] / 2**20:.0f}",
                      str(v["failcnt"]), str(v.get("oom_kill", "?")))
    console.print(table)
    tail = [s for s in samples if s["t"] >= last["t"] - args.tail]
    executed = sum(x for _, x, _ in tail[-1]["holds"]) - sum(x for _, x, _ in tail[0]["holds"])
    restarts = sum(1 for a, b in zip(samples, samples[1:])
                   for (ha, _, ua), (hb, _, ub) in zip(a["holds"], b["holds"]) if ub < ua)
    kills = sum(v.get("oom_kill", 0) for v in per_machine.values())
    console.print(f"hold bolts executed {executed} tuples in the last {tail[-1]['t'] - tail[0]['t']:.0f} s; "
                  f"executor uptimes went back {restarts} times (worker restarts); OOM kills {kills}")
    for m in cluster.layout.machines:
        lines = _worker_exits(cluster.layout.log_file(m.id), since)
        if lines:
            console.print(f"{m.id} supervisor log, worker exits ({len(lines)}): " + " | ".join(lines[:3]))
    if scheduler == "plugin":
        console.print(f"Nimbus status: {last['status']}")
        found = re.search(r"plan ([0-9a-f]{32})", last["status"] or "")
        if found:
            with PlannerClient(url) as client:
                console.print(plan_memory(client.get_plan(found.group(1))))
    runs = executed > 0 and kills == 0
    reason = (f"runs: {executed} tuples in the last {args.tail:g} s, no OOM kill" if runs else
              f"fails: {kills} OOM kills in the machines' cgroups, {restarts} worker restarts, "
              f"{executed} tuples in the last {args.tail:g} s")
    console.print(reason)
    return reason


def plan_memory(plan) -> str:
    """What the plugin's plan says about memory: each machine's MB of its capacity, and ``stats.memory``."""
    return (f"the plugin's plan {plan.id} ({plan.strategy}): "
            + ", ".join(f"{m.id} {m.memory_mb:.0f} of {m.memory_capacity_mb:.0f} MB" for m in plan.machines
                        if m.memory_mb is not None and m.memory_capacity_mb is not None)
            + f"; stats.memory {json.dumps(plan.stats.get('memory'))}")


def _rss(pid: int) -> int:
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return 0


_EXIT = re.compile(r"(exit code|exited|killed|Worker Process .* died|Shutting down and clearing)", re.IGNORECASE)


def _worker_exits(log: Path, since: str) -> list[str]:
    """Supervisor log lines since ``since`` (UTC, as the log writes it) that say a worker ended (Storm's reason).

    The cluster's home, and so the supervisors' logs, are kept from one scheduler's run to the next."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line.strip()[-200:] for line in lines if line[:19] >= since and _EXIT.search(line)]


if __name__ == "__main__":
    raise SystemExit(main())
