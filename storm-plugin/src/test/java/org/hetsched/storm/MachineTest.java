package org.hetsched.storm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class MachineTest {
    @Test
    void reorderedPortsKeepEverythingElseOfTheMachine() {
        Machine machine = new Machine("sup-1", "large-1", "host-1", "large", 0.8, 2, List.of(6700, 6701), 2048.0);
        Machine reordered = machine.withUsablePorts(List.of(6701, 6700));
        assertEquals(List.of(6701, 6700), reordered.usablePorts());
        assertEquals(new Machine("sup-1", "large-1", "host-1", "large", 0.8, 2, List.of(6701, 6700), 2048.0), reordered);
    }
}
