"""Linear profiled from its own worker records on the compose cluster, next to the lab set.

The compose supervisors give their workers ``hetsched.metrics.url: http://planner:8765`` and the token, so
a topology submitted with the metrics hook (``hetsched submit``'s default) and no ``--planner`` ships its
records to the compose planner, which keeps them in its volume. ``run`` shows it live:

1. ``hetsched cluster up --compose`` (images built where missing);
2. the lab profile set stored in the compose planner (``hetsched profiles put``) and one plan of Linear made;
3. ``hetsched submit linear`` with that plan's counts and id (``-c hetsched.plan.id=...``), metrics on, no
   ``--planner``, the spout paced by a rate file written into every supervisor container (``docker exec``),
   stepped through ``--rates`` (``--step-s`` each after ``--warmup-s``): one submission, one placement;
4. the topology killed, its records copied out of the planner container (``docker cp``);
5. ``hetsched cluster down --compose``, always, and what it left (nothing, or the run fails).

``analyze`` (no cluster) counts the records per machine and worker and runs ``hetsched aggregate --store``
on them and the live-vs-lab table of ``benchmarks/live_vs_lab.py``:

    flock /tmp/hetsched-live.lock .venv/bin/python -m benchmarks.compose_live_profile run --home /tmp/s7c/home \\
        --port-base 26000 --rates 6,16,28 --step-s 90 --out var/compose-live
    .venv/bin/python -m benchmarks.compose_live_profile analyze --out var/compose-live

Writes ``OUT-run.txt`` (every command and its output), ``OUT-run.json``, ``OUT-records/`` (the raw records),
``OUT-records.txt``, ``OUT-aggregate.txt``, ``OUT-profile.json`` and ``OUT-vs-lab.txt``.
"""
from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.compose_common import (
    CLI, Log, command_line, compose_cluster, dispatch, kill_and_copy_records, load_records, metrics_summary,
    records_header, records_table, write_and_aggregate,
)

REPO = Path(__file__).resolve().parents[1]

PROFILES = REPO / "profiles" / "default-cluster.json"
TOPOLOGY = "linear"
RATE_FILE_IN_CONTAINERS = "/tmp/hetsched-compose-rate.json"
"""Written in every supervisor container: the spout reads it on whichever machine it runs."""
def write_rate_everywhere(log: Log, containers: dict[str, str], rate: float) -> None:
    """The spout's rate file in every supervisor container (atomic: written aside, then renamed)."""
    body = json.dumps({"rate": float(rate)})
    for machine, container in sorted(containers.items()):
        subprocess.run(["docker", "exec", container, "sh", "-c",
                        f"printf '%s' '{body}' > {RATE_FILE_IN_CONTAINERS}.tmp && mv {RATE_FILE_IN_CONTAINERS}.tmp "
                        f"{RATE_FILE_IN_CONTAINERS}"], check=True, capture_output=True)
    log.say(f"rate file {RATE_FILE_IN_CONTAINERS} = {body} in {', '.join(sorted(containers))}")


def wait_until_counting(cluster, topology_id: str, timeout_s: float) -> dict[str, list[str]]:
    """The topology's placement once every sink has counted tuples (Nimbus's stats)."""
    from bench.placement import from_topology_info
    from observe.counts import parse_topology_info
    from observe.machines import machine_of_host
    from observe.nimbus import connect
    from topologies.catalog import lookup
    from topologies.measure import roles

    sinks = [c for c, role in roles(lookup(TOPOLOGY)).items() if role == "sink"]
    hosts = machine_of_host(cluster.handle())
    deadline = time.monotonic() + timeout_s
    with connect(cluster.nimbus_address) as nimbus:
        while time.monotonic() < deadline:
            info = nimbus.topology_info(topology_id)
            placement = from_topology_info(info, hosts)
            totals = parse_topology_info(info).totals()
            if placement is not None and all(totals.get(s, 0) > 0 for s in sinks):
                return {m: sorted(cs) for m, cs in placement.machines_used().items()}
            time.sleep(3)
    raise SystemExit(f"error: {topology_id}'s sinks {sinks} counted nothing within {timeout_s:g} s")


def run(args: argparse.Namespace) -> int:
    from cluster import compose
    from observe.nimbus import connect
    from planner.client import PlannerClient
    from planner.model import PlanRequest, ProfileRef, ProfileSet
    from planner.profiles import machine_base_load
    from topologies.catalog import lookup, planner_topology
    from topologies.plans import plan_parallelism

    rates = [float(x) for x in args.rates.split(",")]
    log = Log()
    out: dict[str, Any] = {"topology": args.topology, "rates": rates, "step_s": args.step_s, "warmup_s": args.warmup_s}
    with compose_cluster(log, args.home.resolve(), args.port_base, args.out, out) as run_:
        cluster, token, env, nimbus = run_.cluster, run_.token, run_.env, run_.nimbus
        log.run([*CLI, "profiles", "put", "default-cluster", str(PROFILES), "--url", cluster.planner_url], env)
        profile_set = ProfileSet.model_validate_json(PROFILES.read_text())
        entry = lookup(TOPOLOGY)
        with PlannerClient(cluster.planner_url, token=token) as client:
            plan = client.plan(PlanRequest(topology=planner_topology(entry),
                                           cluster=cluster.spec.planner_cluster(machine_base_load(profile_set)),
                                           profiles=ProfileRef(name=profile_set.name)))
        counts = plan_parallelism(plan, entry)
        log.say(f"plan {plan.id} ({plan.strategy}): counts {counts}, predicted input rate {plan.input_rate:.2f}, machines {[(m.id, round(m.utilization, 1)) for m in plan.machines]}")
        out.update(plan_id=plan.id, counts=counts, predicted_input_rate=plan.input_rate)
        containers = {m.id: cluster.container_id(compose.supervisor_service(m.id)) for m in cluster.layout.machines}
        write_rate_everywhere(log, containers, rates[0])
        out["started"] = time.time()
        log.run([*CLI, "submit", TOPOLOGY, "--name", args.topology, "--nimbus", nimbus, "--force",
                 "-p", ",".join(f"{c}={n}" for c, n in counts.items()), "--profiles", profile_set.name,
                 "-c", f"hetsched.plan.id={json.dumps(plan.id)}", "-c", f"hetsched.spout.rate.file={RATE_FILE_IN_CONTAINERS}",
                 "-c", "topology.disable.loadaware.messaging=true", "--rate", f"{rates[0]:g}"], env)
        with connect(cluster.nimbus_address) as client:
            topology_id = client.find(args.topology).id
        out["topology_id"] = topology_id
        placement = wait_until_counting(cluster, topology_id, args.start_timeout_s)
        out["placement"] = placement
        log.say(f"{topology_id} counting at every sink; placement {json.dumps(placement)}")
        storm_yamls = sorted(glob.glob(str(REPO / compose.CONF_FOLDER / "supervisor-*.yaml")))
        log.run([*CLI, "placement", args.topology, "--nimbus", nimbus, "--measure", "0",
                 *[a for y in storm_yamls for a in ("--storm-yaml", y)]], env, check=False)
        time.sleep(args.warmup_s)
        early = metrics_summary(cluster.planner_url, token)
        log.say(f"after the warm-up, the planner holds {early['records']} records in {early['batches']} batches "
                f"from {len(early['workers'])} workers")
        steps = []
        for rate in rates:
            write_rate_everywhere(log, containers, rate)
            start = time.time()
            time.sleep(args.step_s)
            steps.append({"rate": rate, "start": start, "end": time.time()})
            log.say(f"step {rate:g} tuples/s: {steps[-1]['end'] - start:.0f} s")
        out["steps"] = steps
        kill_and_copy_records(log, run_, args.topology, args.out, out, list_store=True)
    return 1 if out.get("left_after_down") else 0


# --- analyze ----------------------------------------------------------------------------------------------------

def analyze(args: argparse.Namespace) -> int:
    from benchmarks.live_vs_lab import compare, step_rates

    records_dir = Path(f"{args.out}-records")
    run_info = json.loads(Path(f"{args.out}-run.json").read_text())
    topology = run_info["topology"]
    records = load_records(records_dir, topology)
    lines = [records_header(topology, run_info.get("topology_id")), *records_table(records)]
    steps = run_info.get("steps") or []
    if steps:
        emitted = step_rates(records, steps, "spout")
        lines.append("steps (asked -> the spout's emitted rate from its records): "
                     + ", ".join(f"{s['rate']:g} -> {e}" for s, e in zip(steps, emitted)))
    write_and_aggregate(lines, records_dir, topology, args.out, f"{topology}-live")
    text, _live = compare(records_dir, topology, PROFILES, args.min_samples, None)
    text += (f"placement ({run_info.get('topology_id')}, plan {run_info.get('plan_id')}): "
             f"{json.dumps(run_info.get('placement'))}\n")
    Path(f"{args.out}-vs-lab.txt").write_text(text)
    print(text, end="")
    return 0


def main() -> int:
    parser, live, offline = command_line(__doc__.splitlines()[0],
                                         "records per worker, hetsched aggregate and the table next to the lab set")
    live.add_argument("--rates", default="6,16,28", help="the spout's paced rates, tuples/s")
    live.add_argument("--step-s", type=float, default=90.0)
    live.add_argument("--warmup-s", type=float, default=30.0)
    live.add_argument("--start-timeout-s", type=float, default=420.0)
    live.add_argument("--topology", default="compose-live-rates", help="the name Linear runs under")
    live.add_argument("--out", required=True, help="prefix of the output files")
    offline.add_argument("--min-samples", type=int, default=5)
    return dispatch(parser, run, analyze)


if __name__ == "__main__":
    sys.exit(main())
