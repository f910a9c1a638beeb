"""The end-to-end benchmark on a live Storm cluster: hetsched's plans against Storm's own schedulers.

One bench runs each topology with each scheduler, one after the other, on the
same local heterogeneous cluster and with the same profile set, and measures
after a warm-up over a fixed window: the throughputs (from Nimbus' counts),
each machine's CPU (from its cgroup), and the planner's prediction for the
placement Storm really made (read back from Nimbus).

Modules, from pure to I/O:

- :mod:`bench.settings`: what a bench runs (topologies, schedulers, window, ...).
- :mod:`bench.schedulers`: what each scheduler's run submits (parallelism, conf, RAS CPU points).
- :mod:`bench.measure`: the measurement maths (throughputs, CPU utilisation, prediction error).
- :mod:`bench.report`: the result as JSON and as rich tables; :mod:`bench.plots`: PNG figures.
- :mod:`bench.profiles`: which profile set (a shipped one, a file, or measured now).
- :mod:`bench.placement`: where Storm put every executor (Nimbus getTopologyInfo).
- :mod:`bench.planner_service`: the bench's own planning service on a free loopback port.
- :mod:`bench.run`: one run (submit, wait, warm up, measure, kill).
- :mod:`bench.experiment`: the whole bench (planner, cluster up, runs, cluster down, always).
"""
