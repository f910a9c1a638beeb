"""A machine's CPU shared out among the tasks on it, one sampling interval at a time. Pure.

What a machine spends is more than its Python processes: the worker JVM (the Java half of
every ShellBolt/ShellSpout, serialization, transfer) and the supervisor run in the same cgroup
and under the same quota. The planner predicts a machine's load from its instances' profiles
(TCU = 100 e IR + MET), so a profile has to carry that cost too. Hence:

- a task alone on its machine is given the machine's whole CPU: its ``e`` and ``MET`` then
  include the JVM's cost per tuple and the supervisor's and worker's idle cost;
- tasks sharing a machine each get their own Python CPU plus a share of the rest (the
  machine's CPU less all the Python CPU) in proportion to the tuples each moved through the
  worker (executed + emitted), or evenly when none moved.
"""
from __future__ import annotations

from collections.abc import Mapping


def attribute(
    machine_cpu_s: float, process_cpu_s: Mapping[int, float], tuples_moved: Mapping[int, float]
) -> dict[int, float]:
    """CPU seconds of the machine charged to each task (by task id) over one interval."""
    tasks = list(process_cpu_s)
    if not tasks:
        return {}
    if len(tasks) == 1:
        return {tasks[0]: machine_cpu_s}
    rest = machine_cpu_s - sum(process_cpu_s.values())
    moved = sum(max(0.0, tuples_moved.get(t, 0.0)) for t in tasks)
    shares = {t: (max(0.0, tuples_moved.get(t, 0.0)) / moved if moved > 0 else 1.0 / len(tasks)) for t in tasks}
    return {t: process_cpu_s[t] + rest * shares[t] for t in tasks}
