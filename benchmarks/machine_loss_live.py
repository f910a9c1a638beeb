"""Issue 15, live: a machine lost and returned under the hetsched plugin (Linear placed by plan).

On a local cluster of its own (the default spec, Nimbus running this checkout's plugin, a planning
service with the shipped ``default-cluster`` profiles): Linear is submitted and placed by plan; after
a warm-up the machine that hosts its ``high`` executors is killed with its workers (its supervisor's
process tree and every process in its cgroup); Nimbus notices, the plugin repairs (keeps what still
runs, places the lost executors); later the machine's supervisor is started again, the plugin
notices it joined, plans again and, if the gain is worth it, re-places the topology by rebalance.
Throughout, every few seconds: the spouts' acked and failed tuple trees (deltas of Nimbus's counts
per executor), the scheduler status, and which events happened when. Writes one JSON file.

    flock /work/wt/live.lock .venv/bin/python benchmarks/machine_loss_live.py --out docs/results/measurements/issue15
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.planner_service import PlannerService  # noqa: E402
from bench.profiles import load_profile_set  # noqa: E402
from cluster import processes  # noqa: E402
from cluster.local import LocalCluster  # noqa: E402
from cluster.spec import load_spec  # noqa: E402
from observe.nimbus import Nimbus  # noqa: E402
from planner.client import PlannerClient  # noqa: E402
from topologies.submission import SubmitRequest  # noqa: E402
from topologies.submit import kill, submit  # noqa: E402

NAME = "linear"


class Sampler:
    """Spout acked/failed per interval from Nimbus's all-time counts (per executor, restarts counted from 0)."""

    def __init__(self, nimbus: Nimbus, start: float) -> None:
        self.nimbus, self.start = nimbus, start
        self.last: dict[tuple, tuple[int, int]] = {}
        self.samples: list[dict] = []

    def sample(self, event: str | None = None) -> dict:
        running = self.nimbus.find(NAME)
        counts = self.nimbus.counts(running.id)
        acked = failed = 0
        now_keys = {}
        for e in counts.executors.values():
            if not e.is_spout:
                continue
            key = (e.task_start, e.host, e.port)
            before = self.last.get(key, (0, 0))
            if e.acked >= before[0]:
                acked += e.acked - before[0]
                failed += e.failed - before[1]
            now_keys[key] = (e.acked, e.failed)
        self.last = now_keys
        row = {"t_s": round(time.monotonic() - self.start, 1), "acked": acked, "failed": failed,
               "status": running.scheduler_status, "topology_status": running.status,
               "hosts": sorted({e.host for e in counts.executors.values()}), "event": event}
        self.samples.append(row)
        print(json.dumps(row)[:300], flush=True)
        return row


def machine_hosts(cluster: LocalCluster) -> dict[str, str]:
    """Machine id -> its supervisor's storm.local.hostname."""
    found = {}
    for m in cluster.layout.machines:
        conf = yaml.safe_load(cluster.layout.conf_file(m.id).read_text())
        found[m.id] = conf.get("storm.local.hostname", "")
    return found


def kill_machine(cluster: LocalCluster, machine_id: str) -> list[int]:
    """Stop the machine's supervisor and every process in its cgroup (its workers and their Python subprocesses)."""
    killed = processes.stop(cluster.layout.pid_file(machine_id), grace_s=2.0)
    left = [p for p in psutil.process_iter(["pid"]) if cluster.machine_of_pid(p.info["pid"]) == machine_id]
    killed += processes.terminate(left, grace_s=2.0)
    return killed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--home", type=Path, default=Path("/tmp/s5-replan/machine-loss"))
    parser.add_argument("--port-base", type=int, default=26200)
    parser.add_argument("--warmup", type=float, default=60.0)
    parser.add_argument("--down", type=float, default=120.0, help="Seconds the machine stays down.")
    parser.add_argument("--after", type=float, default=150.0, help="Seconds watched after it returns.")
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--scheduler", default="plugin", choices=("plugin", "default", "resource_aware"),
                        help="Nimbus's scheduler: the same scenario under Storm's own schedulers for comparison.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.home.mkdir(parents=True, exist_ok=True)
    record: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "args": {k: str(v) for k, v in vars(args).items()}}
    profile_set, _ = load_profile_set("default-cluster")
    with PlannerService(args.home / "planner.db", args.home / "planner.log") as service:
        with PlannerClient(service.url) as client:
            client.put_profile_set(profile_set)
        cluster = LocalCluster(load_spec(), home=args.home / "cluster", port_base=args.port_base)
        try:
            cluster.up(scheduler=args.scheduler, conf={
                "hetsched.planner.url": service.url, "hetsched.planner.timeout.ms": 10000,
                "hetsched.replan.min.interval.secs": 60, "nimbus.supervisor.timeout.secs": 20,
                "nimbus.task.timeout.secs": 20}, timeout_s=420, allow_homogeneous=True, report=print)
            address = cluster.nimbus_address
            submit(SubmitRequest(topology="linear", name=NAME, profiles=profile_set.name,
                                 conf={"executor.metrics.frequency.secs": 5,
                                       "topology.disable.loadaware.messaging": True}), address)
            hosts = machine_hosts(cluster)
            with Nimbus(address) as nimbus:
                start = time.monotonic()
                sampler = Sampler(nimbus, start)
                placed = "hetsched: placed by planner" if args.scheduler == "plugin" else ""
                while not sampler.sample("submitted" if not sampler.samples else None)["status"].startswith(placed) \
                        or not nimbus.counts(nimbus.find(NAME).id).placed:
                    time.sleep(args.every)
                until = time.monotonic() + args.warmup
                while time.monotonic() < until:
                    time.sleep(args.every)
                    sampler.sample()
                running = nimbus.find(NAME)
                high_hosts = {e.host for e in nimbus.counts(running.id).executors.values() if e.component == "high"}
                victim = next(m for m, h in hosts.items() if h in high_hosts)
                record["victim"] = victim
                record["killed_pids"] = kill_machine(cluster, victim)
                sampler.sample(f"killed {victim}")
                until = time.monotonic() + args.down
                while time.monotonic() < until:
                    time.sleep(args.every)
                    sampler.sample()
                record["restarted"] = cluster.restart_stopped_supervisors(timeout_s=300, report=print)
                sampler.sample(f"{victim} back")
                until = time.monotonic() + args.after
                while time.monotonic() < until:
                    time.sleep(args.every)
                    sampler.sample()
                record["samples"] = sampler.samples
            kill(NAME, address, wait=True, grace_s=0)
        finally:
            try:
                record["nimbus_hetsched_log"] = [line for line in cluster.log_file("nimbus").read_text(
                    errors="replace").splitlines() if "hetsched:" in line][-60:]
            except Exception as exc:  # noqa: BLE001  a missing log must not keep the cluster up
                record["nimbus_hetsched_log"] = f"not read: {exc}"
            cluster.down(purge=False)
            record["planner_log_tail"] = (args.home / "planner.log").read_text(errors="replace")[-4000:]
    out = args.out / f"machine-loss-live-{args.scheduler}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
