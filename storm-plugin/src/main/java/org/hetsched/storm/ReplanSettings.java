package org.hetsched.storm;

import java.time.Duration;
import java.util.Map;

/**
 * When a topology running by plan is re-placed onto a new plan after a machine joins or returns (Nimbus's storm.yaml).
 *
 * @param minGain     the new plan's predicted input rate must beat the running placement's by this fraction (0.10:
 *                    10%): a re-placement restarts every worker of the topology
 * @param minInterval a topology is re-placed at most once per this interval, however often machines come and go
 */
public record ReplanSettings(double minGain, Duration minInterval) {
    public static final String MIN_GAIN = "hetsched.replan.min.gain";
    public static final String MIN_INTERVAL_SECS = "hetsched.replan.min.interval.secs";

    public static ReplanSettings fromConf(Map<String, Object> conf) {
        double gain = number(conf, MIN_GAIN, 0.10);
        double interval = number(conf, MIN_INTERVAL_SECS, 600);
        return new ReplanSettings(gain, Duration.ofMillis((long) (interval * 1000)));
    }

    private static double number(Map<String, Object> conf, String key, double defaultValue) {
        Object value = conf.get(key);
        if (value == null) {
            return defaultValue;
        }
        double parsed;
        try {
            parsed = value instanceof Number n ? n.doubleValue() : Double.parseDouble(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a number, got '" + value + "'", e);
        }
        if (!(parsed >= 0) || Double.isInfinite(parsed)) {
            throw new IllegalArgumentException(key + " must be a finite number of at least 0, got " + value);
        }
        return parsed;
    }
}
