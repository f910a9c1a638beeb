package org.hetsched.storm;

import java.time.Duration;

/**
 * When a topology running by plan is re-placed onto a new plan after a machine joins or returns (Nimbus's storm.yaml,
 * read by {@link SchedulerSettings#replanSettings}).
 *
 * @param minGain     the new plan's predicted input rate must beat the running placement's by this fraction (0.10:
 *                    10%): a re-placement restarts every worker of the topology
 * @param minInterval a topology is re-placed at most once per this interval, however often machines come and go
 */
public record ReplanSettings(double minGain, Duration minInterval) {
}
