"""heldout-streamparse: a streamparse topology of the held-out set, declared as the catalog's are
(topologies/micro.py) but with costs unlike theirs.

    readings (spout, acked, free-running) -shuffle-> gate (very cheap, drops ~5 %)
        -fields(sensor)-> window (allocation-heavy: sorted copy of 4096 readings + a 1 MB buffer a tuple)
        -shuffle-> drift (zlib work, doubling at heldout.double.at / heldout.double.after.secs; the sink)

It is not in the catalog, so ``hetsched submit`` cannot name it: ``python -m benchmarks.heldout.run submit
heldout-streamparse`` submits it with the same conf ``hetsched submit`` writes (benchmarks/heldout/README.md).
"""
from __future__ import annotations

from streamparse import Grouping, Topology

from benchmarks.heldout.sensor_components import DriftBolt, GateBolt, ReadingSpout, WindowBolt

NAME = "heldout-streamparse"


class HeldoutStreamparse(Topology):
    readings = ReadingSpout.spec(name="readings", par=1)
    gate = GateBolt.spec(name="gate", inputs=[readings], par=1)
    window = WindowBolt.spec(name="window", inputs={gate: Grouping.fields("sensor")}, par=2)
    drift = DriftBolt.spec(name="drift", inputs=[window], par=1)
