package org.hetsched.storm;

import java.net.URI;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * The plugin's settings from Nimbus's storm.yaml.
 *
 * <p>Read once in {@code prepare}; a bad value stops Nimbus with a sentence naming the key,
 * rather than failing quietly on every scheduling round later.
 *
 * @param plannerUrl        base URL of the planning service, or null when no planner is configured
 * @param timeout           the whole budget of one planner call (connect, request, answer)
 * @param token             Bearer token for the planner's /v1 calls given inline (deprecated: Nimbus shows its
 *                          storm.yaml to anyone through getNimbusConf), or null
 * @param tokenFile         absolute path of a file, readable by the Nimbus user only, holding the Bearer token, or null
 * @param fallback          what happens to a planner topology when the planner cannot place it
 * @param machineTypeKey    the key of {@code supervisor.scheduler.meta} that names a supervisor's machine type
 * @param machineIdKey      the key of {@code supervisor.scheduler.meta} that names the machine as plans know it
 * @param defaultMachineType the type of supervisors whose meta names none
 * @param breakerFailures   consecutive planner failures that open the circuit breaker
 * @param breakerBackoff    how long the breaker first stays open; doubles on every failed retry
 * @param breakerMaxBackoff the longest the breaker stays open
 * @param slowAnswer        a planner call answering later than this counts as a failure for the breaker (the answer
 *                          is still used): a planner that answers just under the timeout is not healthy
 * @param roundBudget       the most time one {@code schedule()} call spends on planner work (waiting for answers it
 *                          started, applying plans) before leaving the rest to the next round
 * @param plannerConcurrency the most planner requests in flight at once, one per topology at most
 */
public record SchedulerSettings(
        URI plannerUrl,
        Duration timeout,
        String token,
        Path tokenFile,
        Fallback fallback,
        String machineTypeKey,
        String machineIdKey,
        String defaultMachineType,
        int breakerFailures,
        Duration breakerBackoff,
        Duration breakerMaxBackoff,
        Duration slowAnswer,
        Duration roundBudget,
        int plannerConcurrency) {

    public static final String PLANNER_URL = "hetsched.planner.url";
    public static final String PLANNER_TIMEOUT_MS = "hetsched.planner.timeout.ms";
    public static final String PLANNER_TOKEN = "hetsched.planner.token";
    public static final String PLANNER_TOKEN_FILE = "hetsched.planner.token.file";
    public static final String FALLBACK = "hetsched.fallback";
    public static final String MACHINE_TYPE_KEY = "hetsched.machine.type.key";
    public static final String MACHINE_ID_KEY = "hetsched.machine.id.key";
    public static final String DEFAULT_MACHINE_TYPE = "hetsched.machine.type.default";
    public static final String BREAKER_FAILURES = "hetsched.breaker.failures";
    public static final String BREAKER_BACKOFF_MS = "hetsched.breaker.backoff.ms";
    public static final String BREAKER_MAX_BACKOFF_MS = "hetsched.breaker.backoff.max.ms";
    public static final String PLANNER_SLOW_MS = "hetsched.planner.slow.ms";
    public static final String ROUND_BUDGET_MS = "hetsched.round.budget.ms";
    public static final String PLANNER_CONCURRENCY = "hetsched.planner.concurrency";
    public static final String REPLAN_MIN_GAIN = "hetsched.replan.min.gain";
    public static final String REPLAN_MIN_INTERVAL_SECS = "hetsched.replan.min.interval.secs";
    public static final String RETURNED_PORTS_SETTLE_SECS = "hetsched.returned.ports.settle.secs";

    /** What to do with a planner topology the planner could not place. */
    public enum Fallback {
        /** Storm's DefaultScheduler places the topology evenly. */
        EVEN,
        /** The topology waits unscheduled until the planner can place it. */
        NONE
    }

    public static SchedulerSettings fromConf(Map<String, Object> conf) {
        String url = text(conf, PLANNER_URL, null);
        URI plannerUrl = null;
        if (url != null && !url.isBlank()) {
            try {
                plannerUrl = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(PLANNER_URL + " is not a URL: '" + url + "'", e);
            }
            String scheme = plannerUrl.getScheme();
            if (!"http".equals(scheme) && !"https".equals(scheme) || plannerUrl.getHost() == null) {
                throw new IllegalArgumentException(PLANNER_URL + " must be an http(s) URL with a host, got '" + url + "'");
            }
        }
        String fallbackText = text(conf, FALLBACK, "even").toLowerCase(Locale.ROOT);
        Fallback fallback = switch (fallbackText) {
            case "even" -> Fallback.EVEN;
            case "none" -> Fallback.NONE;
            default -> throw new IllegalArgumentException(
                    FALLBACK + " must be 'even' or 'none', got '" + fallbackText + "'");
        };
        Duration backoff = Duration.ofMillis(positiveLong(conf, BREAKER_BACKOFF_MS, 5_000));
        Duration maxBackoff = Duration.ofMillis(positiveLong(conf, BREAKER_MAX_BACKOFF_MS, 300_000));
        if (maxBackoff.compareTo(backoff) < 0) {
            throw new IllegalArgumentException(
                    BREAKER_MAX_BACKOFF_MS + " must be at least " + BREAKER_BACKOFF_MS + " (" + backoff.toMillis() + ")");
        }
        String token = text(conf, PLANNER_TOKEN, null);
        token = token == null || token.isBlank() ? null : token.trim();
        Path tokenFile = tokenFile(text(conf, PLANNER_TOKEN_FILE, null));
        if (token != null && tokenFile != null) {
            throw new IllegalArgumentException("set " + PLANNER_TOKEN_FILE + " or " + PLANNER_TOKEN + ", not both");
        }
        // a newcomer beside running tenants is several plans of up to the service's 10 s each, and the request
        // runs in the background (the topology waits, Nimbus does not), so a short budget only forces fallbacks
        Duration timeout = Duration.ofMillis(positiveLong(conf, PLANNER_TIMEOUT_MS, 30_000));
        Long slowMillis = positiveLongOrNull(conf, PLANNER_SLOW_MS);
        Duration slow = Duration.ofMillis(slowMillis != null ? slowMillis : Math.max(1, timeout.toMillis() / 2));
        if (slow.compareTo(timeout) > 0) {
            throw new IllegalArgumentException(PLANNER_SLOW_MS + " must be at most " + PLANNER_TIMEOUT_MS
                    + " (" + timeout.toMillis() + ")");
        }
        return new SchedulerSettings(
                plannerUrl,
                timeout,
                token,
                tokenFile,
                fallback,
                text(conf, MACHINE_TYPE_KEY, "machine-type"),
                text(conf, MACHINE_ID_KEY, "machine-id"),
                text(conf, DEFAULT_MACHINE_TYPE, "default"),
                (int) Math.min(Integer.MAX_VALUE, positiveLong(conf, BREAKER_FAILURES, 3)),
                backoff,
                maxBackoff,
                slow,
                Duration.ofMillis(positiveLong(conf, ROUND_BUDGET_MS, 300)),
                (int) Math.min(64, positiveLong(conf, PLANNER_CONCURRENCY, 4)));
    }

    /** When a topology is re-placed onto a better plan after a machine joined (see {@link ReplanSettings}). */
    public static ReplanSettings replanSettings(Map<String, Object> conf) {
        double gain = nonNegative(conf, REPLAN_MIN_GAIN, 0.10);
        double intervalSecs = nonNegative(conf, REPLAN_MIN_INTERVAL_SECS, 600);
        return new ReplanSettings(gain, Duration.ofMillis((long) (intervalSecs * 1000)));
    }

    /** How long a returned supervisor's ports of the time it was lost come last (see {@link ReturnedPorts}). */
    public static Duration returnedPortsSettle(Map<String, Object> conf) {
        return Duration.ofMillis((long) (nonNegative(conf, RETURNED_PORTS_SETTLE_SECS, 300) * 1000));
    }

    private static double nonNegative(Map<String, Object> conf, String key, double defaultValue) {
        Object value = conf.get(key);
        if (value == null) {
            return defaultValue;
        }
        double parsed;
        try {
            parsed = value instanceof Number n ? n.doubleValue() : Double.parseDouble(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a number, got '" + value + "'", e);
        }
        if (!(parsed >= 0) || Double.isInfinite(parsed)) {
            throw new IllegalArgumentException(key + " must be a finite number of at least 0, got " + value);
        }
        return parsed;
    }

    public boolean hasPlanner() {
        return plannerUrl != null;
    }

    /** Where each planner call takes its token from: the token file, else the inline token, else none. */
    public PlannerToken plannerToken() {
        if (tokenFile != null) {
            return PlannerToken.fromFile(tokenFile);
        }
        return token != null ? PlannerToken.inline(token) : PlannerToken.NONE;
    }

    private static Path tokenFile(String text) {
        if (text == null || text.isBlank()) {
            return null;
        }
        Path path;
        try {
            path = Path.of(text.trim());
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException(PLANNER_TOKEN_FILE + " is not a path: '" + text + "'", e);
        }
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException(PLANNER_TOKEN_FILE + " must be an absolute path, got '" + text + "'");
        }
        return path;
    }

    private static String text(Map<String, Object> conf, String key, String defaultValue) {
        Object value = conf.get(key);
        if (value == null) {
            return defaultValue;
        }
        if (value instanceof String || value instanceof Number) {
            return value.toString();
        }
        throw new IllegalArgumentException(key + " must be a string, got " + value.getClass().getSimpleName());
    }

    /** The key's positive whole number, or null when it is not set. */
    private static Long positiveLongOrNull(Map<String, Object> conf, String key) {
        return conf.get(key) == null ? null : positiveLong(conf, key, 1);
    }

    private static long positiveLong(Map<String, Object> conf, String key, long defaultValue) {
        Object value = conf.get(key);
        if (value == null) {
            return defaultValue;
        }
        long parsed;
        try {
            parsed = value instanceof Number n ? n.longValue() : Long.parseLong(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, got '" + value + "'", e);
        }
        if (parsed <= 0) {
            throw new IllegalArgumentException(key + " must be positive, got " + parsed);
        }
        return parsed;
    }
}
