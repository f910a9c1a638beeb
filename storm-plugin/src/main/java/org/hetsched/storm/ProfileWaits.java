package org.hetsched.storm;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * Topologies placed evenly because their own profiles cannot plan them ({@link ProfileGap}), and what each waits for:
 * a new version of its profile set, or other machine types in the cluster. Until one of those changes the planner
 * would answer the same, so it is not asked; the set's version is read at most every {@link #VERSION_CHECK_MS}.
 */
final class ProfileWaits {
    static final long VERSION_CHECK_MS = 30_000;

    /**
     * One topology's wait: {@code cause} is the status's sentence, {@code version} the set's version it was refused
     * with (null: not stored), {@code machineTypes} the cluster's types then.
     */
    record Wait(String profileSet, Long version, Set<String> machineTypes, String cause, long sinceMillis) {
        Wait {
            machineTypes = Set.copyOf(machineTypes);
        }
    }

    /** A background read of a set's newest version: null inside means not stored, an exception that it was not read. */
    private record VersionRead(CompletableFuture<Long> version, long startedMillis) {
    }

    private final Map<String, Wait> waits = new HashMap<>();
    private final Map<String, VersionRead> reads = new HashMap<>();

    void waitFor(String topologyId, Wait wait) {
        waits.put(topologyId, wait);
        reads.remove(topologyId);
    }

    Wait get(String topologyId) {
        return waits.get(topologyId);
    }

    boolean isWaiting(String topologyId) {
        return waits.containsKey(topologyId);
    }

    void forget(String topologyId) {
        waits.remove(topologyId);
        reads.remove(topologyId);
    }

    /** Drops the waits of topologies that are gone (killed). */
    void retainOnly(Predicate<String> running) {
        waits.keySet().removeIf(id -> !running.test(id));
        reads.keySet().removeIf(id -> !running.test(id));
    }

    Set<String> topologyIds() {
        return new TreeSet<>(waits.keySet());
    }

    /** Whether the set's version should be read now: none under way, and the last one started long enough ago. */
    boolean versionReadDue(String topologyId, long nowMillis) {
        VersionRead last = reads.get(topologyId);
        if (last == null) {
            return nowMillis - waits.get(topologyId).sinceMillis() >= VERSION_CHECK_MS;
        }
        return last.version().isDone() && nowMillis - last.startedMillis() >= VERSION_CHECK_MS;
    }

    void versionReadStarted(String topologyId, CompletableFuture<Long> version, long nowMillis) {
        reads.put(topologyId, new VersionRead(version, nowMillis));
    }

    /**
     * What changed since the topology began to wait, as a phrase for the log and status, or null where nothing did:
     * the cluster's machine types ({@code machineTypesNow}) or the set's version (the last read, once it is done).
     */
    String changed(String topologyId, Set<String> machineTypesNow) {
        Wait wait = waits.get(topologyId);
        if (wait == null) {
            return null;
        }
        if (!wait.machineTypes().equals(Set.copyOf(machineTypesNow))) {
            return "the machine types are now " + String.join(", ", new TreeSet<>(machineTypesNow)) + " (were "
                    + String.join(", ", new TreeSet<>(wait.machineTypes())) + ")";
        }
        VersionRead read = reads.get(topologyId);
        if (read == null || !read.version().isDone() || read.version().isCompletedExceptionally()) {
            return null;
        }
        Long now = read.version().join();
        if (Objects.equals(now, wait.version())) {
            return null;
        }
        if (now == null) {
            return null; // the set was deleted: still nothing to plan with
        }
        return wait.version() == null ? "profile set " + wait.profileSet() + " is now stored (version " + now + ")"
                : "profile set " + wait.profileSet() + " is now version " + now + " (was " + wait.version() + ")";
    }
}
