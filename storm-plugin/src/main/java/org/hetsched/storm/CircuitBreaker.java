package org.hetsched.storm;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Keeps a failing planner from slowing every Nimbus round.
 *
 * <p>After {@code failureThreshold} planner failures in a row the breaker opens: calls are skipped
 * (topologies fall back at once) for a backoff period. Then one call is let through; if it fails
 * the breaker opens again for twice as long (up to a maximum), if it succeeds the breaker closes.
 * Thread-safe: planner calls run on the plugin's background threads, Nimbus's round reads it.
 */
public final class CircuitBreaker {
    private final int failureThreshold;
    private final Duration initialBackoff;
    private final Duration maxBackoff;
    private final LongSupplier nowMillis;

    private int consecutiveFailures;
    private long backoffMillis;
    private long openUntilMillis;

    public CircuitBreaker(int failureThreshold, Duration initialBackoff, Duration maxBackoff, LongSupplier nowMillis) {
        this.failureThreshold = failureThreshold;
        this.initialBackoff = initialBackoff;
        this.maxBackoff = maxBackoff;
        this.nowMillis = nowMillis;
    }

    /** True when the planner may be called now: the breaker is closed or its backoff has run out. */
    public synchronized boolean allowsCall() {
        return backoffMillis == 0 || nowMillis.getAsLong() >= openUntilMillis;
    }

    public synchronized void recordSuccess() {
        consecutiveFailures = 0;
        backoffMillis = 0;
    }

    public synchronized void recordFailure() {
        consecutiveFailures++;
        if (consecutiveFailures < failureThreshold) {
            return;
        }
        backoffMillis = backoffMillis == 0
                ? initialBackoff.toMillis()
                : Math.min(backoffMillis * 2, maxBackoff.toMillis());
        openUntilMillis = nowMillis.getAsLong() + backoffMillis;
    }

    /** The current backoff, zero while the breaker is closed. */
    public synchronized Duration backoff() {
        return Duration.ofMillis(backoffMillis);
    }

    /** Why a call is skipped, for the log and the topology status. */
    public synchronized String whyOpen() {
        long waitMillis = Math.max(0, openUntilMillis - nowMillis.getAsLong());
        return "planner skipped: " + consecutiveFailures + " calls failed in a row, circuit open for "
                + backoffMillis + " ms, next try in " + waitMillis + " ms";
    }
}
