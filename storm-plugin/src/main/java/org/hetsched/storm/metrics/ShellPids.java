package org.hetsched.storm.metrics;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Task id to the pid of its ShellBolt/ShellSpout subprocess, in this worker; filled by {@link PidRecordingLogHandler}. */
final class ShellPids {
    private static final Map<Integer, Long> BY_TASK = new ConcurrentHashMap<>();

    private ShellPids() {
    }

    static void put(int taskId, long pid) {
        BY_TASK.put(taskId, pid);
    }

    static long of(int taskId) {
        return BY_TASK.getOrDefault(taskId, 0L);
    }
}
