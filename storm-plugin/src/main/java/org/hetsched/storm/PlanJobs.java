package org.hetsched.storm;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Planner requests in flight, at most one per topology: started from Nimbus's round, answered on a plugin thread,
 * taken by a later round (or the same one, when the answer comes within its budget).
 *
 * @param <A> what a request answers
 */
final class PlanJobs<A> {
    /** One request, and when it was started (the plugin's clock, ms). */
    record Job<A>(CompletableFuture<A> answer, long startedMillis) {
        boolean done() {
            return answer.isDone();
        }
    }

    private final Map<String, Job<A>> jobs = new ConcurrentHashMap<>();
    private final LongSupplier nowMillis;

    PlanJobs(LongSupplier nowMillis) {
        this.nowMillis = nowMillis;
    }

    boolean has(String topologyId) {
        return jobs.containsKey(topologyId);
    }

    Job<A> get(String topologyId) {
        return jobs.get(topologyId);
    }

    void start(String topologyId, CompletableFuture<A> answer) {
        jobs.put(topologyId, new Job<>(answer, nowMillis.getAsLong()));
    }

    /** The answer of a request that is done, removed; it must be done. */
    A take(String topologyId) {
        return jobs.remove(topologyId).answer().join();
    }

    /** Requests not answered yet. */
    int inFlight() {
        return (int) jobs.values().stream().filter(job -> !job.done()).count();
    }

    /** Drops the requests of topologies that are gone (killed): their answers are not needed. */
    void retainOnly(Predicate<String> running) {
        jobs.keySet().removeIf(id -> !running.test(id));
    }

    /** Waits, at most until {@code deadlineMillis} of the plugin's clock, for the requests under way. */
    void await(long deadlineMillis) {
        CompletableFuture<?>[] pending = jobs.values().stream().map(Job::answer)
                .filter(answer -> !answer.isDone()).toArray(CompletableFuture[]::new);
        long left = deadlineMillis - nowMillis.getAsLong();
        if (pending.length == 0 || left <= 0) {
            return;
        }
        try {
            CompletableFuture.allOf(pending).get(left, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            // the rest is taken in a later round
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
