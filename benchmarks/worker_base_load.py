"""What a second topology's worker costs a machine: machine CPU with no, one and two Linears (issue #16).

The profile set's machine base load (supervisor and one idle worker JVM, docs/profiling.md) is
taken off each machine's capacity once. This measures whether a second topology's worker on the
same machine costs it again: the supervisors alone, then one copy of Linear, then two, each
placed by the plugin as a tenant and paced at a low rate, so the work of their tuples is small.
Per machine and phase it prints the measured CPU, the ledger's loads ("work": MET + slope * R,
plus each tenant's worker base load where the planner charges it), the overhead (measured less
work) and the workers running there; compare each copy's measured increment with its predicted one.

Run under the machine-wide lock:
    flock /tmp/hetsched-live.lock .venv/bin/python benchmarks/worker_base_load.py --port-base 31000 \
        --out docs/results/measurements/issue16/worker-base-load-1.txt
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from live_common import add_run_options, cluster_and_planner, header, recording_console, up_with_plugin, written_out  # noqa: E402
from rich.table import Table  # noqa: E402

from bench import measure  # noqa: E402
from observe.nimbus import connect  # noqa: E402
from planner.client import PlannerClient  # noqa: E402
from topologies.submission import SubmitRequest  # noqa: E402
from topologies.submit import submit  # noqa: E402
from two_linears_ledger import Copy, cluster_machines, kill_all, linear_setup, plan_alone, wait_running  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(parser, "Where the raw output goes (also printed).", "/tmp/s7-tenants/wbl/cluster", 31000)
    parser.add_argument("--rate", type=float, default=2.0, help="Each copy's paced input rate, tuples/s.")
    parser.add_argument("--warmup", type=float, default=20.0, help="Seconds before each phase's window.")
    parser.add_argument("--window", type=float, default=40.0, help="Seconds of each phase's window.")
    parser.add_argument("--slots", type=int, default=3, help="Worker slots per machine.")
    args = parser.parse_args()

    console = recording_console()
    work = args.home.parent / "run"
    work.mkdir(parents=True, exist_ok=True)
    spec, profile_set, base_load, run_conf, entry = linear_setup(args.slots, work)
    copies = [Copy("linear-a", 0, 0.0, args.rate), Copy("linear-b", 1, 0.0, args.rate)]
    console.print(header("worker base load") + f"; each copy paced at {args.rate:g} tuples/s; "
                  f"profile set's base load {json.dumps(base_load, sort_keys=True)}")
    phases: list[dict] = []
    with (written_out(console, args.out),
          cluster_and_planner(spec, args.home, args.port_base, work) as (cluster, service)):
        url = service.start()
        _, parallelism = plan_alone(url, spec, profile_set, base_load, entry)
        up_with_plugin(cluster, url, console.print)
        handle, address, machines = cluster_machines(cluster)
        hosts = {m.host: m.id for m in handle.machines()}

        phases.append(phase(console, "supervisors only", handle, address, machines, hosts, [], url, args))
        running: list[str] = []
        for c in copies:
            submit(SubmitRequest("linear", name=c.name, parallelism=parallelism, rate=c.target_rate,
                                 profiles=profile_set.name, planner_url=url,
                                 conf={**c.tenant_conf(), **run_conf}), address)
            wait_running(address, [c.name], entry)
            running.append(c.name)
            phases.append(phase(console, " + ".join(running), handle, address, machines, hosts, running, url, args))
        kill_all(address, running)
        summarize(console, phases, base_load, machines)
    return 0


def workers_per_machine(address, hosts: dict[str, str], names: list[str]) -> dict[str, int]:
    """Machine -> how many workers (host, port) of the named topologies run there."""
    slots: set[tuple[str, int]] = set()
    with connect(address) as nimbus:
        for name in names:
            found = nimbus.find(name)
            info = nimbus.topology_info(found.id)
            slots.update((e.host, e.port) for e in info.executors or [])
    out: dict[str, int] = {}
    for host, _port in slots:
        out[hosts.get(host, host)] = out.get(hosts.get(host, host), 0) + 1
    return out


def phase(console, label, handle, address, machines, hosts, names, url, args) -> dict:
    """One window: each machine's measured CPU and the ledger's predicted load of the tuples' work."""
    time.sleep(args.warmup)
    workers = workers_per_machine(address, hosts, names) if names else {}
    before = {m: handle.cpu_seconds(m) for m in machines}
    t0 = time.monotonic()
    time.sleep(args.window)
    after = {m: handle.cpu_seconds(m) for m in machines}
    cpu = {c.machine: c.utilization for c in measure.machine_cpu(before, after, time.monotonic() - t0, machines)}
    with PlannerClient(url) as client:
        ledger = client.ledger()
    work = {m.id: sum(m.loads.values()) for m in ledger.machines}
    rows = {m: {"measured": round(cpu[m], 2), "work": round(work.get(m, 0.0), 2),
                "overhead": round(cpu[m] - work.get(m, 0.0), 2), "workers": workers.get(m, 0)} for m in machines}
    console.print(f"{label}: " + json.dumps(rows, sort_keys=True))
    return {"phase": label, "machines": rows}


def summarize(console, phases: list[dict], base_load: dict, machines: dict) -> None:
    table = Table(title="machine CPU, percent of the machine: measured; work = the ledger's loads (MET + slope * R "
                        "+ each tenant's worker base load); overhead = measured - work")
    table.add_column("machine")
    table.add_column("base load (profile)", justify="right")
    for p in phases:
        table.add_column(f"{p['phase']}: measured / work / overhead (workers)", justify="right")
    table.add_column("overhead per worker, 1st / 2nd", justify="right")
    for m, (t, _) in sorted(machines.items()):
        cells = [f"{p['machines'][m]['measured']:.1f} / {p['machines'][m]['work']:.1f} / "
                 f"{p['machines'][m]['overhead']:.1f} ({p['machines'][m]['workers']})" for p in phases]
        over = [p["machines"][m]["overhead"] for p in phases]
        nw = [p["machines"][m]["workers"] for p in phases]
        steps = []
        for i in range(1, len(phases)):
            added = nw[i] - nw[i - 1]
            steps.append(f"{(over[i] - over[i - 1]) / added:.1f}" if added > 0 else "-")
        table.add_row(m, f"{base_load.get(t, 0.0):.1f}", *cells, " / ".join(steps))
    console.print(table)
    console.print("json: " + json.dumps(phases, sort_keys=True))


if __name__ == "__main__":
    raise SystemExit(main())
