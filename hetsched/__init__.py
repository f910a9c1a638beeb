"""The ``hetsched`` command line. No logic of its own: each subcommand calls into planner, cluster, topologies, spark_profiling or bench."""
