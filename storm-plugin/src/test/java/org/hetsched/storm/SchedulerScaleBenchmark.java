package org.hetsched.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.DefaultScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.apache.storm.scheduler.resource.ResourceAwareScheduler;
import org.apache.storm.testing.TestWordCounter;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.utils.Utils;

/**
 * Scheduling rounds at cluster scale, as Nimbus runs them: hundreds of supervisors and topologies in Storm's own
 * {@code Cluster}/{@code Topologies} objects, each round's assignments handed to the next, for the real
 * {@link HetschedScheduler} asking a real planner (through a loopback proxy that counts its requests), Storm's
 * ResourceAwareScheduler and its DefaultScheduler on the same objects.
 *
 * <p>Not a test (Surefire does not run it): {@code benchmarks/scheduler_scale.py} generates the scenario (a JSON file
 * of supervisors and topologies), starts the planner, stores its profile set and stored plans, and runs this class.
 * Prints one JSON object: per scheduler every round's milliseconds, requests and placed count, and for hetsched how
 * many executors run on a supervisor their plan does not name.
 *
 * <pre>java -cp ... org.hetsched.storm.SchedulerScaleBenchmark SCENARIO.json PLANNER_URL SCHEDULERS MAX_ROUNDS
 *     ROUND_INTERVAL_MS TIME_LIMIT_S STEADY_ROUNDS</pre>
 */
public final class SchedulerScaleBenchmark {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern PLAN_ID = Pattern.compile("plan ([0-9a-f]{32})");
    /** Rebalances the plugin asked for in the current run. */
    private static int rebalances;

    private SchedulerScaleBenchmark() {
    }

    /** The scenario's knobs for one run of one scheduler. */
    record Limits(int maxRounds, long roundIntervalMs, long timeLimitMs, int steadyRounds) {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: SchedulerScaleBenchmark SCENARIO.json PLANNER_URL SCHEDULERS MAX_ROUNDS "
                    + "ROUND_INTERVAL_MS TIME_LIMIT_S STEADY_ROUNDS");
            System.exit(2);
        }
        JsonNode scenario = JSON.readTree(new File(args[0]));
        URI planner = URI.create(args[1]);
        Limits limits = new Limits(Integer.parseInt(args[3]), Long.parseLong(args[4]),
                Long.parseLong(args[5]) * 1000, Integer.parseInt(args[6]));
        Map<String, SupervisorDetails> supervisors = supervisors(scenario.get("supervisors"));
        ObjectNode out = JSON.createObjectNode();
        out.put("supervisors", supervisors.size());
        out.put("topologies", scenario.get("topologies").size());
        ArrayNode results = out.putArray("results");
        for (String name : args[2].split(",")) {
            Topologies topologies = topologies(scenario.get("topologies"));
            results.add(run(name.trim(), supervisors, topologies, planner, limits));
            System.gc();
        }
        System.out.println(JSON.writeValueAsString(out));
        System.exit(0); // Storm's and the HTTP client's non-daemon threads would keep the JVM
    }

    static Map<String, SupervisorDetails> supervisors(JsonNode list) {
        Map<String, SupervisorDetails> supervisors = new LinkedHashMap<>();
        for (JsonNode s : list) {
            supervisors.put(s.get("id").asText(), StormFixtures.supervisor(s.get("id").asText(), s.get("id").asText(),
                    s.get("type").asText(), s.get("cores").asInt(), s.get("slots").asInt()));
        }
        return supervisors;
    }

    /** Each topology a chain spout -> low -> mid -> high with the scenario's executor counts, conf and ackers. */
    static Topologies topologies(JsonNode list) {
        Map<String, TopologyDetails> byId = new LinkedHashMap<>();
        for (JsonNode t : list) {
            TopologyBuilder builder = new TopologyBuilder();
            builder.setSpout("spout", new TestWordSpout(), t.get("spout").asInt());
            builder.setBolt("low", new TestWordCounter(), t.get("low").asInt()).shuffleGrouping("spout");
            builder.setBolt("mid", new TestWordCounter(), t.get("mid").asInt()).shuffleGrouping("low");
            builder.setBolt("high", new TestWordCounter(), t.get("high").asInt()).shuffleGrouping("mid");
            StormTopology topology = builder.createTopology();
            Map<String, Object> conf = JSON.convertValue(t.get("conf"), JSON.getTypeFactory()
                    .constructMapType(HashMap.class, String.class, Object.class));
            TopologyDetails details = StormFixtures.topology(t.get("id").asText(), topology, t.get("ackers").asInt(),
                    t.get("workers").asInt(), conf);
            byId.put(details.getId(), details);
        }
        return new Topologies(byId);
    }

    private static IScheduler scheduler(String name, URI proxy, List<String> rebalanced) {
        Map<String, Object> conf = new HashMap<>(Utils.readDefaultConfig());
        switch (name) {
            case "hetsched" -> {
                conf.put(SchedulerSettings.PLANNER_URL, proxy.toString());
                conf.put(SchedulerSettings.PLANNER_TIMEOUT_MS, 60_000);
                HetschedScheduler scheduler = new HetschedScheduler(System::currentTimeMillis, null,
                        (topology, waitSecs) -> {
                            synchronized (rebalanced) {
                                rebalanced.add(topology);
                            }
                        });
                scheduler.prepare(conf, new StormMetricsRegistry());
                return scheduler;
            }
            case "ras" -> {
                ResourceAwareScheduler ras = new ResourceAwareScheduler();
                ras.prepare(conf, new StormMetricsRegistry());
                return ras;
            }
            case "default" -> {
                DefaultScheduler storm = new DefaultScheduler();
                storm.prepare(conf, new StormMetricsRegistry());
                return storm;
            }
            default -> throw new IllegalArgumentException("unknown scheduler " + name + ": hetsched, ras or default");
        }
    }

    /** Rounds until every topology is placed (or the limits), then {@code steadyRounds} more with nothing to place. */
    static ObjectNode run(String name, Map<String, SupervisorDetails> supervisors, Topologies topologies, URI planner,
                          Limits limits) throws IOException {
        List<String> rebalanced = new ArrayList<>();
        rebalances = 0;
        ObjectNode result = JSON.createObjectNode();
        result.put("scheduler", name);
        ArrayNode rounds = result.putArray("rounds");
        try (CountingProxy proxy = new CountingProxy(planner)) {
            IScheduler scheduler = scheduler(name, proxy.url(), rebalanced);
            Map<String, SchedulerAssignment> assignments = new HashMap<>();
            Map<String, String> statuses = new HashMap<>();
            Cluster cluster = null;
            long start = System.nanoTime();
            int steady = -1;
            Runtime runtime = Runtime.getRuntime();
            for (int round = 0; round < limits.maxRounds(); round++) {
                long roundStart = System.nanoTime();
                int requestsBefore = proxy.total();
                rebalance(rebalanced, topologies, assignments);
                cluster = StormFixtures.cluster(supervisors, topologies, assignments);
                long t0 = System.nanoTime();
                scheduler.schedule(topologies, cluster);
                double ms = (System.nanoTime() - t0) / 1e6;
                assignments = new HashMap<>(cluster.getAssignments());
                statuses.putAll(cluster.getStatusMap());
                int placed = placedCount(cluster, topologies);
                ObjectNode r = rounds.addObject();
                r.put("ms", ms);
                r.put("placed", placed);
                r.put("heap_mb", (runtime.totalMemory() - runtime.freeMemory()) / 1048576.0);
                r.put("requests", proxy.total() - requestsBefore);
                r.put("at_s", (System.nanoTime() - start) / 1e9);
                if (placed == topologies.getTopologies().size() && steady < 0) {
                    steady = 0;
                    result.put("rounds_to_place_all", round + 1);
                    result.put("seconds_to_place_all", (System.nanoTime() - start) / 1e9);
                }
                if (steady >= 0 && steady++ >= limits.steadyRounds()) {
                    break;
                }
                if ((System.nanoTime() - start) / 1_000_000 > limits.timeLimitMs()) {
                    result.put("stopped_by", "time limit");
                    break;
                }
                long sleep = limits.roundIntervalMs() - (System.nanoTime() - roundStart) / 1_000_000;
                if (sleep > 0) {
                    sleepMs(sleep);
                }
            }
            System.gc();
            result.put("heap_after_gc_mb", (runtime.totalMemory() - runtime.freeMemory()) / 1048576.0);
            result.put("placed", placedCount(cluster, topologies));
            result.set("requests_by_call", JSON.valueToTree(proxy.byCall()));
            result.set("statuses", JSON.valueToTree(statusKinds(statuses, topologies)));
            result.set("status_reasons", JSON.valueToTree(statusReasons(statuses, topologies)));
            result.put("rebalances", rebalances);
            ArrayNode unplaced = result.putArray("unplaced");
            for (TopologyDetails t : topologies.getTopologies()) {
                if (unplaced.size() < 10 && !cluster.getUnassignedExecutors(t).isEmpty()) {
                    unplaced.add(t.getId() + ": " + statuses.get(t.getId()));
                }
            }
            if (scheduler instanceof HetschedScheduler) {
                result.put("off_plan_executors", offPlan(cluster, statuses, topologies, planner));
            }
            scheduler.cleanup();
        }
        return result;
    }

    /**
     * Nimbus's rebalance of the topologies the plugin asked to re-place (with no drain here): their slots freed, so
     * the next round schedules them again.
     */
    private static void rebalance(List<String> asked, Topologies topologies, Map<String, SchedulerAssignment> assignments) {
        synchronized (asked) {
            for (String name : asked) {
                TopologyDetails topology = topologies.getByName(name);
                if (topology != null) {
                    assignments.remove(topology.getId());
                }
            }
            rebalances += asked.size();
            asked.clear();
        }
    }

    private static int placedCount(Cluster cluster, Topologies topologies) {
        int placed = 0;
        for (TopologyDetails t : topologies.getTopologies()) {
            if (cluster.getAssignmentById(t.getId()) != null && cluster.getUnassignedExecutors(t).isEmpty()) {
                placed++;
            }
        }
        return placed;
    }

    /** How many topologies end in each kind of status (its first words, up to a parenthesis or colon). */
    private static Map<String, Integer> statusKinds(Map<String, String> statuses, Topologies topologies) {
        Map<String, Integer> kinds = new TreeMap<>();
        for (TopologyDetails t : topologies.getTopologies()) {
            String status = statuses.get(t.getId());
            String kind = status == null ? "(none)" : status.replaceFirst("^hetsched: ", "").split("[(:;]", 2)[0].trim();
            kinds.merge(kind, 1, Integer::sum);
        }
        return kinds;
    }

    /**
     * How many topologies end with each reason a status gives in its first parentheses ("planner not used (no
     * supervisor has a free worker slot)": why the planner's plan was not used), plan ids and numbers masked.
     */
    private static Map<String, Integer> statusReasons(Map<String, String> statuses, Topologies topologies) {
        Map<String, Integer> reasons = new TreeMap<>();
        for (TopologyDetails t : topologies.getTopologies()) {
            String status = statuses.get(t.getId());
            if (status == null) {
                continue;
            }
            Matcher m = Pattern.compile("\\(([^()]*)").matcher(status);
            String reason = m.find() ? m.group(1) : status;
            reasons.merge(reason.replaceAll("[0-9a-f]{32}", "<plan>").replaceAll("[0-9]+", "N"), 1, Integer::sum);
        }
        return reasons;
    }

    /**
     * Executors of topologies placed by plan that run on a supervisor their plan does not name for their component
     * (system components, which a stored plan may lack, left out).
     */
    static int offPlan(Cluster cluster, Map<String, String> statuses, Topologies topologies, URI planner) {
        HttpClient http = HttpClient.newHttpClient();
        int off = 0;
        for (TopologyDetails t : topologies.getTopologies()) {
            String status = statuses.get(t.getId());
            Matcher m = status == null ? null : PLAN_ID.matcher(status);
            SchedulerAssignment assignment = cluster.getAssignmentById(t.getId());
            if (m == null || !m.find() || assignment == null || !status.contains("placed by planner")) {
                continue;
            }
            Map<String, Set<String>> named = new HashMap<>();
            try {
                HttpResponse<String> answer = http.send(HttpRequest.newBuilder(
                        planner.resolve("/v1/plans/" + m.group(1))).build(), HttpResponse.BodyHandlers.ofString());
                for (JsonNode a : JSON.readTree(answer.body()).get("assignments")) {
                    named.computeIfAbsent(a.get("component").asText(), k -> new HashSet<>()).add(a.get("machine").asText());
                }
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException("reading plan " + m.group(1) + " failed", e);
            }
            for (Map.Entry<ExecutorDetails, WorkerSlot> e : assignment.getExecutorToSlot().entrySet()) {
                String component = t.getExecutorToComponent().get(e.getKey());
                if (!component.startsWith("__") && !named.getOrDefault(component, Set.of()).contains(e.getValue().getNodeId())) {
                    off++;
                }
            }
        }
        return off;
    }

    private static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
