package org.hetsched.storm.metrics;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.LongAdder;

/**
 * Exact counters of one executor (all its tasks), bumped by the task hook on the executor's threads and read
 * by the worker's sampler thread; bumping never waits for a reader.
 */
final class ExecutorMetrics {
    final String component;
    final String profile;
    final boolean spout;
    /** A ShellBolt/ShellSpout: its work runs in a subprocess, whose CPU must be counted too. */
    final boolean shell;
    final NavigableSet<Integer> tasks = new ConcurrentSkipListSet<>();
    /** The executor thread's id (Thread.getId), 0 until the hook first runs on that thread. */
    volatile long threadId;

    final LongAdder executed = new LongAdder();
    final LongAdder emitted = new LongAdder();
    final LongAdder acked = new LongAdder();
    final LongAdder failed = new LongAdder();
    /** Source component to stream to count: two lookups and no allocation per tuple. */
    final ConcurrentHashMap<String, ConcurrentHashMap<String, LongAdder>> executedByStream = new ConcurrentHashMap<>();
    final ConcurrentHashMap<String, LongAdder> emittedByStream = new ConcurrentHashMap<>();

    ExecutorMetrics(String component, String profile, boolean spout) {
        this(component, profile, spout, false);
    }

    ExecutorMetrics(String component, String profile, boolean spout, boolean shell) {
        this.component = component;
        this.profile = profile;
        this.spout = spout;
        this.shell = shell;
    }

    /** Storm's own streams (acking, metrics, ticks, ...) are named {@code __...}; only user streams count. */
    static boolean userStream(String stream) {
        return stream != null && !stream.startsWith("__");
    }

    void onExecute(String sourceComponent, String stream) {
        if (userStream(stream) && !sourceComponent.startsWith("__")) {
            executed.increment();
            ConcurrentHashMap<String, LongAdder> streams = executedByStream.get(sourceComponent);
            if (streams == null) {
                streams = executedByStream.computeIfAbsent(sourceComponent, k -> new ConcurrentHashMap<>());
            }
            LongAdder count = streams.get(stream);
            if (count == null) {
                count = streams.computeIfAbsent(stream, k -> new LongAdder());
            }
            count.increment();
        }
    }

    void onEmit(String stream) {
        if (userStream(stream)) {
            emitted.increment();
            LongAdder count = emittedByStream.get(stream);
            if (count == null) {
                count = emittedByStream.computeIfAbsent(stream, k -> new LongAdder());
            }
            count.increment();
            if (spout) {
                executed.increment();
            }
        }
    }

    void onThread(long id) {
        if (threadId == 0) {
            threadId = id;
        }
    }

    /**
     * One record (docs/profiling-records.md) of this executor's counters now.
     *
     * @param worker      what the record shares with every other executor of the worker
     * @param tsSeconds   the sample time, unix seconds
     * @param threadCpu   the executor thread's CPU seconds, or a negative number when unknown
     * @param shellCpu    the CPU seconds of the executor's shell subprocesses, or a negative number when it has none
     * @param shellPid    the first shell subprocess's pid, or 0 when it has none
     */
    Map<String, Object> record(WorkerFacts worker, double tsSeconds, double threadCpu, double shellCpu, long shellPid) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("source", "worker");
        r.put("run_id", worker.topologyId());
        r.put("ts", tsSeconds);
        r.put("topology", worker.topology());
        r.put("component", component);
        r.put("profile", profile);
        r.put("task_id", tasks.isEmpty() ? -1 : tasks.first());
        r.put("executor", tasks.isEmpty() ? java.util.List.of(-1, -1) : java.util.List.of(tasks.first(), tasks.last()));
        r.put("pid", shellPid > 0 ? shellPid : worker.pid());
        r.put("worker_id", worker.host() + ":" + worker.port());
        r.put("machine", worker.machine());
        if (worker.machineType() != null) {
            r.put("machine_type", worker.machineType());
        }
        if (worker.machineCores() != null) {
            r.put("machine_cores", worker.machineCores());
        }
        r.put("executed", executed.sum());
        r.put("emitted", emitted.sum());
        Map<String, Long> inputs = new TreeMap<>();
        executedByStream.forEach((source, streams) -> streams.forEach((stream, n) -> inputs.put(source + ":" + stream, n.sum())));
        r.put("executed_by_stream", inputs);
        r.put("emitted_by_stream", sums(emittedByStream));
        if (spout) {
            r.put("acked", acked.sum());
            r.put("failed", failed.sum());
        }
        if (!(shell && shellCpu < 0)) {  // a shell executor's CPU without its subprocess's would be far too low
            r.put("cpu_seconds", Math.max(threadCpu, 0.0) + Math.max(shellCpu, 0.0));
        }
        if (threadCpu >= 0) {
            r.put("thread_cpu_seconds", threadCpu);
        }
        if (shellCpu >= 0) {
            r.put("subprocess_cpu_seconds", shellCpu);
        }
        if (worker.workerCpuSeconds() >= 0) {
            r.put("worker_cpu_seconds", worker.workerCpuSeconds());
        }
        r.put("cpu_basis", "thread");
        return r;
    }

    private static Map<String, Long> sums(Map<String, LongAdder> counters) {
        Map<String, Long> out = new TreeMap<>();
        counters.forEach((k, v) -> out.put(k, v.sum()));
        return out;
    }

    /**
     * What every record of one worker shares at one sample.
     *
     * @param machineType  the supervisor's {@code machine-type} meta, or null
     * @param machineCores the supervisor's {@code cores} meta, or null (records then lack machine_cores)
     * @param workerCpuSeconds the worker JVM's CPU seconds, or a negative number when unknown
     */
    record WorkerFacts(String topology, String topologyId, String host, int port, long pid, String machine,
                       String machineType, Double machineCores, double workerCpuSeconds) {
    }
}
