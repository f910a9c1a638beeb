"""Profiling: turn the raw worker records collected on a running cluster into the planner's ProfileSet.

The raw record schema is :mod:`spark_profiling.records` (documented in docs/profiling-records.md);
the PySpark job is :mod:`spark_profiling.aggregate`; :mod:`spark_profiling.synthetic` makes seeded
records with known answers for tests and benchmarks.
"""
