package org.hetsched.storm.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class MetricsPartsTest {

    @Test
    void aFullBufferDropsItsOldestRecordsAndCountsThem() {
        RecordBuffer buffer = new RecordBuffer(3);
        for (int i = 1; i <= 5; i++) {
            buffer.add("r" + i);
        }
        assertEquals(2, buffer.dropped());
        assertEquals(List.of("r3", "r4"), buffer.take(2));
        assertEquals(List.of("r5"), buffer.take(10));
        assertEquals(List.of(), buffer.take(10));
        buffer.countDropped(7);
        assertEquals(9, buffer.dropped());
        assertThrows(IllegalArgumentException.class, () -> new RecordBuffer(0));
    }

    @Test
    void aBatchBodyCarriesItsIdTheWorkerTheDroppedCountAndTheRecordsAsGiven() {
        Batch batch = Batch.of(List.of("{\"a\":1}", "{\"b\":2}"));
        UUID.fromString(batch.id());
        String body = batch.body(new Batch.WorkerIdentity("h\"1", 6701, 42, "linear-1-17"), 5);
        assertTrue(body.startsWith("{\"batch_id\":\"" + batch.id() + "\",\"worker\":{"), body);
        assertTrue(body.contains("\"host\":\"h\\\"1\"") && body.contains("\"port\":6701") && body.contains("\"pid\":42")
                && body.contains("\"topology_id\":\"linear-1-17\""), body);
        assertTrue(body.endsWith(",\"dropped\":5,\"records\":[{\"a\":1},{\"b\":2}]}"), body);
        assertFalse(Batch.of(List.of()).id().equals(batch.id()), "every batch gets its own id");
    }

    @Test
    void procStatGivesUserPlusSystemSecondsEvenWithParenthesesInTheCommandName() {
        String line = "4242 (python3 (x) y) S 1 4242 4242 0 -1 4194304 1000 0 0 0 250 130 0 0 20 0 3 0 12345 0 0";
        assertEquals(3.8, ProcStat.cpuSeconds(line).getAsDouble(), 1e-9);
        assertFalse(ProcStat.cpuSeconds("garbage").isPresent());
        assertFalse(ProcStat.cpuSeconds("1 (a) S 1 2").isPresent());
        assertFalse(ProcStat.cpuSeconds("1 (a) S 1 2 3 4 5 6 7 8 9 x y 0 0").isPresent());
    }

    @Test
    void procStatReadsThisProcessAndNothingForAMissingOne() {
        OptionalDouble own = ProcStat.cpuSeconds(ProcessHandle.current().pid());
        assertTrue(own.isPresent() && own.getAsDouble() > 0, "this JVM has used some CPU: " + own);
        assertFalse(ProcStat.cpuSeconds(Long.MAX_VALUE).isPresent());
    }

    @Test
    void jsonEscapesTextAndWritesNonFiniteNumbersAsNull() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("s", "a\"b\\c\n\u0001");
        m.put("n", 1.5);
        m.put("nan", Double.NaN);
        m.put("l", List.of(1, 2L));
        m.put("b", true);
        m.put("z", null);
        assertEquals("{\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":1.5,\"nan\":null,\"l\":[1,2],\"b\":true,\"z\":null}", Json.write(m));
    }

    @Test
    void aBoltCountsUserStreamsOnlyAndItsRecordHasTheContractsFields() {
        ExecutorMetrics bolt = new ExecutorMetrics("high", "highCompute", false);
        bolt.tasks.add(8);
        bolt.tasks.add(7);
        bolt.onExecute("spout", "default");
        bolt.onExecute("spout", "default");
        bolt.onExecute("__system", "__tick");
        bolt.onExecute("__acker", "__ack_ack");
        bolt.onEmit("default");
        bolt.onEmit("__ack_init");
        ExecutorMetrics.WorkerFacts facts = new ExecutorMetrics.WorkerFacts("linear", "linear-1-17", "h", 6701, 900,
                "small-1", "small", 0.5, 12.0);
        Map<String, Object> r = bolt.record(facts, 1763805600.5, 0.25, 1.5, 4242);
        assertEquals(2L, r.get("executed"));
        assertEquals(1L, r.get("emitted"));
        assertEquals(Map.of("spout:default", 2L), r.get("executed_by_stream"));
        assertEquals(Map.of("default", 1L), r.get("emitted_by_stream"));
        assertEquals(7, r.get("task_id"));
        assertEquals(List.of(7, 8), r.get("executor"));
        assertEquals(4242L, r.get("pid"));
        assertEquals(1.75, (double) r.get("cpu_seconds"), 1e-12);
        assertEquals(0.25, r.get("thread_cpu_seconds"));
        assertEquals(1.5, r.get("subprocess_cpu_seconds"));
        assertEquals(12.0, r.get("worker_cpu_seconds"));
        assertEquals("linear-1-17", r.get("run_id"));
        assertEquals("h:6701", r.get("worker_id"));
        assertEquals("small", r.get("machine_type"));
        assertEquals(0.5, r.get("machine_cores"));
        assertEquals("thread", r.get("cpu_basis"));
        assertEquals("worker", r.get("source"));
        assertFalse(r.containsKey("acked"), "acked is a spout's");
    }

    @Test
    void aSpoutsExecutedIsWhatItEmitsAndAJvmComponentsPidIsTheWorkers() {
        ExecutorMetrics spout = new ExecutorMetrics("spout", "spout", true);
        spout.tasks.add(3);
        spout.onEmit("default");
        spout.onEmit("default");
        spout.onEmit("__ack_init");
        spout.acked.increment();
        ExecutorMetrics.WorkerFacts facts = new ExecutorMetrics.WorkerFacts("t", "t-1-2", "h", 6701, 900, "h",
                null, null, -1);
        Map<String, Object> r = spout.record(facts, 1.0, -1, -1, 0);
        assertEquals(2L, r.get("executed"));
        assertEquals(1L, r.get("acked"));
        assertEquals(900L, r.get("pid"));
        assertEquals(0.0, r.get("cpu_seconds"));
        assertFalse(r.containsKey("machine_cores") || r.containsKey("machine_type") || r.containsKey("thread_cpu_seconds")
                || r.containsKey("subprocess_cpu_seconds") || r.containsKey("worker_cpu_seconds"), r.toString());
    }

    @Test
    void aShellExecutorWhoseSubprocessIsUnknownSendsNoCpuSecondsRatherThanTooFew() {
        ExecutorMetrics shell = new ExecutorMetrics("high", "highCompute", false, true);
        shell.tasks.add(2);
        ExecutorMetrics.WorkerFacts facts = new ExecutorMetrics.WorkerFacts("t", "t-1-2", "h", 6701, 900, "h",
                "small", 0.5, 3.0);
        Map<String, Object> unknown = shell.record(facts, 1.0, 0.3, -1, 0);
        assertFalse(unknown.containsKey("cpu_seconds"), unknown.toString());
        assertEquals(0.3, unknown.get("thread_cpu_seconds"));
        assertEquals(2.3, (double) shell.record(facts, 1.0, 0.3, 2.0, 4242).get("cpu_seconds"), 1e-12);
    }

    @Test
    void settingsComeFromTheWorkersConfWithDefaultsAndNamedFaults(@org.junit.jupiter.api.io.TempDir Path dir)
            throws IOException {
        Map<String, Object> conf = new HashMap<>();
        conf.put("hetsched.planner.url", "http://127.0.0.1:8765/");
        conf.put("supervisor.scheduler.meta", Map.of("machine-type", "small", "machine-id", "small-1", "cores", "0.5"));
        MetricsSettings s = MetricsSettings.fromConf(conf);
        assertEquals("http://127.0.0.1:8765/v1/metrics/batches", s.batchesUrl().toString());
        assertEquals(5000, s.intervalMs());
        assertEquals(MetricsSettings.DEFAULT_BUFFER_RECORDS, s.bufferRecords());
        assertEquals("small", s.machineType());
        assertEquals("small-1", s.machineId());
        assertEquals(0.5, s.machineCores());
        assertNull(s.fault());

        conf.put(MetricsSettings.METRICS_URL, "http://10.0.0.5:9000");
        conf.put(MetricsSettings.INTERVAL_SECS, "0.5");
        conf.put(MetricsSettings.BUFFER_RECORDS, 100);
        Path token = Files.writeString(dir.resolve("token"), "s3cret\n");
        Files.setPosixFilePermissions(token, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        conf.put("hetsched.planner.token.file", token.toString());
        s = MetricsSettings.fromConf(conf);
        assertEquals("http://10.0.0.5:9000/v1/metrics/batches", s.batchesUrl().toString());
        assertEquals(500, s.intervalMs());
        assertEquals(100, s.bufferRecords());
        assertEquals("s3cret", assertDoesNotFail(s));
        Path workers = Files.writeString(dir.resolve("workers-token"), "records-only\n");
        Files.setPosixFilePermissions(workers, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        conf.put(MetricsSettings.METRICS_TOKEN_FILE, workers.toString());
        assertEquals("records-only", assertDoesNotFail(MetricsSettings.fromConf(conf)),
                "the supervisor's workers' token file goes before hetsched.planner.token.file, which Nimbus's storm.yaml "
                        + "sets and merges into every topology's conf (seen on compose: the workers read Nimbus's file)");
        conf.put(MetricsSettings.METRICS_TOKEN, " records.linear.0a1b \n");
        assertEquals("records.linear.0a1b", assertDoesNotFail(MetricsSettings.fromConf(conf)),
                "the topology's own records token goes before the planner token of the supervisor's storm.yaml");

        conf.put(MetricsSettings.INTERVAL_SECS, "soon");
        conf.put(MetricsSettings.BUFFER_RECORDS, 2.5);
        conf.put(MetricsSettings.METRICS_URL, "ftp://x");
        s = MetricsSettings.fromConf(conf);
        assertEquals(5000, s.intervalMs());
        assertNull(s.batchesUrl());
        assertTrue(s.fault().contains("hetsched.metrics.interval.secs must be a positive number of seconds, got 'soon'")
                && s.fault().contains("hetsched.metrics.buffer.records must be a whole number")
                && s.fault().contains("'ftp://x' is not an http(s) URL"), s.fault());
    }

    @Test
    void theProfileKeyIsTheComponentProfilesEntryElseTheComponentId() {
        Map<String, Object> conf = Map.of("hetsched.component.profiles", Map.of("high", "highCompute"));
        assertEquals("highCompute", MetricsSettings.profileOf(conf, "high"));
        assertEquals("spout", MetricsSettings.profileOf(conf, "spout"));
        assertEquals("x", MetricsSettings.profileOf(Map.of(), "x"));
    }

    private static String assertDoesNotFail(MetricsSettings s) {
        try {
            return s.token().get();
        } catch (org.hetsched.storm.PlanFault e) {
            throw new AssertionError(e.getMessage());
        }
    }
}
