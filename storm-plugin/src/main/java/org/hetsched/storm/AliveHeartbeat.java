package org.hetsched.storm;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the planner, from a planner thread and at most every {@link #INTERVAL_MS}, which topologies the cluster
 * runs, so the ledger releases a killed topology's share at once instead of when its registration expires; the
 * answer names those the ledger refuses now (after a priority change), which the next round evicts.
 * One message at a time, on a thread of its own (never queued before plan requests); a failed one is only logged
 * (the next round sends again).
 */
final class AliveHeartbeat {
    private static final Logger LOG = LoggerFactory.getLogger(AliveHeartbeat.class);
    static final long INTERVAL_MS = 5_000;

    private final PlannerClient planner;
    private final ExecutorService executor = Executors.newSingleThreadExecutor(task -> {
        Thread thread = new Thread(task, "hetsched-heartbeat");
        thread.setDaemon(true);
        return thread;
    });
    private final LongSupplier nowMillis;
    private CompletableFuture<Void> pending = CompletableFuture.completedFuture(null);
    private long lastMillis = Long.MIN_VALUE;
    private final AtomicReference<Refused> refused = new AtomicReference<>();

    /** What the ledger refused when asked at {@code askedMillis}: the running topologies to evict. */
    record Refused(long askedMillis, List<Plan.Evicted> topologies) {
    }

    AliveHeartbeat(PlannerClient planner, LongSupplier nowMillis) {
        this.planner = planner;
        this.nowMillis = nowMillis;
    }

    void stop() {
        executor.shutdownNow();
    }

    /** The refusals of the last answer not yet taken, or null: each answer is acted on once. */
    Refused takeRefused() {
        return refused.getAndSet(null);
    }

    /** Sends the names of every topology Nimbus lists, unless one is under way or the last went out lately. */
    void send(Topologies topologies) {
        long now = nowMillis.getAsLong();
        if (!pending.isDone() || lastMillis != Long.MIN_VALUE && now - lastMillis < INTERVAL_MS) {
            return;
        }
        List<String> names = topologies.getTopologies().stream().map(TopologyDetails::getName).sorted().toList();
        lastMillis = now;
        try {
            pending = CompletableFuture.runAsync(() -> {
                try {
                    List<Plan.Evicted> evicted = planner.sendAlive(names);
                    refused.set(evicted.isEmpty() ? null : new Refused(now, evicted));
                } catch (PlanFault fault) {
                    LOG.debug("hetsched: telling the planner which topologies run failed: {}", fault.reason());
                }
            }, executor);
        } catch (RejectedExecutionException e) {
            LOG.debug("hetsched: the planner threads refused the heartbeat: {}", e.getMessage());
        }
    }
}
