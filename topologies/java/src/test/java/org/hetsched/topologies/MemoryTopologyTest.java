package org.hetsched.topologies;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.storm.generated.StormTopology;
import org.junit.jupiter.api.Test;

class MemoryTopologyTest {

    @Test
    void aMemoryBoltHoldsWholeMegabytesWrittenPageByPage() {
        List<byte[]> held = MemoryBolt.hold(3);
        assertEquals(3, held.size());
        for (byte[] block : held) {
            assertEquals(1024 * 1024, block.length);
        }
        assertEquals((byte) (2 + 4096), held.get(2)[4096], "every page is written, so the memory is resident");
        assertEquals(0, new MemoryBolt(0, 8).heldMb(), "nothing is held before the bolt starts");
        assertThrows(IllegalArgumentException.class, () -> new MemoryBolt(0, -1));
    }

    @Test
    void theHoldBoltsDeclareTheirMemoryToStorm() {
        StormTopology topology = MemoryTopology.build(3, 100, 150);
        assertEquals(3, topology.get_bolts().get("hold").get_common().get_parallelism_hint());
        String conf = topology.get_bolts().get("hold").get_common().get_json_conf();
        assertTrue(conf.contains("\"topology.component.resources.onheap.memory.mb\":150.0"), conf);
    }
}
