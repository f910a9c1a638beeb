package org.hetsched.topologies;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.storm.topology.OutputFieldsGetter;
import org.apache.storm.tuple.Fields;
import org.junit.jupiter.api.Test;

class CpuWorkTest {

    @Test
    void spendsAtLeastTheAskedCpuTimeAndNotMuchMore() {
        CpuWork work = new CpuWork();
        work.spend(2_000, 1); // warm the JIT
        long before = work.threadCpuNanos();
        long rounds = work.spend(20_000, 2);
        long spentMicros = (work.threadCpuNanos() - before) / 1_000;
        assertTrue(rounds > 0);
        assertTrue(spentMicros >= 20_000, "spent " + spentMicros + " us");
        assertTrue(spentMicros < 40_000, "spent " + spentMicros + " us, far more than asked");
    }

    @Test
    void moreTimeTakesMoreRoundsAndZeroTakesNone() {
        CpuWork work = new CpuWork();
        work.spend(2_000, 1);
        assertEquals(0, work.spend(0, 3));
        long small = work.spend(2_000, 4);
        long large = work.spend(20_000, 5);
        assertTrue(large > 3 * small, small + " rounds for 2 ms, " + large + " for 20 ms");
    }

    @Test
    void differentSeedsGiveDifferentWork() {
        CpuWork a = new CpuWork();
        CpuWork b = new CpuWork();
        a.spend(1, 1);
        b.spend(1, 2);
        assertFalse(java.util.Arrays.equals(a.state(), b.state()));
    }

    @Test
    void boltDeclaresItsFieldsAndRefusesANegativeCost() {
        OutputFieldsGetter getter = new OutputFieldsGetter();
        new CpuWorkBolt(5000).declareOutputFields(getter);
        Fields declared = new Fields(getter.getFieldsDeclaration().get("default").get_output_fields());
        assertEquals(List.of("word"), declared.toList());

        OutputFieldsGetter two = new OutputFieldsGetter();
        new CpuWorkBolt(1, List.of("word", "count")).declareOutputFields(two);
        assertArrayEquals(new Object[] {"word", "count"},
                new ArrayList<>(two.getFieldsDeclaration().get("default").get_output_fields()).toArray());

        assertThrows(IllegalArgumentException.class, () -> new CpuWorkBolt(-1));
        assertThrows(IllegalArgumentException.class, () -> new CpuWorkBolt(1, List.of()));
        assertEquals(5000, new CpuWorkBolt(5000).cpuMicros());
    }

    @Test
    void theJavaTopologyHasTheFluxFilesComponentsAndParallelism() {
        org.apache.storm.generated.StormTopology topology = WordsCpuTopology.build(5000, WordsCpuTopology.parallelism("1, 3,1"));
        assertEquals(java.util.Set.of("words"), topology.get_spouts().keySet());
        assertEquals(java.util.Set.of("cpu", "count"), topology.get_bolts().keySet());
        assertEquals(3, topology.get_bolts().get("cpu").get_common().get_parallelism_hint());
        assertThrows(IllegalArgumentException.class, () -> WordsCpuTopology.parallelism("1,2"));
        assertThrows(IllegalArgumentException.class, () -> WordsCpuTopology.parallelism("1,0,1"));
    }
}
