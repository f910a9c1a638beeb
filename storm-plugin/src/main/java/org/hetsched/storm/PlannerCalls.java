package org.hetsched.storm;

import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every call the plugin makes to the planner goes through here: skipped while the circuit breaker is open, and its
 * outcome recorded there. The planner's own failures and answers slower than {@code hetsched.planner.slow.ms} count
 * against it; refusals of one request do not.
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
