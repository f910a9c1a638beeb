"""Issue 15, live: `hetsched replan` raising the bottleneck's executor count of Linear submitted with too few.

On a local cluster of its own (the default spec, Nimbus running the hetsched plugin built in this
checkout, a planning service with the shipped ``default-cluster`` profile set): Linear is submitted
with one executor per component and spare tasks, placed by the plugin's plan; after a warm-up its
throughput is measured (Nimbus counts over a window); ``hetsched replan`` plans it again (more
executors where they pay), binds the plan and re-places it drained; after a warm-up the throughput is
measured again. Both measurements stand beside the planner's predictions, and the spout counts
across the drained re-placement (failed, in flight when the old workers stopped) are recorded.

Run under the machine-wide lock (it starts a Storm cluster)::

    flock /work/wt/live.lock .venv/bin/python benchmarks/replan_live.py --out docs/results/measurements/issue15
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.planner_service import PlannerService  # noqa: E402
from bench.profiles import load_profile_set  # noqa: E402
from cluster.local import LocalCluster  # noqa: E402
from cluster.spec import load_spec  # noqa: E402
from observe.nimbus import connect  # noqa: E402
from planner.client import PlannerClient  # noqa: E402
from topologies.submission import SubmitRequest  # noqa: E402
from topologies.submit import kill, submit, window_counts  # noqa: E402


def _rates(name: str, address, window_s: float) -> dict:
    _, window, rates = window_counts(name, address, window_s)
    return {"window_s": window.seconds, "components": {
        r.component: {"role": r.role, "executors": r.executors, "measured_executors": r.measured_executors,
                      "tuples_per_s": r.per_second, "acked": r.acked, "failed": r.failed} for r in rates}}


def _wait_status(address, name: str, prefix: str, timeout_s: float = 180.0) -> str:
    deadline = time.monotonic() + timeout_s
    status = ""
    while time.monotonic() < deadline:
        with connect(address, 30) as nimbus:
            running = nimbus.find(name)
            status = running.scheduler_status if running else ""
            if running is not None and status.startswith(prefix) and nimbus.counts(running.id).placed:
                return status
        time.sleep(2)
    raise RuntimeError(f"{name} not placed as '{prefix}...' within {timeout_s:g} s; status: {status!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--home", type=Path, default=Path("/tmp/s5-replan/replan-live"))
    parser.add_argument("--port-base", type=int, default=26000)
    parser.add_argument("--warmup", type=float, default=40.0)
    parser.add_argument("--window", type=float, default=40.0)
    parser.add_argument("--spare-tasks", type=float, default=4.0)
    parser.add_argument("--min-gain", default="0.10", help="hetsched replan's --min-gain.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.home.mkdir(parents=True, exist_ok=True)
    record: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "args": {
        k: str(v) for k, v in vars(args).items()}}
    name = "linear"
    profile_set, _ = load_profile_set("default-cluster")
    with PlannerService(args.home / "planner.db", args.home / "planner.log") as service:
        with PlannerClient(service.url) as client:
            client.put_profile_set(profile_set)
        cluster = LocalCluster(load_spec(), home=args.home / "cluster", port_base=args.port_base)
        try:
            cluster.up(scheduler="plugin", conf={"hetsched.planner.url": service.url,
                                                 "hetsched.planner.timeout.ms": 10000},
                       timeout_s=420, allow_homogeneous=True, report=print)
            address = cluster.nimbus_address
            request = SubmitRequest(topology="linear", name=name, parallelism={c: 1 for c in ("spout", "low", "mid", "high")},
                                    profiles=profile_set.name, spare_tasks=args.spare_tasks,
                                    conf={"executor.metrics.frequency.secs": 5})
            submit(request, address)
            record["status_before"] = _wait_status(address, name, "hetsched: placed by planner")
            time.sleep(args.warmup)
            record["before"] = _rates(name, address, args.window)
            yamls = [arg for m in cluster.layout.machines for arg in ("--storm-yaml", str(cluster.layout.conf_file(m.id)))]
            command = [sys.executable, "-m", "hetsched.cli", "replan", name, "--json", "--planner", service.url,
                       "--nimbus", str(address), "--min-gain", args.min_gain, *yamls]
            started = time.monotonic()
            done = subprocess.run(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                                  capture_output=True, text=True, timeout=600)
            record["replan_s"] = time.monotonic() - started
            record["replan_exit"] = done.returncode
            record["replan_stderr"] = done.stderr[-3000:]
            try:
                record["replan"] = json.loads(done.stdout)
            except ValueError:
                record["replan"] = done.stdout[-3000:]
            print(json.dumps(record["replan"], indent=2, default=str)[:4000], flush=True)
            record["status_after"] = _wait_status(address, name, "hetsched: placed by planner (bound plan")
            time.sleep(args.warmup)
            record["after"] = _rates(name, address, args.window)
            kill(name, address, wait=True, grace_s=0)
        except Exception as exc:  # noqa: BLE001  the record so far is written whatever failed
            record["error"] = f"{type(exc).__name__}: {exc}"
            print(record["error"], flush=True)
        finally:
            cluster.down(purge=False)
    out = args.out / f"replan-live-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(out)
    print(json.dumps({k: record.get(k) for k in ("status_before", "status_after", "replan_exit")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
