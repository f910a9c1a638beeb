package org.hetsched.storm.baselines;

import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.scheduler.TopologyDetails;

/**
 * A topology's wants in supervisor nodes, from its own conf, as the thesis's developers state them
 * (like the Isolation Scheduler's machine counts): desired nodes (sd) and, for SPS, minimum nodes (sm).
 * Each defaults to what needs no setting: desired = {@code topology.workers}, minimum = 1.
 */
public final class NodeDemands {
    public static final String SPS_NODES = "hetsched.sps.nodes";
    public static final String SPS_MIN_NODES = "hetsched.sps.nodes.min";
    public static final String DPS_NODES = "hetsched.dps.nodes";

    private NodeDemands() {
    }

    /** SPS's demand; a bad value is an {@link IllegalArgumentException} whose message names the key. */
    public static NodeShares.Demand sps(TopologyDetails topology, int priority) {
        Map<String, Object> conf = topology.getConf();
        int desired = whole(conf, SPS_NODES, Math.max(1, topology.getNumWorkers()));
        int minimum = whole(conf, SPS_MIN_NODES, 1);
        if (minimum > desired) {
            throw new IllegalArgumentException(SPS_MIN_NODES + " (" + minimum + ") must be at most "
                    + SPS_NODES + " (" + desired + ")");
        }
        return new NodeShares.Demand(topology.getId(), priority, desired, minimum);
    }

    /** DPS's demand (Table 4 has no minimum). */
    public static NodeShares.Demand dps(TopologyDetails topology, int priority) {
        int desired = whole(topology.getConf(), DPS_NODES, Math.max(1, topology.getNumWorkers()));
        return new NodeShares.Demand(topology.getId(), priority, desired, 1);
    }

    /** Storm's {@code topology.priority} (0 most important, 29 by default), checked. */
    public static int priority(TopologyDetails topology) {
        Object value = topology.getConf().get(Config.TOPOLOGY_PRIORITY);
        return value == null ? 29 : wholeFrom(Config.TOPOLOGY_PRIORITY, value, 0);
    }

    static int whole(Map<String, Object> conf, String key, int defaultValue) {
        Object value = conf.get(key);
        return value == null ? defaultValue : wholeFrom(key, value, 1);
    }

    static int wholeFrom(String key, Object value, int least) {
        long parsed;
        try {
            if (value instanceof Number n && n.doubleValue() != Math.rint(n.doubleValue())) {
                throw new NumberFormatException();
            }
            parsed = value instanceof Number n ? n.longValue() : Long.parseLong(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, got '" + value + "'");
        }
        if (parsed < least || parsed > 10_000) {
            throw new IllegalArgumentException(key + " must be between " + least + " and 10000, got " + parsed);
        }
        return (int) parsed;
    }
}
