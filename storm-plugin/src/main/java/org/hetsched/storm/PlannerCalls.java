package org.hetsched.storm;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every call the plugin makes to the planner goes through here: skipped while the circuit breaker is open, and its
 * outcome recorded there. The planner's own failures and answers slower than {@code hetsched.planner.slow.ms} count
 * against it; refusals of one request do not. What the plugin tells the planner it did ({@link #tell}) passes by the
 * breaker: that call's failure never changes how a topology is scheduled.
 */
final class PlannerCalls {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);

    /** One call to the planner. */
    @FunctionalInterface
    interface Call<T> {
        T run() throws PlanFault;
    }

    private final PlannerClient client;
    private final CircuitBreaker breaker;
    private final long slowMillis;
    private final LongSupplier nowMillis;

    PlannerCalls(PlannerClient client, CircuitBreaker breaker, long slowMillis, LongSupplier nowMillis) {
        this.client = client;
        this.breaker = breaker;
        this.slowMillis = slowMillis;
        this.nowMillis = nowMillis;
    }

    PlannerClient client() {
        return client;
    }

    boolean allowsCall() {
        return breaker.allowsCall();
    }

    String whyOpen() {
        return breaker.whyOpen();
    }

    /**
     * The call's answer, unless the breaker is open. Failures and slow answers go to the breaker as failures; other
     * answers close it only for plan calls ({@code answerCloses}), so a planner that serves reads but fails every
     * plan still trips it.
     */
    <T> T ask(Call<T> call, boolean answerCloses) throws PlanFault {
        if (!breaker.allowsCall()) {
            throw PlanFault.plannerSkipped(breaker.whyOpen());
        }
        long started = nowMillis.getAsLong();
        try {
            T answer = call.run();
            recordAnswer(nowMillis.getAsLong() - started, answerCloses);
            return answer;
        } catch (PlanFault fault) {
            if (fault.countsAgainstPlanner()) {
                breaker.recordFailure();
            } else {
                recordAnswer(nowMillis.getAsLong() - started, answerCloses);
            }
            throw fault;
        }
    }

    /**
     * Tells the planner what the plugin did without asking it first (a contingency applied, a repair placed) by binding
     * the plan the topology now runs by ({@code PUT /v1/assignments/{topology}}; the service records the events the
     * reason names, planner/events.py), on {@code executor}, never the caller's (Nimbus's) thread. The call neither
     * waits for the circuit breaker nor counts against it, so its failure never changes how any topology is scheduled:
     * a failure is one line in Nimbus's log, not retried. The future completes either way, never exceptionally.
     */
    CompletableFuture<Void> tell(String topologyName, String planId, String reason, Executor executor) {
        Runnable bind = () -> {
            try {
                client.bind(topologyName, planId, reason);
            } catch (PlanFault fault) {
                notTold(topologyName, planId, reason, fault.reason());
            } catch (RuntimeException e) {
                notTold(topologyName, planId, reason, e.toString());
            }
        };
        try {
            return CompletableFuture.runAsync(bind, executor);
        } catch (RejectedExecutionException e) {
            notTold(topologyName, planId, reason, "the plugin's thread for it refused the call: " + e.getMessage());
            return CompletableFuture.completedFuture(null);
        }
    }

    private static void notTold(String topologyName, String planId, String reason, String why) {
        LOG.warn("hetsched: topology {}: binding plan {} to tell the planner '{}' failed, so its events lack it "
                + "(scheduling is not affected): {}", topologyName, planId, reason,
                String.valueOf(why).replaceAll("\\s+", " "));
    }

    private void recordAnswer(long millis, boolean answerCloses) {
        if (millis > slowMillis) {
            LOG.warn("hetsched: the planner took {} ms to answer, over {} ({} ms): counted as a failure",
                    millis, SchedulerSettings.PLANNER_SLOW_MS, slowMillis);
            breaker.recordFailure();
        } else if (answerCloses) {
            breaker.recordSuccess();
        }
    }
}
