"""fast's planning time at N machines with no memory and with memory that binds (issue #18 part 1).

The Linear topology with the paper's profiles on N machines of the paper's three types (as
benchmarks/planner_scaling.py). With memory: 100 MB per instance, a 200 MB worker, machines of
400 MB, so at most two instances fit a machine. Prints R, the instances, the process CPU time
(median of ``--repeat``), and how many machines are over their memory or where it binds.

    .venv/bin/python benchmarks/planner_memory_scaling.py --machines 1000
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.api import make_plan  # noqa: E402
from planner.fixtures import load_profiles, load_topology, scaled_cluster  # noqa: E402

INSTANCE_MB = 100.0
WORKER_MB = 200.0
MACHINE_MB = 400.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.machines
    topology = load_topology("linear")
    cluster = scaled_cluster((n // 3, n // 3, n - 2 * (n // 3)))
    entries = load_profiles().entries
    with_memory = (
        topology.model_copy(update={"worker_memory_mb": WORKER_MB, "components": [
            c.model_copy(update={"memory_mb": INSTANCE_MB}) for c in topology.components]}),
        cluster.model_copy(update={"machine_types": [
            t.model_copy(update={"memory_mb": MACHINE_MB}) for t in cluster.machine_types]}),
    )
    print(f"fast on {n} machines, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, (t, c) in {"no memory": (topology, cluster), "memory binds": with_memory}.items():
        times = []
        for _ in range(args.repeat):
            start = time.process_time()
            plan = make_plan(t, c, entries, "fast")
            times.append((time.process_time() - start) * 1000)
        memory = plan.stats.get("memory", {})
        print(f"{label}: R {plan.input_rate:.1f} tuples/s, {sum(plan.instances.values())} instances, "
              f"CPU ms median {statistics.median(times):.0f} (runs {', '.join(f'{x:.0f}' for x in times)}), "
              f"machines over their memory {len(memory.get('over', []))}, where it binds {len(memory.get('binding', []))}")


if __name__ == "__main__":
    main()
