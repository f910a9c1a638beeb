"""The profiling collector: runs a topology on a live heterogeneous cluster and writes raw records.

``hetsched profile`` measures every kind of work (profile key) on every machine type. It pins
components to machines through a stored plan that the Nimbus plugin follows, steps the spout's
rate up until a machine saturates, and samples, per task, the tuples executed and emitted (Nimbus
Thrift), the CPU of the task's Python process (psutil) and of its machine (cgroup). The records
(docs/profiling-records.md) then go through the PySpark job of this package (``aggregate``).

Modules, one concept each:

- :mod:`.design`: which component runs on which machine in which round (pure).
- :mod:`.pinning`: the plan that pins a round's components, as a PlanRequest the planner stores.
- :mod:`.steps`: the rate schedule, capacity estimates and saturation (pure).
- :mod:`.attribution`: a machine's CPU shared out among the tasks on it (pure).
- :mod:`.recorder`: records as the aggregation job reads them, written as JSON lines.
- :mod:`.runner`: one round and the whole experiment on the cluster.
- :mod:`.prediction`: measured machine CPU against the profile's prediction (pure).

Counts, rates, CPU and processes are read through :mod:`observe` (Nimbus, and the cluster's
:class:`observe.machines.ClusterHandle`), so any cluster with a handle can be profiled. This package
imports ``observe`` and ``topologies``; the Spark job (``spark_profiling.aggregate``) imports none of it.
"""
