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
    public static final String MIN_RATE = "hetsched.min.rate";
    public static final String TARGET_RATE = "hetsched.target.rate";
    public static final int DEFAULT_PRIORITY = 29;

    /** Reads the three keys; a malformed value is a {@link PlanFault} naming the key. */
    public static TenantSettings fromConf(Map<String, Object> conf) throws PlanFault {
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
        double minRate = rate(conf, MIN_RATE, true);
        Double targetRate = conf.get(TARGET_RATE) == null ? null : rate(conf, TARGET_RATE, false);
        if (targetRate != null && targetRate < minRate) {
            throw PlanFault.topologyConf(TARGET_RATE + " (" + targetRate + ") is below " + MIN_RATE + " (" + minRate + ")");
        }
        return new TenantSettings(priority, minRate, targetRate);
    }

    private static double rate(Map<String, Object> conf, String key, boolean zeroAllowed) throws PlanFault {
        Object value = conf.get(key);
        if (value == null) {
            return 0.0;
        }
        double d;
        try {
            d = value instanceof Number n ? n.doubleValue() : Double.parseDouble(value.toString().trim());
        } catch (NumberFormatException e) {
            d = Double.NaN;
        }
        if (!Double.isFinite(d) || d < 0 || (!zeroAllowed && d == 0)) {
            throw PlanFault.topologyConf(key + " must be a " + (zeroAllowed ? "non-negative" : "positive")
                    + " number of tuples/s, got '" + value + "'");
        }
        return d;
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
