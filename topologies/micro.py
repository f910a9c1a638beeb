"""The paper's micro-benchmarks (its Fig. 5): Linear, Diamond and Star, all shuffle grouping.

Component ids and profile keys are those of the planner's fixtures, so a plan
made for one of these graphs applies to the running topology as it is.
"""
from __future__ import annotations

from streamparse import Topology

from topologies.bolts import HighCompute, LowCompute, MidCompute
from topologies.spouts import NumberSpout


class Linear(Topology):
    """spout -> low -> mid -> high."""

    spout = NumberSpout.spec(name="spout")
    low = LowCompute.spec(name="low", inputs=[spout])
    mid = MidCompute.spec(name="mid", inputs=[low])
    high = HighCompute.spec(name="high", inputs=[mid])


class Diamond(Topology):
    """spout -> low, spout -> mid, low -> high, mid -> high."""

    spout = NumberSpout.spec(name="spout")
    low = LowCompute.spec(name="low", inputs=[spout])
    mid = MidCompute.spec(name="mid", inputs=[spout])
    high = HighCompute.spec(name="high", inputs=[low, mid])


class Star(Topology):
    """spout1 -> high, spout2 -> high, high -> low, high -> mid."""

    spout1 = NumberSpout.spec(name="spout1")
    spout2 = NumberSpout.spec(name="spout2")
    high = HighCompute.spec(name="high", inputs=[spout1, spout2])
    low = LowCompute.spec(name="low", inputs=[high])
    mid = MidCompute.spec(name="mid", inputs=[high])
