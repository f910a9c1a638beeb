"""Two copies of Linear on the default local cluster, without and with the planner's ledger, then admission (issue #16).

Before: both copies submitted with one stored plan (``hetsched.plan.id``, as planned alone: the
whole cluster each), unpaced. After: both planned by the plugin as tenants (``topology.priority``,
``hetsched.min.rate``, ``hetsched.target.rate``), each paced at its target
(``hetsched.spout.rate``), the second planned on what the first leaves. Admission: a third copy whose
minimum does not fit beside the others' is refused and left unscheduled, and the two keep their
rates. Prints, per phase, each copy's predicted and measured sink throughput and each machine's
predicted and measured CPU.

Run under the machine-wide lock:
    flock /tmp/hetsched-live.lock .venv/bin/python benchmarks/two_linears_ledger.py --port-base 31000 \
        --home /tmp/s7-tenants/cluster --out docs/results/measurements/issue16/two-linears-2.txt
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from live_common import add_run_options, cluster_and_planner, header, recording_console, up_with_plugin, written_out  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench import measure  # noqa: E402
from bench.schedulers import common_conf  # noqa: E402
from bench.settings import BenchSettings  # noqa: E402
from bench.profiles import fill_pass_through_alphas, load_profile_set  # noqa: E402
from cluster.handle import LocalClusterHandle  # noqa: E402
from cluster.local import LocalCluster  # noqa: E402
from cluster.spec import load_spec  # noqa: E402
from hetsched.tenants_cmd import ledger_tables  # noqa: E402
from observe.nimbus import connect  # noqa: E402
from observe.rates import component_rates  # noqa: E402
from observe.window import sample_window  # noqa: E402
from planner.client import PlannerClient  # noqa: E402
from planner.ledger import Ledger  # noqa: E402
from planner.model import PlanRequest, ProfileRef  # noqa: E402
from planner.profiles import machine_base_load  # noqa: E402
from topologies.catalog import lookup, planner_topology  # noqa: E402
from topologies.measure import roles  # noqa: E402
from topologies.submission import SubmitRequest  # noqa: E402
from topologies.submit import submit  # noqa: E402

PROFILES = "default-cluster"
START_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class Copy:
    name: str
    priority: int
    min_rate: float
    target_rate: float

    def tenant_conf(self) -> dict:
        return {"topology.priority": self.priority, "hetsched.min.rate": self.min_rate,
                "hetsched.target.rate": self.target_rate}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(parser, "Where the raw output goes (also printed).", "/tmp/s7-tenants/cluster", 31000)
    parser.add_argument("--warmup", type=float, default=30.0, help="Seconds after both run before the window.")
    parser.add_argument("--window", type=float, default=60.0, help="Seconds of the measurement window.")
    parser.add_argument("--targets", default="18,12", help="Target rates of the two copies (tuples/s).")
    parser.add_argument("--minimums", default="15,10", help="Minimum rates of the two copies (tuples/s).")
    parser.add_argument("--third-min", type=float, default=20.0, help="Minimum rate of the copy that should be refused.")
    parser.add_argument("--skip-before", action="store_true", help="Only the ledger phases.")
    parser.add_argument("--alone-first", action="store_true",
                        help="Measure the first copy alone before the second is submitted (a control).")
    parser.add_argument("--slots", type=int, default=3,
                        help="Worker slots per machine (the default spec's 2 leave none for a third copy to be refused by the planner).")
    args = parser.parse_args()
    targets = [float(x) for x in args.targets.split(",")]
    minimums = [float(x) for x in args.minimums.split(",")]
    copies = [Copy("linear-a", 0, minimums[0], targets[0]), Copy("linear-b", 1, minimums[1], targets[1])]
    third = Copy("linear-c", 2, args.third_min, args.third_min)

    console = recording_console()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    work = args.home.parent / "run"
    work.mkdir(parents=True, exist_ok=True)
    spec, profile_set, base_load, run_conf, entry = linear_setup(args.slots, work)
    console.print(f"topology conf of every copy: {json.dumps(run_conf, sort_keys=True)}; {args.slots} slots per machine")
    console.print(header("two Linears with the ledger"))
    with (written_out(console, args.out),
          cluster_and_planner(spec, args.home, args.port_base, work) as (cluster, service)):
        url = service.start()
        alone, parallelism = plan_alone(url, spec, profile_set, base_load, entry)
        console.print(f"plan {alone.id} of Linear alone: R = {alone.input_rate:.2f} tuples/s, "
                      + ", ".join(f"{c} x{n}" for c, n in parallelism.items()) + "; machines "
                      + ", ".join(f"{m.id} {m.utilization + base_load.get(m.type, 0):.1f}%" for m in alone.machines))
        status = up_with_plugin(cluster, url, console.print)
        if not status.heterogeneous:
            console.print("the cluster has no CPU quotas: not heterogeneous, nothing to measure")
            return 1
        handle, address, machines = cluster_machines(cluster)

        if not args.skip_before:
            console.rule("before: both copies placed by the plan made for Linear alone, no ledger, unpaced")
            for c in copies:
                submit(SubmitRequest("linear", name=c.name, plan_id=alone.id, profiles=profile_set.name,
                                     planner_url=url, conf={**run_conf}), address)
            wait_running(address, [c.name for c in copies], entry)
            rates, cpu = measure_window(address, handle, machines, [c.name for c in copies], entry, args)
            predicted = {c.name: alone.input_rate for c in copies}
            plan_load = {m.id: m.utilization for m in alone.machines}
            machine_pred = {m: base_load.get(t, 0.0) + 2 * plan_load.get(m, 0.0) for m, (t, _) in machines.items()}
            report(console, "before", predicted, rates, machine_pred, cpu)
            kill_all(address, [c.name for c in copies])

        console.rule("after: both copies planned by the plugin as tenants (ledger), each paced at its target")
        for i, c in enumerate(copies):
            submit(SubmitRequest("linear", name=c.name, parallelism=parallelism, rate=c.target_rate,
                                 profiles=profile_set.name, planner_url=url,
                                 conf={**c.tenant_conf(), **run_conf}), address)
            wait_running(address, [c.name], entry)
            if i == 0 and args.alone_first:
                with PlannerClient(url) as client:
                    first = client.ledger()
                rates, cpu = measure_window(address, handle, machines, [c.name], entry, args)
                report(console, "control: the first copy alone", ledger_rates(first), rates,
                       ledger_machines(first, machines, base_load), cpu)
        with PlannerClient(url) as client:
            ledger = client.ledger()
        for table in ledger_tables(ledger):
            console.print(table)
        rates, cpu = measure_window(address, handle, machines, [c.name for c in copies], entry, args)
        report(console, "after", ledger_rates(ledger), rates, ledger_machines(ledger, machines, base_load), cpu,
               capacity={m.id: m.capacity for m in ledger.machines})

        console.rule(f"admission: {third.name} (priority {third.priority}) asks for a minimum of {third.min_rate:g} tuples/s")
        submit(SubmitRequest("linear", name=third.name, parallelism=parallelism, rate=third.target_rate,
                             profiles=profile_set.name, planner_url=url,
                             conf={**third.tenant_conf(), **run_conf}), address)
        refused_status = wait_status(address, third.name, "not admitted")
        console.print(f"{third.name}'s scheduler status: {refused_status}")
        with connect(address) as nimbus:
            info = nimbus.topology_info(nimbus.find(third.name).id)
            console.print(f"{third.name} executors placed: {len(info.executors or [])}")
        rates_after, cpu_after = measure_window(address, handle, machines, [c.name for c in copies], entry, args)
        with PlannerClient(url) as client:
            ledger_now = client.ledger()
        report(console, "admission", ledger_rates(ledger_now), rates_after,
               ledger_machines(ledger_now, machines, base_load), cpu_after,
               capacity={m.id: m.capacity for m in ledger_now.machines},
               earlier=rates)
        kill_all(address, [c.name for c in copies] + [third.name])
        time.sleep(8)
        with PlannerClient(url) as client:
            console.print(f"after the kills the ledger holds {len(client.ledger().tenants)} topologies")
    return 0


def linear_setup(slots: int, work: Path):
    """What every Linear copy of these scripts runs with: the default spec with ``slots`` worker slots per
    machine, the shipped profile set (pass-through alphas filled) and its base load, the bench's topology conf
    (even shuffle, as the model assumes; acking; stats of every tuple) and Linear's catalog entry."""
    spec = load_spec()
    spec = spec.model_copy(update={"machine_types": [t.model_copy(update={"slots": slots}) for t in spec.machine_types]})
    profile_set, _ = load_profile_set(PROFILES)
    profile_set, _ = fill_pass_through_alphas(profile_set, ["linear"])
    return spec, profile_set, machine_base_load(profile_set), common_conf(BenchSettings(out_dir=str(work))), lookup("linear")


def plan_alone(url: str, spec, profile_set, base_load: dict, entry):
    """The profile set stored in the planner and its plan of Linear alone on the whole cluster: (plan, its instance
    counts without Storm's own components)."""
    with PlannerClient(url) as client:
        client.put_profile_set(profile_set)
        alone = client.plan(PlanRequest(topology=planner_topology(entry), cluster=spec.planner_cluster(base_load),
                                        profiles=ProfileRef(name=profile_set.name)))
    return alone, {c: n for c, n in alone.instances.items() if not c.startswith("__")}


def cluster_machines(cluster: LocalCluster):
    """The running cluster's handle, Nimbus's address and machine id -> (type, cores)."""
    handle = LocalClusterHandle(cluster)
    return handle, handle.nimbus, {m.id: (m.type, m.cores) for m in handle.machines()}


def wait_running(address, names: list[str], entry) -> None:
    """Until every named topology has every executor placed and every component has handled a tuple."""
    component_roles = roles(entry)
    deadline = time.monotonic() + START_TIMEOUT_S
    with connect(address) as nimbus:
        for name in names:
            while True:
                found = nimbus.find(name)
                if found is not None:
                    counts = nimbus.counts(found.id).totals()
                    if all(counts.get(c, 0) > 0 for c in component_roles):
                        break
                if time.monotonic() > deadline:
                    raise SystemExit(f"{name} did not start within {START_TIMEOUT_S:g} s")
                time.sleep(2.0)


def kill_all(address, names: list[str]) -> None:
    with connect(address) as nimbus:
        for name in names:
            if nimbus.find(name) is not None:
                nimbus.kill(name, wait_s=0)
        for name in names:
            nimbus.wait_gone(name, 120.0)


def wait_status(address, name: str, wanted: str, timeout_s: float = 90.0) -> str:
    deadline = time.monotonic() + timeout_s
    status = ""
    with connect(address) as nimbus:
        while time.monotonic() < deadline:
            found = nimbus.find(name)
            if found is not None:
                status = nimbus.topology_info(found.id).sched_status or ""
                if wanted in status:
                    return status
            time.sleep(2.0)
    return status


def measure_window(address, handle, machines, names: list[str], entry, args) -> tuple[dict, dict]:
    """Sink throughput of every named topology over one shared window, and each machine's CPU percent."""
    time.sleep(args.warmup)
    component_roles = roles(entry)
    results: dict[str, float] = {}
    failed: dict[str, float] = {}
    errors: list[str] = []

    def one(name: str) -> None:
        try:
            with connect(address) as nimbus:
                topology_id = nimbus.find(name).id
                samples = sample_window(nimbus, topology_id, args.window, component_roles, extend_to_s=2 * args.window)
            rates = component_rates(samples, component_roles)
            results[name] = measure.measured_throughputs(rates).sink_throughput
            failed[name] = measure.failed_share(rates)
        except Exception as exc:  # noqa: BLE001 - said in the record, the run goes on
            errors.append(f"{name}: {exc}")

    cpu_before = {m: handle.cpu_seconds(m) for m in machines}
    started = time.monotonic()
    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    window = time.monotonic() - started
    cpu_after = {m: handle.cpu_seconds(m) for m in machines}
    cpu = {c.machine: c.utilization for c in measure.machine_cpu(cpu_before, cpu_after, window, machines)}
    if errors:
        raise SystemExit("; ".join(errors))
    return {n: (results[n], failed[n]) for n in names}, cpu


def ledger_rates(ledger: Ledger) -> dict[str, float]:
    return {t.topology: t.rate for t in ledger.tenants if t.status == "admitted"}


def ledger_machines(ledger: Ledger, machines, base_load) -> dict[str, float]:
    """Each machine's predicted CPU: the ledger's loads, each tenant's own worker base load included; the base
    load alone where no tenant runs."""
    by_id = {m.id: m for m in ledger.machines}
    return {m: sum(by_id[m].loads.values()) if m in by_id and by_id[m].loads else base_load.get(t, 0.0)
            for m, (t, _) in machines.items()}


def report(console: Console, phase: str, predicted: dict, measured: dict, machine_pred: dict, cpu: dict,
           capacity: dict | None = None, earlier: dict | None = None) -> None:
    table = Table(title=f"{phase}: sink throughput, tuples/s")
    for column in ("topology", "predicted", "measured", "error", "failed") + (("measured before",) if earlier else ()):
        table.add_column(column, justify="left" if column == "topology" else "right")
    for name, (value, failed) in measured.items():
        p = predicted.get(name, 0.0)
        error = f"{(value - p) / p:+.1%}" if p > 0 else "-"
        row = [name, f"{p:.2f}", f"{value:.2f}", error, f"{failed:.1%}"]
        if earlier:
            row.append(f"{earlier[name][0]:.2f}")
        table.add_row(*row)
    console.print(table)
    machines = Table(title=f"{phase}: machine CPU, percent of the machine (base load included)")
    for column in ("machine", "predicted", "measured", "predicted over 100%"):
        machines.add_column(column, justify="left" if column == "machine" else "right")
    for m in sorted(cpu):
        over = machine_pred[m] > 100.0 + 1e-6
        machines.add_row(m, f"{machine_pred[m]:.1f}", f"{cpu[m]:.1f}", "yes" if over else "no")
    console.print(machines)
    summary = {"phase": phase, "predicted": predicted, "measured": {n: v for n, (v, _) in measured.items()},
               "machine_predicted": machine_pred, "machine_measured": cpu}
    console.print("json: " + json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    raise SystemExit(main())
