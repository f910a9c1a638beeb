package org.hetsched.heldout;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;

/**
 * heldout-java: a clickstream of five components, none of them the catalog's.
 *
 * <pre>
 * events (spout, free-running, acked) -shuffle-> parse -fields(user)-> score (SHA-256 chain per user) -fields(user)-> sink
 *                                                      -shuffle-------> recommend (0..4 out per in)  -fields(item)-> sink
 * </pre>
 *
 * Every component has more tasks than executors ({@link #TASKS}), so a rebalance can raise its executors up to
 * its task count without a resubmit. Arguments: the topology name (default {@code heldout-java}) and SHA-256
 * rounds per score update (default {@link #DEFAULT_ROUNDS}).
 *
 * <pre>
 * hetsched submit --jar benchmarks/heldout/java/target/hetsched-heldout.jar \
 *     --class org.hetsched.heldout.ClickstreamTopology heldout-java
 * </pre>
 */
public final class ClickstreamTopology {
    static final String DEFAULT_NAME = "heldout-java";
    static final int DEFAULT_ROUNDS = 8000;
    static final int MAX_SPOUT_PENDING = 100;

    /** Executors each component starts with. */
    static final Map<String, Integer> EXECUTORS = ordered("events", 1, "parse", 1, "score", 2, "recommend", 1, "sink", 1);
    /** Tasks of each component: the most executors a rebalance can give it. */
    static final Map<String, Integer> TASKS = ordered("events", 2, "parse", 4, "score", 6, "recommend", 4, "sink", 4);
    /** Profile keys (hetsched.component.profiles): none is a key of the project's own profile sets. */
    static final Map<String, String> PROFILES = Map.of(
            "events", "heldoutClickSpout", "parse", "heldoutParse", "score", "heldoutHashScore",
            "recommend", "heldoutRecommend", "sink", "heldoutCountSink");

    private ClickstreamTopology() {
    }

    private static Map<String, Integer> ordered(Object... pairs) {
        Map<String, Integer> map = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], (Integer) pairs[i + 1]);
        }
        return map;
    }

    /** The topology, with {@code rounds} SHA-256 rounds per score update. */
    public static StormTopology build(int rounds) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("events", new ClickEventSpout(), EXECUTORS.get("events")).setNumTasks(TASKS.get("events"));
        builder.setBolt("parse", new ParseBolt(), EXECUTORS.get("parse")).setNumTasks(TASKS.get("parse"))
                .shuffleGrouping("events");
        builder.setBolt("score", new HashScoreBolt(rounds), EXECUTORS.get("score")).setNumTasks(TASKS.get("score"))
                .fieldsGrouping("parse", new Fields("user"));
        builder.setBolt("recommend", new RecommendBolt(), EXECUTORS.get("recommend")).setNumTasks(TASKS.get("recommend"))
                .shuffleGrouping("parse");
        builder.setBolt("sink", new CountSink(), EXECUTORS.get("sink")).setNumTasks(TASKS.get("sink"))
                .fieldsGrouping("score", new Fields("user"))
                .fieldsGrouping("recommend", new Fields("item"));
        return builder.createTopology();
    }

    /** The topology's own conf: flow control by max.spout.pending, and each component's profile key. */
    static Config conf() {
        Config conf = new Config();
        conf.setMaxSpoutPending(MAX_SPOUT_PENDING);
        conf.put("hetsched.component.profiles", new LinkedHashMap<>(PROFILES));
        return conf;
    }

    public static void main(String[] args) throws Exception {
        String name = args.length > 0 ? args[0] : DEFAULT_NAME;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : DEFAULT_ROUNDS;
        if (rounds < 1) {
            throw new IllegalArgumentException("SHA-256 rounds per tuple must be at least 1, got " + rounds);
        }
        StormSubmitter.submitTopology(name, conf(), build(rounds));
    }
}
