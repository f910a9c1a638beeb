package org.hetsched.storm;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;

/**
 * What a topology asks when it shares the cluster with others, from its own conf: Storm's {@code topology.priority}
 * (0 most important, default 29), a guaranteed minimum input rate and an optional target rate (tuples/s). Sent as the
 * plan request's {@code tenant}: the planner plans it on what the other topologies leave, admits it only where its
 * minimum fits, and shares the rest by priority (docs/model.md, "Many topologies").
 *
 * @param priority   Storm's topology.priority
 * @param minRate    hetsched.min.rate, tuples/s (0 where not set)
 * @param targetRate hetsched.target.rate, tuples/s, or null for all the topology can get
 */
public record TenantSettings(int priority, double minRate, Double targetRate) {
    public static final String PRIORITY = "topology.priority";
    public static final String MIN_RATE = TopologySettings.MIN_RATE;
    public static final String TARGET_RATE = TopologySettings.TARGET_RATE;
    public static final int DEFAULT_PRIORITY = 29;

    /** Reads the three keys; a malformed value is a {@link PlanFault} naming the key. */
    public static TenantSettings fromConf(Map<String, Object> conf) throws PlanFault {
        return TopologySettings.tenantOf(conf);
    }

    static TenantSettings of(Map<String, Object> conf, double minRate, Double targetRate) throws PlanFault {
        int priority = DEFAULT_PRIORITY;
        Object raw = conf.get(PRIORITY);
        if (raw != null) {
            try {
                priority = raw instanceof Number n ? Math.toIntExact(n.longValue()) : Integer.parseInt(raw.toString().trim());
            } catch (NumberFormatException | ArithmeticException e) {
                throw PlanFault.topologyConf(PRIORITY + " must be a whole number, got '" + raw + "'");
            }
            if (priority < 0) {
                throw PlanFault.topologyConf(PRIORITY + " must be 0 (most important) or more, got " + priority);
            }
        }
        if (targetRate != null && targetRate < minRate) {
            throw PlanFault.topologyConf(TARGET_RATE + " (" + targetRate + ") is below " + MIN_RATE + " (" + minRate + ")");
        }
        return new TenantSettings(priority, minRate, targetRate);
    }

    /** The plan request's {@code tenant} object. */
    void writeTo(ObjectNode tenant) {
        tenant.put("priority", priority);
        tenant.put("min_rate", minRate);
        if (targetRate != null) {
            tenant.put("target_rate", targetRate);
        }
    }
}
