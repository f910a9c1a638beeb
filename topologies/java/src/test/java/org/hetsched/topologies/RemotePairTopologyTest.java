package org.hetsched.topologies;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.apache.storm.generated.StormTopology;
import org.junit.jupiter.api.Test;

class RemotePairTopologyTest {

    @Test
    void thePacerAllowsWholeTuplesAtTheRateAndNoMore() {
        PacedSpout.Pacer pacer = new PacedSpout.Pacer(100.0, 0L);
        assertEquals(0, pacer.due(9_000_000L), "9 ms at 100/s: no whole tuple yet");
        assertEquals(1, pacer.due(10_000_000L));
        pacer.sent(1);
        assertEquals(49, pacer.due(500_000_000L), "half a second: 50 in all, 1 sent");
        assertEquals(0, new PacedSpout.Pacer(0.0, 0L).due(5_000_000_000L), "rate 0 pauses");
    }

    @Test
    void theRateFileGivesARateOrNone() {
        assertEquals(250.0, PacedSpout.parseRate("{\"rate\": 250.0}"));
        assertEquals(0.0, PacedSpout.parseRate("{\"rate\":0}"));
        assertNull(PacedSpout.parseRate("{\"rate\": -1}"));
        assertNull(PacedSpout.parseRate("{}"));
        assertEquals(Double.POSITIVE_INFINITY, PacedSpout.parseRate("{\"rate\": null}"), "null: unpaced");
    }

    @Test
    void anUnpacedPacerAlwaysHasTuplesDue() {
        PacedSpout.Pacer pacer = new PacedSpout.Pacer(Double.POSITIVE_INFINITY, 0L);
        assertEquals(Integer.MAX_VALUE, pacer.due(0L), "at once, capped by the spout's most per call");
        pacer.sent(200);
        assertEquals(Integer.MAX_VALUE, pacer.due(1L));
    }

    @Test
    void aPairHasASinkAndTheSpoutAloneHasNone() {
        StormTopology pair = RemotePairTopology.build(10, 0, false);
        assertEquals(1, pair.get_bolts().size());
        assertEquals(0, RemotePairTopology.build(10, 0, true).get_bolts().size());
    }
}
