package org.hetsched.storm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** storm.yaml settings: defaults, and a sentence naming the key for every bad value. */
class SchedulerSettingsTest {

    @Test
    void defaultsWithoutAPlanner() {
        SchedulerSettings settings = SchedulerSettings.fromConf(Map.of());
        assertFalse(settings.hasPlanner());
        assertEquals(Duration.ofMillis(30_000), settings.timeout());
        assertEquals(SchedulerSettings.Fallback.EVEN, settings.fallback());
        assertEquals("machine-type", settings.machineTypeKey());
        assertNull(settings.token());
    }

    @Test
    void readsEveryKey() {
        SchedulerSettings settings = SchedulerSettings.fromConf(Map.of(
                "hetsched.planner.url", "http://127.0.0.1:8765/",
                "hetsched.planner.timeout.ms", "750",
                "hetsched.planner.token", " t0k ",
                "hetsched.fallback", "NONE",
                "hetsched.machine.type.key", "kind",
                "hetsched.breaker.failures", 5));
        assertEquals("http://127.0.0.1:8765", settings.plannerUrl().toString());
        assertEquals(Duration.ofMillis(750), settings.timeout());
        assertEquals("t0k", settings.token());
        assertEquals(SchedulerSettings.Fallback.NONE, settings.fallback());
        assertEquals("kind", settings.machineTypeKey());
        assertEquals(5, settings.breakerFailures());
    }

    @Test
    void roundSettingsDefaultToAShortBudgetAndHalfTheTimeoutForSlowAnswers() {
        SchedulerSettings defaults = SchedulerSettings.fromConf(Map.of("hetsched.planner.timeout.ms", 3_000));
        assertEquals(Duration.ofMillis(1_500), defaults.slowAnswer());
        assertEquals(Duration.ofMillis(300), defaults.roundBudget());
        assertEquals(4, defaults.plannerConcurrency());
        SchedulerSettings set = SchedulerSettings.fromConf(Map.of("hetsched.planner.slow.ms", 800,
                "hetsched.round.budget.ms", "50", "hetsched.planner.concurrency", 2));
        assertEquals(Duration.ofMillis(800), set.slowAnswer());
        assertEquals(Duration.ofMillis(50), set.roundBudget());
        assertEquals(2, set.plannerConcurrency());
    }

    @Test
    void theWorkerBudgetIsAWholeNumberOfAtLeastOneOrUnset() throws PlanFault {
        assertNull(TopologySettings.fromConf(Map.of()).maxWorkers());
        assertEquals(3, TopologySettings.fromConf(Map.of("hetsched.max.workers", 3)).maxWorkers());
        assertEquals(8, TopologySettings.fromConf(Map.of("hetsched.max.workers", " 8 ")).maxWorkers(),
                "storm.yaml or a -c option may give it as text");
        for (Object bad : new Object[] {0, -2, 1.5, "two", 100_001}) {
            PlanFault fault = assertThrows(PlanFault.class, () -> TopologySettings.fromConf(Map.of("hetsched.max.workers", bad)));
            assertEquals("hetsched.max.workers must be a whole number of workers from 1 to 100000, got '" + bad + "'",
                    fault.reason());
        }
    }

    @Test
    void theReplanFlagIsTrueByDefaultAndMustBeABoolean() throws PlanFault {
        assertTrue(TopologySettings.fromConf(Map.of()).replanAfterFallback());
        assertFalse(TopologySettings.fromConf(Map.of("hetsched.replan.after.fallback", "false")).replanAfterFallback());
        PlanFault fault = assertThrows(PlanFault.class,
                () -> TopologySettings.fromConf(Map.of("hetsched.replan.after.fallback", "sometimes")));
        assertEquals("hetsched.replan.after.fallback must be true or false, got 'sometimes'", fault.reason());
    }

    @Test
    void badValuesAreNamed() {
        assertMessage("hetsched.planner.slow.ms must be at most hetsched.planner.timeout.ms (30000)",
                Map.of("hetsched.planner.slow.ms", 35_000));
        assertMessage("hetsched.round.budget.ms must be positive, got 0", Map.of("hetsched.round.budget.ms", 0));
        assertMessage("hetsched.fallback must be 'even' or 'none', got 'random'", Map.of("hetsched.fallback", "random"));
        assertMessage("hetsched.planner.timeout.ms must be positive, got 0", Map.of("hetsched.planner.timeout.ms", 0));
        assertMessage("hetsched.planner.timeout.ms must be a whole number, got 'soon'",
                Map.of("hetsched.planner.timeout.ms", "soon"));
        assertMessage("hetsched.planner.url must be an http(s) URL with a host, got 'ftp://x'",
                Map.of("hetsched.planner.url", "ftp://x"));
        assertMessage("hetsched.breaker.backoff.max.ms must be at least hetsched.breaker.backoff.ms (5000)",
                Map.of("hetsched.breaker.backoff.max.ms", 10));
        assertMessage("hetsched.planner.token.file must be an absolute path, got 'token'",
                Map.of("hetsched.planner.token.file", "token"));
        assertMessage("set hetsched.planner.token.file or hetsched.planner.token, not both",
                Map.of("hetsched.planner.token.file", "/etc/storm/token", "hetsched.planner.token", "t0k"));
    }

    @Test
    void theTokenFileIsNamedNotRead() throws PlanFault {
        SchedulerSettings settings = SchedulerSettings.fromConf(Map.of("hetsched.planner.token.file", " /etc/storm/token "));
        assertEquals(java.nio.file.Path.of("/etc/storm/token"), settings.tokenFile());
        assertNull(settings.token());
        assertNull(SchedulerSettings.fromConf(Map.of()).plannerToken().get());
    }

    @Test
    void breakerBackoffDoublesUpToItsMaximumAndResetsOnSuccess() {
        long[] now = {0};
        CircuitBreaker breaker = new CircuitBreaker(1, Duration.ofMillis(100), Duration.ofMillis(350), () -> now[0]);
        breaker.recordFailure();
        assertEquals(Duration.ofMillis(100), breaker.backoff());
        assertFalse(breaker.allowsCall());
        now[0] = 100;
        breaker.recordFailure();
        assertEquals(Duration.ofMillis(200), breaker.backoff());
        breaker.recordFailure();
        assertEquals(Duration.ofMillis(350), breaker.backoff());
        breaker.recordSuccess();
        assertEquals(Duration.ZERO, breaker.backoff());
        assertEquals(true, breaker.allowsCall());
    }

    private static void assertMessage(String expected, Map<String, Object> conf) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SchedulerSettings.fromConf(conf));
        assertEquals(expected, e.getMessage());
    }
}
