package org.hetsched.storm.metrics;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.lang.management.ThreadMXBean;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.storm.Config;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.utils.Utils;
import org.hetsched.storm.PlanFault;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's one sampler: every interval it reads each registered executor's counters and CPU times into a
 * record, puts the records in a bounded buffer and ships what the buffer holds in batches to the planning service.
 *
 * <p>It runs on its own daemon thread. A batch that fails (service down, timeout, 5xx) is sent again later with the
 * same batch id, so the service stores it once; meanwhile new records queue in the buffer, whose oldest are dropped
 * and counted when it is full. Executors only ever touch their counters.
 */
final class WorkerMetrics implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerMetrics.class);
    static final int MAX_BATCH_RECORDS = 500;
    static final Duration SEND_TIMEOUT = Duration.ofSeconds(10);

    private static WorkerMetrics instance;

    private final List<ExecutorMetrics> executors = new CopyOnWriteArrayList<>();
    private final MetricsSettings settings;
    private final ExecutorMetrics.WorkerFacts identity;
    private final Batch.WorkerIdentity worker;
    private final RecordBuffer buffer;
    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    private final HttpClient http;
    private final Shipper shipper;
    private long failures;
    private String lastFault;

    private WorkerMetrics(MetricsSettings settings, ExecutorMetrics.WorkerFacts identity) {
        this.settings = settings;
        this.identity = identity;
        this.worker = new Batch.WorkerIdentity(identity.host(), identity.port(), identity.pid(), identity.topologyId());
        this.buffer = new RecordBuffer(settings.bufferRecords());
        // HTTP/1.1: the default asks every request to upgrade to HTTP/2, which the service logs as a warning each time
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(3)).build();
        this.shipper = new Shipper(buffer, MAX_BATCH_RECORDS, this::send);
    }

    /** Adds an executor to this worker's sampler, starting the sampler with the first one. */
    static synchronized void register(Map<String, Object> conf, TopologyContext context, ExecutorMetrics executor) {
        if (instance == null) {
            MetricsSettings settings = MetricsSettings.fromConf(conf);
            String host;
            try {
                host = Utils.hostname();
            } catch (Exception e) {
                host = "unknown";
            }
            String topology = String.valueOf(conf.getOrDefault(Config.TOPOLOGY_NAME, context.getStormId()));
            ExecutorMetrics.WorkerFacts identity = new ExecutorMetrics.WorkerFacts(topology, context.getStormId(), host,
                    context.getThisWorkerPort(), ProcessHandle.current().pid(),
                    settings.machineId() != null ? settings.machineId() : host,
                    settings.machineType(), settings.machineCores(), -1);
            instance = new WorkerMetrics(settings, identity);
            if (settings.fault() != null) {
                LOG.warn("hetsched metrics: {}; using the defaults", settings.fault());
            }
            if (settings.batchesUrl() == null) {
                LOG.warn("hetsched metrics: neither {} nor hetsched.planner.url is set: records are not shipped",
                        MetricsSettings.METRICS_URL);
            }
            if (settings.machineCores() == null) {
                LOG.warn("hetsched metrics: this supervisor's supervisor.scheduler.meta has no 'cores': records go without "
                        + "machine_cores and the aggregation cannot use them");
            }
            Thread thread = new Thread(instance, "hetsched-metrics");
            thread.setDaemon(true);
            thread.start();
            LOG.info("hetsched metrics: sampling every {} ms, shipping to {}, buffer of {} records", settings.intervalMs(),
                    settings.batchesUrl(), settings.bufferRecords());
        }
        instance.executors.add(executor);
    }

    @Override
    public void run() {
        long next = System.currentTimeMillis() + settings.intervalMs();
        while (!Thread.currentThread().isInterrupted()) {
            try {
                long wait = next - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
                next += settings.intervalMs();
                sample();
                if (settings.batchesUrl() != null) {
                    ship();
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                LOG.warn("hetsched metrics: a sample failed: {}", e.toString());
            }
        }
    }

    private void sample() {
        double ts = System.currentTimeMillis() / 1000.0;
        double workerCpu = os instanceof com.sun.management.OperatingSystemMXBean sun
                ? sun.getProcessCpuTime() / 1e9 : -1;
        ExecutorMetrics.WorkerFacts facts = new ExecutorMetrics.WorkerFacts(identity.topology(), identity.topologyId(),
                identity.host(), identity.port(), identity.pid(), identity.machine(), identity.machineType(),
                identity.machineCores(), workerCpu);
        for (ExecutorMetrics e : executors) {
            if (e.threadId == 0) {
                continue;  // not run yet: a shell executor may not have its subprocess, so its pid would be the worker's
            }
            long ns = threads.getThreadCpuTime(e.threadId);
            if (ns < 0) {
                continue;  // the executor thread has ended: the worker is shutting down
            }
            double threadCpu = ns / 1e9;
            double shellCpu = -1;
            long shellPid = 0;
            boolean shellGone = false;
            for (int task : e.tasks) {
                long pid = ShellPids.of(task);
                if (pid > 0) {
                    OptionalDouble cpu = ProcStat.cpuSeconds(pid);
                    if (cpu.isPresent()) {
                        shellCpu = Math.max(shellCpu, 0) + cpu.getAsDouble();
                        shellPid = shellPid == 0 ? pid : shellPid;
                    } else {
                        shellGone = true;
                    }
                }
            }
            if (shellGone) {
                continue;  // a subprocess has exited: its CPU is lost, so this sample would undercount
            }
            buffer.add(Json.write(e.record(facts, ts, threadCpu, shellCpu, shellPid)));
        }
    }

    private void ship() {
        Shipper.Outcome outcome = shipper.ship();
        if (outcome.recordsRefused() > 0) {
            LOG.warn("hetsched metrics: the service refused {} records for good: {}; they are dropped",
                    outcome.recordsRefused(), lastFault);
        }
        if (outcome.failed()) {
            if (failures++ == 0) {
                LOG.warn("hetsched metrics: cannot ship to {}: {}; keeping up to {} records and retrying",
                        settings.batchesUrl(), lastFault, settings.bufferRecords());
            }
        } else if (failures > 0) {
            LOG.info("hetsched metrics: the service answers again after {} failed sends; {} records dropped so far",
                    failures, buffer.dropped());
            failures = 0;
        }
    }

    private int send(Batch batch, long dropped) {
        String token;
        try {
            token = settings.token().get();
        } catch (PlanFault fault) {
            lastFault = fault.getMessage();
            return 401;
        }
        HttpRequest.Builder request = HttpRequest.newBuilder(settings.batchesUrl())
                .timeout(SEND_TIMEOUT)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(batch.body(worker, dropped), StandardCharsets.UTF_8));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        try {
            HttpResponse<String> answer = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
            lastFault = answer.statusCode() == 200 ? null : answer.body();
            return answer.statusCode();
        } catch (java.io.IOException e) {
            lastFault = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage());
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            lastFault = "interrupted";
            return -1;
        }
    }
}
