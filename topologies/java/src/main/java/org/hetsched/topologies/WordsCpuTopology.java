package org.hetsched.topologies;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.testing.TestWordCounter;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;

/**
 * The Java API's twin of {@code topologies/flux/words-cpu.yaml}, an app main class as {@code storm jar} runs it:
 * Storm's TestWordSpout, a {@link CpuWorkBolt}, Storm's TestWordCounter.
 *
 * <pre>
 * hetsched submit --jar topologies/java/target/hetsched-java-topologies.jar \
 *     --class org.hetsched.topologies.WordsCpuTopology words-cpu-java 5000 2,2,1
 * </pre>
 * Arguments: the topology name (default {@code words-cpu-java}), CPU microseconds per tuple (default 5000) and the
 * parallelism of words, cpu and count (default {@code 2,2,1}).
 */
public final class WordsCpuTopology {
    private WordsCpuTopology() {
    }

    /** The topology for these costs and parallelism hints (words, cpu, count). */
    public static StormTopology build(long cpuMicros, int[] parallelism) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("words", new TestWordSpout(), parallelism[0]);
        builder.setBolt("cpu", new CpuWorkBolt(cpuMicros), parallelism[1]).shuffleGrouping("words");
        builder.setBolt("count", new TestWordCounter(), parallelism[2]).fieldsGrouping("cpu", new Fields("word"));
        return builder.createTopology();
    }

    static int[] parallelism(String text) {
        String[] parts = text.split(",");
        if (parts.length != 3) {
            throw new IllegalArgumentException("parallelism must be three whole numbers (words,cpu,count), got '" + text + "'");
        }
        int[] result = new int[3];
        for (int i = 0; i < 3; i++) {
            result[i] = Integer.parseInt(parts[i].trim());
            if (result[i] < 1) {
                throw new IllegalArgumentException("parallelism must be at least 1, got '" + text + "'");
            }
        }
        return result;
    }

    public static void main(String[] args) throws Exception {
        String name = args.length > 0 ? args[0] : "words-cpu-java";
        long cpuMicros = args.length > 1 ? Long.parseLong(args[1]) : 5000;
        int[] parallelism = parallelism(args.length > 2 ? args[2] : "2,2,1");
        Config conf = new Config();
        conf.put("hetsched.component.profiles",
                java.util.Map.of("words", "testWordSpout", "cpu", "cpuWork5ms", "count", "testWordCounter"));
        StormSubmitter.submitTopology(name, conf, build(cpuMicros, parallelism));
    }
}
