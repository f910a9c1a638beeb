package org.hetsched.topologies;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;

/**
 * A topology whose memory binds: Storm's TestWordSpout into {@code hold}, {@link MemoryBolt}s that each hold
 * {@code memoryMb} MB, declared to Storm as their on-heap memory ({@code setMemoryLoad}) so that RAS and the
 * hetsched plugin know it (docs/results/README.md, "Memory as a hard limit").
 *
 * <pre>
 * hetsched submit --jar topologies/java/target/hetsched-java-topologies.jar \
 *     --class org.hetsched.topologies.MemoryTopology memory-java 4 350 400
 * </pre>
 * Arguments: the topology name (default {@code memory-java}), the parallelism of {@code hold} (default 4), the MB
 * each holds (default 350) and the MB declared for each (default 400: what it holds and its share of the JVM).
 */
public final class MemoryTopology {
    /** CPU microseconds per tuple of a hold bolt: light, the memory is the point. */
    static final long CPU_MICROS = 2000;

    private MemoryTopology() {
    }

    public static StormTopology build(int holds, int memoryMb, double declaredMb) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("words", new TestWordSpout(), 1);
        builder.setBolt("hold", new MemoryBolt(CPU_MICROS, memoryMb), holds).shuffleGrouping("words")
                .setMemoryLoad(declaredMb);
        return builder.createTopology();
    }

    public static void main(String[] args) throws Exception {
        String name = args.length > 0 ? args[0] : "memory-java";
        int holds = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int memoryMb = args.length > 2 ? Integer.parseInt(args[2]) : 350;
        double declaredMb = args.length > 3 ? Double.parseDouble(args[3]) : 400;
        Config conf = new Config();
        StormSubmitter.submitTopology(name, conf, build(holds, memoryMb, declaredMb));
    }
}
