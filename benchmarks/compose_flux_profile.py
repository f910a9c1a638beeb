"""The Flux topology ``topologies/flux/words-cpu.yaml`` profiled from its own worker records on the compose cluster.

The same shape as ``benchmarks/compose_live_profile.py`` (Linear there), for the issue's Java topology: Storm's own
``TestWordSpout`` and ``TestWordCounter`` around the project's ``CpuWorkBolt`` (5 ms of its thread's CPU per
tuple). ``TestWordSpout`` keeps its own pace (a word per 100 ms per instance), so, as ``flux_live_profile.sh``
does on the local cluster, the input rate is stepped by running the file with 1, 2 and 3 spout instances in turn
under the same name. ``run``, under the live lock:

1. ``hetsched cluster up --compose``;
2. for each spout count: ``hetsched submit --flux`` (metrics on, no ``--planner``: the compose supervisors'
   storm.yaml sends the records to ``http://planner:8765`` with the token), ``--step-s`` seconds;
3. the topology killed, its records copied out of the planner container, the planner's own count of them;
4. with ``--check-linear``, the two addresses of the compose planner: Linear submitted with a stored plan read from
   the planner as this machine reaches it (``--planner http://127.0.0.1:PORT``) and the workers' metrics sent where
   they reach it (``--metrics-url http://planner:8765``), then ``hetsched placement`` with no ``--planner`` (it
   finds the compose planner and its token from the cluster's home), and the planner's count of Linear's records;
5. ``hetsched cluster down --compose``, always, and what it left.

``analyze``: the records per worker and ``hetsched aggregate --store`` on them.

    flock /tmp/hetsched-live.lock .venv/bin/python benchmarks/compose_flux_profile.py run --home /tmp/flux-compose \\
        --port-base 22400 --out docs/results/measurements/issue19/compose-flux
    .venv/bin/python benchmarks/compose_flux_profile.py analyze --out docs/results/measurements/issue19/compose-flux
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from compose_common import (  # noqa: E402
    CLI, ComposeRun, Log, command_line, compose_cluster, dispatch, kill_and_copy_records, load_records, metrics_summary,
    records_header, records_table, write_and_aggregate,
)

FLUX_FILE = REPO / "topologies" / "flux" / "words-cpu.yaml"
JAR = REPO / "topologies" / "java" / "target" / "hetsched-java-topologies.jar"
NAME = "words-cpu"


def with_spouts(text: str, n: int) -> str:
    """The Flux file with ``n`` instances of its spout ``words`` (the first ``parallelism:`` after ``id: "words"``)."""
    head, sep, tail = text.partition('id: "words"')
    return head + sep + re.sub(r"parallelism: \d+", f"parallelism: {n}", tail, count=1)


def run(args: argparse.Namespace) -> int:
    if not JAR.is_file():
        raise SystemExit(f"error: {JAR} is missing: mvn -q -f topologies/java/pom.xml -DskipTests package")
    spouts = [int(x) for x in args.spouts.split(",")]
    log = Log()
    out: dict[str, Any] = {"topology": NAME, "spouts": spouts, "step_s": args.step_s}
    work = Path(tempfile.mkdtemp(prefix="compose-flux-"))
    with compose_cluster(log, args.home.resolve(), args.port_base, args.out, out) as run_:
        env, nimbus = run_.env, run_.nimbus
        steps = []
        for n in spouts:
            flux = work / f"words-cpu-{n}.yaml"
            flux.write_text(with_spouts(FLUX_FILE.read_text(), n))
            log.run([*CLI, "submit", "--flux", str(flux), "--jar", str(JAR), "--force", "--nimbus", nimbus], env)
            start = time.time()
            time.sleep(args.step_s)
            steps.append({"spouts": n, "start": start, "end": time.time()})
            log.say(f"{n} spout instance(s): {steps[-1]['end'] - start:.0f} s")
        out["steps"] = steps
        log.run([*CLI, "placement", NAME, "--nimbus", nimbus, "--measure", "0"], env, check=False)
        kill_and_copy_records(log, run_, NAME, args.out, out)
        if args.check_linear:
            out["linear_check"] = check_linear(log, run_)
    return 1 if out.get("left_after_down") else 0


def check_linear(log: Log, run_: ComposeRun) -> dict[str, Any]:
    """Linear by a stored plan with --planner (this machine's address) and --metrics-url (the workers'), then
    ``hetsched placement`` without --planner; what the planner counted of its records."""
    import glob

    from cluster import compose
    from planner.client import PlannerClient
    from planner.model import PlanRequest, ProfileRef, ProfileSet
    from planner.profiles import machine_base_load
    from topologies.catalog import lookup, planner_topology

    cluster, env, nimbus, home, token = run_.cluster, run_.env, run_.nimbus, run_.home, run_.token
    profiles = REPO / "profiles" / "default-cluster.json"
    log.run([*CLI, "profiles", "put", "default-cluster", str(profiles), "--url", cluster.planner_url], env)
    profile_set = ProfileSet.model_validate_json(profiles.read_text())
    with PlannerClient(cluster.planner_url, token=token) as client:
        plan = client.plan(PlanRequest(topology=planner_topology(lookup("linear")),
                                       cluster=cluster.spec.planner_cluster(machine_base_load(profile_set)),
                                       profiles=ProfileRef(name=profile_set.name)))
    log.run([*CLI, "submit", "linear", "--plan", plan.id, "--profiles", profile_set.name, "--planner", cluster.planner_url,
             "--metrics-url", compose.PLANNER_URL, "--nimbus", nimbus, "-c", "topology.disable.loadaware.messaging=true"], env)
    time.sleep(75)
    storm_yamls = sorted(glob.glob(str(REPO / compose.CONF_FOLDER / "supervisor-*.yaml")))
    placement = log.run([*CLI, "placement", "linear", "--nimbus", nimbus, "--measure", "0",
                         *[a for y in storm_yamls for a in ("--storm-yaml", y)]],
                        {**env, "HETSCHED_CLUSTER_HOME": str(home)}, check=False)
    summary = metrics_summary(cluster.planner_url, token)
    linear = [w for w in summary["workers"] if str(w.get("topology_id", "")).startswith("linear-")]
    log.say("Linear's records at the compose planner: " + json.dumps(linear, indent=1))
    log.run([*CLI, "kill", "linear", "--wait", "--nimbus", nimbus], env, check=False)
    return {"plan_id": plan.id, "predicted_in_placement": "predicted: CPU percent" in placement, "workers": linear}


def analyze(args: argparse.Namespace) -> int:
    records_dir = Path(f"{args.out}-records")
    write_and_aggregate([records_header(NAME), *records_table(load_records(records_dir, NAME))], records_dir, NAME,
                        args.out, f"{NAME}-compose-live")
    return 0


def main() -> int:
    parser, live, _offline = command_line(__doc__.splitlines()[0], "records per worker and hetsched aggregate")
    live.add_argument("--spouts", default="1,2,3", help="spout instances of each step (a word per 100 ms each)")
    live.add_argument("--step-s", type=float, default=120.0)
    live.add_argument("--out", required=True, help="prefix of the output files")
    live.add_argument("--check-linear", action="store_true", help="then Linear with --planner and --metrics-url, and placement")
    return dispatch(parser, run, analyze)


if __name__ == "__main__":
    sys.exit(main())
