"""The benchmark topologies in streamparse and their lein-free build and submit.

Micro-benchmarks of the paper (Linear, Diamond, Star) and two storm-benchmark
applications (RollingCount, UniqueVisitor). The Python components
(:mod:`topologies.spouts`, :mod:`topologies.bolts`) run inside Storm workers
through ``streamparse_run``; they must import nothing but the standard library,
streamparse and the small modules of this package, because this package is what
the topology jar carries in ``resources/``.
"""
