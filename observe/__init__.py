"""Watching a running Storm cluster: the one Nimbus client, tuple counts, rates, CPU and progress.

Modules, one concept each:

- :mod:`.nimbus`: the only Nimbus Thrift client (leader, summary, topology info and conf, submit, kill).
- :mod:`.counts`: per-executor counts parsed from a ``TopologyInfo`` (pure).
- :mod:`.rates`: tuples/s per component from timed count samples, each executor between its own stats steps (pure).
- :mod:`.window`: polling Nimbus through a measurement window (I/O around :mod:`.rates`).
- :mod:`.machines`: :class:`ClusterHandle`, what any cluster must tell about its machines.
- :mod:`.progress`: the one ``Reporter`` protocol, a rich reporter and a quiet one.

Nothing here imports ``cluster``, ``topologies``, ``bench`` or ``spark_profiling``: they import this.
"""
