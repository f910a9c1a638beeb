"""Two applications of storm-benchmark (intel-hadoop/manuzhang), in streamparse.

storm-benchmark feeds ``split`` and ``view`` with local-or-shuffle grouping;
here it is shuffle, so the load split is the even one the planner predicts
whatever the placement. The second stream is fields-grouped as there.
"""
from __future__ import annotations

from streamparse import Grouping, Topology

from topologies.bolts import PageViewBolt, RollingCount as RollingCountBolt, SplitSentence, UniqueVisitors
from topologies.spouts import PageViewSpout, SentenceSpout


class RollingCount(Topology):
    """spout -> split -> rolling_count (fields grouping on the word); counts emitted on tick tuples."""

    spout = SentenceSpout.spec(name="spout")
    split = SplitSentence.spec(name="split", inputs=[spout])
    rolling_count = RollingCountBolt.spec(name="rolling_count", inputs={split: Grouping.fields("word")})


class UniqueVisitor(Topology):
    """spout -> view -> uniquer (fields grouping on the URL); visitor counts emitted on tick tuples."""

    spout = PageViewSpout.spec(name="spout")
    view = PageViewBolt.spec(name="view", inputs=[spout])
    uniquer = UniqueVisitors.spec(name="uniquer", inputs={view: Grouping.fields("url")})
