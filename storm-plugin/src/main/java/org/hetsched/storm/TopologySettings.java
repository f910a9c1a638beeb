package org.hetsched.storm;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

/**
 * What a topology asks of the planner, from its own topology conf.
 *
 * <p>A topology asks for the planner by naming a profile set ({@code hetsched.profiles}) or a
 * stored plan ({@code hetsched.plan.id}); every other topology is scheduled evenly as Storm would.
 * A stored plan is read first ({@code GET /v1/plans/{id}}) and used where it fits the topology and
 * the cluster; otherwise, with a profile set, the planner is asked for a plan ({@code POST /v1/plans},
 * passing the plan id along for reuse).
 *
 * @param profiles              name of the stored ProfileSet the planner should use, or null
 * @param strategy              planner strategy (paper, even, ...), or null for the planner's default
 * @param planId                id of a plan already stored in the planner, or null
 * @param componentProfiles     component id to profile key; a component not named uses its id
 * @param machineTypeCores      machine type to cores, for supervisors whose meta declares none
 * @param options               PlanOptions passed through to the planner as they are, or empty
 * @param maxExecutorsPerWorker most executors of this topology in one worker, or null for no limit
 * @param replanAfterFallback   whether a topology placed evenly because the planner was down is re-placed by plan
 *                              (its workers restarted) once the planner answers
 * @param workerMemoryMb        the memory of one worker JVM of the topology ({@code hetsched.worker.memory.mb}), MB;
 *                              where set, memory is planned as a hard limit (docs/plugin.md), else null
 * @param maxWorkers            the most machines (one worker each) the topology's plan may use
 *                              ({@code hetsched.max.workers}), or null for no budget
 */
public record TopologySettings(
        String profiles,
        String strategy,
        String planId,
        Map<String, String> componentProfiles,
        Map<String, Double> machineTypeCores,
        Map<String, Object> options,
        Integer maxExecutorsPerWorker,
        boolean replanAfterFallback,
        Double workerMemoryMb,
        Integer maxWorkers) {

    public static final String PROFILES = "hetsched.profiles";
    public static final String STRATEGY = "hetsched.strategy";
    public static final String PLAN_ID = "hetsched.plan.id";
    public static final String COMPONENT_PROFILES = "hetsched.component.profiles";
    public static final String MACHINE_TYPE_CORES = "hetsched.machine.type.cores";
    public static final String OPTIONS = "hetsched.options";
    public static final String MAX_EXECUTORS_PER_WORKER = "hetsched.max.executors.per.worker";
    public static final String REPLAN_AFTER_FALLBACK = "hetsched.replan.after.fallback";
    /**
     * MB of one worker JVM of the topology (its heap, -Xmx, and what the JVM takes besides). Where set, the plugin sends
     * it and every component's memory per executor (Storm's on-heap plus off-heap request, as RAS reads it), and
     * the planner keeps every machine within its {@code supervisor.memory.capacity.mb}.
     */
    public static final String WORKER_MEMORY_MB = "hetsched.worker.memory.mb";
    /**
     * The topology's worker budget: its plan uses at most this many machines, one worker each, those with the most free
     * capacity for it, as Storm's {@code topology.workers} packs a topology. Set it in Nimbus's storm.yaml (merged into
     * every topology's conf) so many topologies fit the cluster's worker slots; a topology's own conf overrides it.
     */
    public static final String MAX_WORKERS = "hetsched.max.workers";
    /** The largest budget the planner accepts ({@code topology.max_workers}). */
    static final int MAX_WORKERS_LIMIT = 100_000;
    /** The input rate (tuples/s) a topology sharing the cluster is guaranteed; see {@link TenantSettings}. */
    public static final String MIN_RATE = "hetsched.min.rate";
    /** The most input rate (tuples/s) a topology sharing the cluster wants; see {@link TenantSettings}. */
    public static final String TARGET_RATE = "hetsched.target.rate";

    /** The tenant keys of a topology conf (Storm's topology.priority and the two rates). */
    public static TenantSettings tenantOf(Map<String, Object> conf) throws PlanFault {
        return TenantSettings.of(conf, rateOf(conf, MIN_RATE, 0), rateOf(conf, TARGET_RATE, null));
    }

    /** A rate in tuples/s: a non-negative finite number (positive for the target), else a fault naming the key. */
    static Double rateOf(Map<String, Object> conf, String key, Number defaultValue) throws PlanFault {
        Object value = conf.get(key);
        if (value == null) {
            return defaultValue == null ? null : defaultValue.doubleValue();
        }
        double d;
        try {
            d = value instanceof Number n ? n.doubleValue() : Double.parseDouble(value.toString().trim());
        } catch (NumberFormatException e) {
            d = Double.NaN;
        }
        boolean zeroAllowed = !key.equals(TARGET_RATE);
        if (!Double.isFinite(d) || d < 0 || (!zeroAllowed && d == 0)) {
            throw PlanFault.topologyConf(key + " must be a " + (zeroAllowed ? "non-negative" : "positive")
                    + " number of tuples/s, got '" + value + "'");
        }
        return d;
    }

    /** Reads the settings; a malformed value is a {@link PlanFault} naming the key, so the topology still gets scheduled. */
    public static TopologySettings fromConf(Map<String, Object> conf) throws PlanFault {
        Integer maxPerWorker = null;
        Object max = conf.get(MAX_EXECUTORS_PER_WORKER);
        if (max != null) {
            maxPerWorker = wholeNumber(MAX_EXECUTORS_PER_WORKER, max);
            if (maxPerWorker < 1) {
                throw PlanFault.topologyConf(MAX_EXECUTORS_PER_WORKER + " must be at least 1, got " + maxPerWorker);
            }
        }
        return new TopologySettings(
                text(conf, PROFILES),
                text(conf, STRATEGY),
                text(conf, PLAN_ID),
                textMap(conf, COMPONENT_PROFILES),
                numberMap(conf, MACHINE_TYPE_CORES),
                objectMap(conf, OPTIONS),
                maxPerWorker,
                flag(conf, REPLAN_AFTER_FALLBACK, true),
                memoryOf(conf),
                maxWorkersOf(conf));
    }

    /** {@link #MAX_WORKERS}: a whole number of machines, at least 1, null where unset, else a fault naming the key. */
    static Integer maxWorkersOf(Map<String, Object> conf) throws PlanFault {
        Object value = conf.get(MAX_WORKERS);
        if (value == null) {
            return null;
        }
        double d = parsedNumber(value);
        if (!Double.isFinite(d) || d < 1 || d != Math.rint(d) || d > MAX_WORKERS_LIMIT) {
            throw PlanFault.topologyConf(MAX_WORKERS + " must be a whole number of workers from 1 to "
                    + MAX_WORKERS_LIMIT + ", got '" + value + "'");
        }
        return (int) d;
    }

    /** {@link #WORKER_MEMORY_MB}: a non-negative finite number of MB, null where unset, else a fault naming the key. */
    static Double memoryOf(Map<String, Object> conf) throws PlanFault {
        Object value = conf.get(WORKER_MEMORY_MB);
        if (value == null) {
            return null;
        }
        double d = parsedNumber(value);
        if (!Double.isFinite(d) || d < 0) {
            throw PlanFault.topologyConf(WORKER_MEMORY_MB + " must be a non-negative number of MB, got '" + value + "'");
        }
        return d;
    }

    /** Whether memory is planned (the topology declares its worker's memory). */
    public boolean plansMemory() {
        return workerMemoryMb != null;
    }

    private static boolean flag(Map<String, Object> conf, String key, boolean defaultValue) throws PlanFault {
        Object value = conf.get(key);
        if (value == null) {
            return defaultValue;
        }
        if (value instanceof Boolean b) {
            return b;
        }
        String text = value.toString().trim().toLowerCase(java.util.Locale.ROOT);
        if (text.equals("true") || text.equals("false")) {
            return Boolean.parseBoolean(text);
        }
        throw PlanFault.topologyConf(key + " must be true or false, got '" + value + "'");
    }

    /** {@code topology.message.timeout.secs} (30 where unset or malformed): how long a rebalance drains the topology. */
    public static int messageTimeoutSecs(Map<String, Object> conf) {
        Object value = conf.get("topology.message.timeout.secs");
        try {
            return value == null ? 30 : Math.max(0, value instanceof Number n ? n.intValue()
                    : (int) Double.parseDouble(value.toString().trim()));
        } catch (NumberFormatException e) {
            return 30;
        }
    }

    /** Reads only what decides whether the planner is asked at all; never fails. */
    public static boolean asksForPlanner(Map<String, Object> conf) {
        return conf.get(PROFILES) != null || conf.get(PLAN_ID) != null;
    }

    public String profileOf(String componentId) {
        return componentProfiles.getOrDefault(componentId, componentId);
    }

    private static String text(Map<String, Object> conf, String key) throws PlanFault {
        Object value = conf.get(key);
        if (value == null) {
            return null;
        }
        if (!(value instanceof String) && !(value instanceof Number)) {
            throw PlanFault.topologyConf(key + " must be a string, got " + value.getClass().getSimpleName());
        }
        String s = value.toString().trim();
        return s.isEmpty() ? null : s;
    }

    private static Map<?, ?> map(Map<String, Object> conf, String key) throws PlanFault {
        Object value = conf.get(key);
        if (value == null) {
            return Collections.emptyMap();
        }
        if (!(value instanceof Map<?, ?> m)) {
            throw PlanFault.topologyConf(key + " must be a map, got " + value.getClass().getSimpleName());
        }
        return m;
    }

    private static Map<String, String> textMap(Map<String, Object> conf, String key) throws PlanFault {
        Map<String, String> out = new HashMap<>();
        for (Map.Entry<?, ?> e : map(conf, key).entrySet()) {
            if (e.getValue() == null) {
                throw PlanFault.topologyConf(key + " gives no value for '" + e.getKey() + "'");
            }
            out.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
        }
        return Map.copyOf(out);
    }

    private static Map<String, Double> numberMap(Map<String, Object> conf, String key) throws PlanFault {
        Map<String, Double> out = new HashMap<>();
        for (Map.Entry<?, ?> e : map(conf, key).entrySet()) {
            Double value = positiveNumber(e.getValue());
            if (value == null) {
                throw PlanFault.topologyConf(key + " must map to positive numbers, got '" + e.getValue()
                        + "' for '" + e.getKey() + "'");
            }
            out.put(String.valueOf(e.getKey()), value);
        }
        return Map.copyOf(out);
    }

    private static Map<String, Object> objectMap(Map<String, Object> conf, String key) throws PlanFault {
        Map<String, Object> out = new HashMap<>();
        map(conf, key).forEach((k, v) -> out.put(String.valueOf(k), v));
        return Collections.unmodifiableMap(out);
    }

    private static int wholeNumber(String key, Object value) throws PlanFault {
        try {
            return value instanceof Number n ? Math.toIntExact(n.longValue()) : Integer.parseInt(value.toString().trim());
        } catch (NumberFormatException | ArithmeticException e) {
            throw PlanFault.topologyConf(key + " must be a whole number, got '" + value + "'");
        }
    }

    /** A positive finite number from a number or numeric text, else null. */
    static Double positiveNumber(Object value) {
        if (value == null) {
            return null;
        }
        double d = parsedNumber(value);
        return Double.isFinite(d) && d > 0 ? d : null;
    }

    /** A number or numeric text as a double; NaN for anything else. */
    private static double parsedNumber(Object value) {
        try {
            return value instanceof Number n ? n.doubleValue() : Double.parseDouble(value.toString().trim());
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }
}
