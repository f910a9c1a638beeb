package org.hetsched.heldout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.storm.generated.ComponentCommon;
import org.apache.storm.generated.StormTopology;
import org.junit.jupiter.api.Test;

class ClickstreamTest {
    @Test
    void recommendEmitsAboutSevenTenthsOfATuplePerEvent() {
        ClickEvents events = new ClickEvents(7);
        int n = 20_000;
        long out = 0;
        long none = 0;
        for (int i = 0; i < n; i++) {
            String[] event = ParseBolt.parse(events.next());
            assertNotNull(event);
            int k = RecommendBolt.items(event[2]).length;
            assertTrue(k >= 0 && k <= 4);
            out += k;
            none += k == 0 ? 1 : 0;
        }
        double alpha = (double) out / n;
        // 0.25 * 1.5 + 0.15 * 2.5 = 0.75 expected
        assertTrue(alpha > 0.70 && alpha < 0.80, "output ratio " + alpha);
        assertTrue(none > n / 2, "views (no items) are the majority");
    }

    @Test
    void usersAreSkewed() {
        ClickEvents events = new ClickEvents(3);
        int n = 20_000;
        int heavy = 0;
        for (int i = 0; i < n; i++) {
            int user = Integer.parseInt(ParseBolt.parse(events.next())[0].substring(1));
            heavy += user < 32 ? 1 : 0;
        }
        // P(u^2 < 0.032) = sqrt(0.032) ~ 0.18, against 0.032 for uniform users
        assertTrue(heavy > n * 0.15 && heavy < n * 0.21, "heavy users' share " + heavy);
    }

    @Test
    void parseRefusesShortLines() {
        assertNull(ParseBolt.parse("u1,s2,view"));
        assertArrayEquals(new String[] {"u1", "buy", "i3|i4"}, ParseBolt.parse("u1,s2,buy,i3|i4"));
        assertArrayEquals(new String[] {"u1", "view", ""}, ParseBolt.parse("u1,s2,view,"));
        assertEquals(0, RecommendBolt.items("").length);
    }

    @Test
    void scoreIsAHashChainPerUser() {
        HashScoreBolt.UserScores a = new HashScoreBolt.UserScores(3);
        HashScoreBolt.UserScores b = new HashScoreBolt.UserScores(3);
        byte[] first = a.update("u1", "view,");
        assertArrayEquals(first, b.update("u1", "view,"), "deterministic");
        byte[] second = a.update("u1", "view,");
        assertFalse(java.util.Arrays.equals(first, second), "the same event again chains on the last score");
        assertArrayEquals(first, a.update("u2", "view,"), "another user starts their own chain");
        assertEquals(2, a.users());
        assertFalse(java.util.Arrays.equals(first, new HashScoreBolt.UserScores(4).update("u1", "view,")),
                "rounds change the score");
    }

    @Test
    void everyComponentHasSpareTasks() {
        StormTopology topology = ClickstreamTopology.build(10);
        Map<String, ComponentCommon> commons = new java.util.HashMap<>();
        topology.get_spouts().forEach((id, spout) -> commons.put(id, spout.get_common()));
        topology.get_bolts().forEach((id, bolt) -> commons.put(id, bolt.get_common()));
        assertEquals(ClickstreamTopology.EXECUTORS.keySet(), commons.keySet());
        commons.forEach((id, common) -> {
            Map<?, ?> conf = org.apache.storm.utils.Utils.parseJson(common.get_json_conf());
            int tasks = ((Number) conf.get("topology.tasks")).intValue();
            assertEquals(ClickstreamTopology.TASKS.get(id), tasks, id);
            assertEquals(ClickstreamTopology.EXECUTORS.get(id), common.get_parallelism_hint(), id);
            assertTrue(tasks > common.get_parallelism_hint(), id + " can gain executors by a rebalance");
        });
        assertEquals(2, topology.get_bolts().get("sink").get_common().get_inputs_size());
        assertEquals(100, ClickstreamTopology.conf().get("topology.max.spout.pending"));
    }
}
