package org.hetsched.topologies;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.storm.task.TopologyContext;

/**
 * A {@link CpuWorkBolt} that also holds a fixed amount of memory for its whole life: {@code memoryMb} MB of heap,
 * allocated and written page by page when it starts, so the memory is really resident in the worker (not only
 * reserved), as a component with a large state (a cache, a window, a model) holds it.
 *
 * <p>It stands for a component whose memory is known, so a placement that puts more of them on a machine than its
 * memory holds really runs out there (docs/concepts/model.md, "Memory").
 */
public class MemoryBolt extends CpuWorkBolt {
    private static final long serialVersionUID = 1L;
    private static final int MB = 1024 * 1024;
    private static final int PAGE = 4096;

    private final int memoryMb;
    private transient List<byte[]> held;

    public MemoryBolt(Number cpuMicros, Number memoryMb) {
        super(cpuMicros);
        if (memoryMb == null || memoryMb.intValue() < 0) {
            throw new IllegalArgumentException("MemoryBolt needs a memory of at least 0 MB, got " + memoryMb);
        }
        this.memoryMb = memoryMb.intValue();
    }

    public int memoryMb() {
        return memoryMb;
    }

    @Override
    public void prepare(Map<String, Object> topoConf, TopologyContext context) {
        super.prepare(topoConf, context);
        held = hold(memoryMb);
    }

    /** {@code mb} blocks of 1 MB, every page written: resident, not only reserved. */
    static List<byte[]> hold(int mb) {
        List<byte[]> blocks = new ArrayList<>(mb);
        for (int i = 0; i < mb; i++) {
            byte[] block = new byte[MB];
            for (int at = 0; at < MB; at += PAGE) {
                block[at] = (byte) (i + at);
            }
            blocks.add(block);
        }
        return blocks;
    }

    /** MB held now (0 before prepare). */
    public long heldMb() {
        return held == null ? 0 : held.size();
    }
}
