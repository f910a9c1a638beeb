package org.hetsched.storm.metrics;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import org.hetsched.storm.PlannerToken;
import org.hetsched.storm.SchedulerSettings;
import org.hetsched.storm.TopologySettings;

/**
 * What the metrics hook reads from a worker's conf (its supervisor's storm.yaml merged with the topology conf).
 *
 * @param batchesUrl    {@code <service>/v1/metrics/batches}, or null when no service is configured (nothing is shipped)
 * @param intervalMs    how often every executor is sampled, milliseconds
 * @param bufferRecords the most records kept while the service cannot be reached
 * @param token         the bearer token: the topology's own records token ({@code hetsched.metrics.token}, set by
 *                      {@code hetsched submit}), else the supervisor's workers' token file
 *                      ({@code hetsched.metrics.token.file}), else the planner token as the plugin reads it
 * @param machineType   the supervisor's machine type meta, or null
 * @param machineId     the supervisor's machine id meta, or null
 * @param machineCores  the supervisor's {@code cores} meta, or null
 * @param fault         a setting that was malformed and replaced by its default, or null
 */
record MetricsSettings(URI batchesUrl, long intervalMs, int bufferRecords, PlannerToken token,
                       String machineType, String machineId, Double machineCores, String fault) {

    public static final String METRICS_URL = "hetsched.metrics.url";
    public static final String INTERVAL_SECS = "hetsched.metrics.interval.secs";
    public static final String BUFFER_RECORDS = "hetsched.metrics.buffer.records";
    /**
     * The topology's records token (topology conf): it may post this topology's records and nothing else, so the
     * workers, which run the topology's own code, need no planner token that could plan, bind or store profiles.
     */
    public static final String METRICS_TOKEN = "hetsched.metrics.token";
    /**
     * A supervisor's file holding its workers' (records-only) token. Its own key, not {@code hetsched.planner.token.file}:
     * Nimbus merges its own storm.yaml into every topology's conf, so a worker would read the plugin's file name there.
     */
    public static final String METRICS_TOKEN_FILE = "hetsched.metrics.token.file";
    static final String SCHEDULER_META = "supervisor.scheduler.meta";
    static final double DEFAULT_INTERVAL_SECS = 5.0;
    static final int DEFAULT_BUFFER_RECORDS = 20_000;
    static final String BATCHES_PATH = "/v1/metrics/batches";

    static MetricsSettings fromConf(Map<String, Object> conf) {
        StringBuilder faults = new StringBuilder();
        URI url = null;
        Object base = conf.get(METRICS_URL) != null ? conf.get(METRICS_URL) : conf.get(SchedulerSettings.PLANNER_URL);
        if (base != null && !base.toString().isBlank()) {
            String text = base.toString().trim().replaceAll("/+$", "");
            try {
                url = URI.create(text + BATCHES_PATH);
                if (url.getScheme() == null || !url.getScheme().startsWith("http") || url.getHost() == null) {
                    faults.append(METRICS_URL).append(" '").append(text).append("' is not an http(s) URL; ");
                    url = null;
                }
            } catch (IllegalArgumentException e) {
                faults.append(METRICS_URL).append(" '").append(text).append("' is not a URL; ");
            }
        }
        double interval = DEFAULT_INTERVAL_SECS;
        if (conf.get(INTERVAL_SECS) != null) {
            Double given = positiveNumber(conf.get(INTERVAL_SECS));
            if (given == null) {
                faults.append(INTERVAL_SECS).append(" must be a positive number of seconds, got '")
                        .append(conf.get(INTERVAL_SECS)).append("'; ");
            } else {
                interval = given;
            }
        }
        int buffer = DEFAULT_BUFFER_RECORDS;
        if (conf.get(BUFFER_RECORDS) != null) {
            Double given = positiveNumber(conf.get(BUFFER_RECORDS));
            if (given == null || given != Math.rint(given) || given > 10_000_000) {
                faults.append(BUFFER_RECORDS).append(" must be a whole number from 1 to 10000000, got '")
                        .append(conf.get(BUFFER_RECORDS)).append("'; ");
            } else {
                buffer = given.intValue();
            }
        }
        PlannerToken token = PlannerToken.NONE;
        if (conf.get(METRICS_TOKEN) != null && !conf.get(METRICS_TOKEN).toString().isBlank()) {
            token = PlannerToken.inline(conf.get(METRICS_TOKEN).toString().trim());
        } else if (conf.get(METRICS_TOKEN_FILE) != null && !conf.get(METRICS_TOKEN_FILE).toString().isBlank()) {
            token = PlannerToken.fromFile(Path.of(conf.get(METRICS_TOKEN_FILE).toString().trim()));
        } else if (conf.get(SchedulerSettings.PLANNER_TOKEN_FILE) != null) {
            token = PlannerToken.fromFile(Path.of(conf.get(SchedulerSettings.PLANNER_TOKEN_FILE).toString()));
        } else if (conf.get(SchedulerSettings.PLANNER_TOKEN) != null) {
            token = PlannerToken.inline(conf.get(SchedulerSettings.PLANNER_TOKEN).toString());
        }
        Map<?, ?> meta = conf.get(SCHEDULER_META) instanceof Map<?, ?> m ? m : Map.of();
        String typeKey = text(conf.get(SchedulerSettings.MACHINE_TYPE_KEY), "machine-type");
        String idKey = text(conf.get(SchedulerSettings.MACHINE_ID_KEY), "machine-id");
        Double cores = positiveNumber(meta.get("cores"));
        String fault = faults.length() == 0 ? null : faults.substring(0, faults.length() - 2);
        return new MetricsSettings(url, Math.max(1L, Math.round(interval * 1000)), buffer, token,
                text(meta.get(typeKey), null), text(meta.get(idKey), null), cores, fault);
    }

    /** The component's profile key: {@code hetsched.component.profiles}, else its id (as in the plugin's plan requests). */
    static String profileOf(Map<String, Object> conf, String component) {
        Object map = conf.get(TopologySettings.COMPONENT_PROFILES);
        if (map instanceof Map<?, ?> m && m.get(component) != null) {
            return m.get(component).toString();
        }
        return component;
    }

    /** A positive finite number from a number or numeric text, else null. */
    static Double positiveNumber(Object value) {
        if (value == null) {
            return null;
        }
        try {
            double d = value instanceof Number n ? n.doubleValue() : Double.parseDouble(value.toString().trim());
            return Double.isFinite(d) && d > 0 ? d : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String text(Object value, String otherwise) {
        return value == null || value.toString().isBlank() ? otherwise : value.toString().trim();
    }
}
