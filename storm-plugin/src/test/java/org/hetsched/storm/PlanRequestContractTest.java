package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.Config;
import org.apache.storm.generated.Bolt;
import org.apache.storm.generated.SpoutSpec;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.testing.TestGlobalCount;
import org.apache.storm.testing.TestWordCounter;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;
import org.apache.storm.utils.Utils;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The contract between the plugin and the planning service, from the plugin's side: the PlanRequest
 * bodies the scheduler really sends for representative Storm topologies and clusters are written to
 * {@code target/contract/plan-requests/NAME.json}, where tests/test_plugin_contract.py validates each
 * with the service's own model and plans it.
 */
class PlanRequestContractTest {
    static final Path OUT = Path.of("target", "contract", "plan-requests");
    private static final int GENEROUS_TIMEOUT_MS = 60_000;

    @BeforeAll
    static void emptyOut() throws IOException {
        Files.createDirectories(OUT);
        try (var old = Files.list(OUT)) {
            for (Path file : old.filter(p -> p.toString().endsWith(".json")).toList()) {
                Files.delete(file);
            }
        }
    }

    @Test
    void linearWithAckersOnThreeMachineTypesWithBaseLoad() throws Exception {
        StormTopology linear = StormFixtures.linear(2, 3);
        TopologyDetails topology = topology("linear-1", linear, Map.of("__acker", 2), Map.of(
                TopologySettings.PROFILES, "micro",
                TopologySettings.COMPONENT_PROFILES, Map.of(
                        "spout", "spout", "low", "lowCompute", "high", "highCompute", "sink", "sink")));
        Map<String, SupervisorDetails> supervisors = byId(
                supervisor("sup-a", "small-1", "host-1", "small", 1, 2),
                supervisor("sup-b", "small-2", "host-2", "small", 1, 2),
                supervisor("sup-c", "medium-1", "host-3", "medium", 2, 3),
                supervisor("sup-d", "large-1", "host-4", "large", 4, 4));
        JsonNode request = sent("linear-ackers-three-types-base-load", topology, supervisors,
                Map.of("small", 12.5, "large", 3.0));

        assertEquals(Map.of("spout", 1, "low", 2, "high", 3, "sink", 1, "__acker", 2), parallelism(request));
        assertEquals(List.of("small-1", "small-2", "medium-1", "large-1"), machineIds(request));
        Map<String, Double> capacity = new TreeMap<>();
        request.get("cluster").get("machine_types").forEach(t -> capacity.put(t.get("name").asText(), t.get("capacity").asDouble()));
        assertEquals(Map.of("large", 97.0, "medium", 100.0, "small", 87.5), capacity);
        assertTrue(request.get("topology").get("components").findValues("profile").stream()
                .noneMatch(p -> p.asText().startsWith("__")), "a system component was given a profile");
    }

    @Test
    void diamondWithEveryGroupingAPlanIdStrategyAndOptions() throws Exception {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout", new TestWordSpout(), 2);
        builder.setBolt("low", new TestWordCounter(), 3).localOrShuffleGrouping("spout");
        builder.setBolt("mid", new TestWordCounter(), 2).partialKeyGrouping("spout", new Fields("word"));
        builder.setBolt("high", new TestWordCounter(), 2).fieldsGrouping("low", new Fields("word")).allGrouping("mid");
        builder.setBolt("sink", new TestGlobalCount(), 1).globalGrouping("high");
        Map<String, Object> conf = new HashMap<>();
        conf.put(TopologySettings.PROFILES, "paper");
        conf.put(TopologySettings.STRATEGY, "fast");
        conf.put(TopologySettings.PLAN_ID, "p-contract-1");
        conf.put(TopologySettings.OPTIONS, Map.of("max_utilization", 0.8, "time_limit_s", 5));
        conf.put(TopologySettings.MACHINE_TYPE_CORES, Map.of("fast", 2.0));
        conf.put(TopologySettings.COMPONENT_PROFILES, Map.of(
                "spout", "spout", "low", "lowCompute", "mid", "midCompute", "high", "highCompute", "sink", "sink"));
        TopologyDetails topology = topology("diamond-1", builder.createTopology(), Map.of("__acker", 1), conf);
        Map<String, SupervisorDetails> supervisors = byId(
                supervisor("sup-fast-1", "host-1", "fast", null, 4),
                supervisor("sup-fast-2", "host-2", "fast", null, 4),
                supervisor("sup-untyped", "host-3", null, null, 2));
        JsonNode request = sent("diamond-groupings-plan-id-options", topology, supervisors, Map.of());

        Map<String, String> groupings = new TreeMap<>();
        request.get("topology").get("streams").forEach(
                s -> groupings.put(s.get("from").asText() + "->" + s.get("to").asText(), s.get("grouping").asText()));
        assertEquals(Map.of("spout->low", "local_or_shuffle", "spout->mid", "partial_key", "low->high", "fields",
                "mid->high", "all", "high->sink", "global"), groupings);
        assertEquals("p-contract-1", request.get("plan_id").asText());
        assertEquals("fast", request.get("strategy").asText());
        assertEquals(0.8, request.get("options").get("max_utilization").asDouble());
        Map<String, String> cores = new TreeMap<>();
        request.get("cluster").get("machine_types").forEach(t -> cores.put(t.get("name").asText(), String.valueOf(t.get("cores"))));
        assertEquals(Map.of("fast", "2.0", "default", "null"), cores,
                "cores from hetsched.machine.type.cores; a supervisor naming no machine type is of the default type");
    }

    @Test
    void starWithTwoSpoutsAnEventLoggerAndOneMachineType() throws Exception {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout1", new TestWordSpout(), 1);
        builder.setSpout("spout2", new TestWordSpout(), 1);
        builder.setBolt("high", new TestWordCounter(), 4).shuffleGrouping("spout1").shuffleGrouping("spout2");
        builder.setBolt("low", new TestWordCounter(), 2).shuffleGrouping("high");
        builder.setBolt("mid", new TestWordCounter(), 2).shuffleGrouping("high");
        TopologyDetails topology = topology("star-1", builder.createTopology(), Map.of("__acker", 1, "__eventlogger", 1),
                Map.of(TopologySettings.PROFILES, "star-profiles"));
        Map<String, SupervisorDetails> supervisors = byId(
                supervisor("sup-1", "host-1", "std", 2, 4),
                supervisor("sup-2", "host-2", "std", 2, 4));
        JsonNode request = sent("star-two-spouts-event-logger", topology, supervisors, Map.of());

        assertEquals(Map.of("spout1", 1, "spout2", 1, "high", 4, "low", 2, "mid", 2, "__acker", 1, "__eventlogger", 1),
                parallelism(request));
        for (JsonNode c : request.get("topology").get("components")) {
            String id = c.get("id").asText();
            assertEquals(id.startsWith("__") ? null : id, c.hasNonNull("profile") ? c.get("profile").asText() : null,
                    "a component not in hetsched.component.profiles is its own profile key");
        }
        assertEquals("star-profiles", request.get("profiles").get("name").asText());
    }

    @Test
    void memoryOfSupervisorsComponentsAndTheWorkerWhereTheTopologyDeclaresItsWorkerMemory() throws Exception {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout", new TestWordSpout(), 1);
        builder.setBolt("high", new TestWordCounter(), 3).shuffleGrouping("spout").setMemoryLoad(512.0, 64.0);
        Map<String, Object> conf = new HashMap<>();
        conf.put(TopologySettings.PROFILES, "micro");
        conf.put(TopologySettings.WORKER_MEMORY_MB, 300);
        conf.put(TopologySettings.COMPONENT_PROFILES, Map.of("spout", "spout", "high", "highCompute"));
        TopologyDetails topology = topology("memory-1", builder.createTopology(), Map.of("__acker", 1), conf);
        Map<String, SupervisorDetails> supervisors = byId(
                supervisor("sup-a", "small-1", "host-1", "small", 1, 2, 1024.0),
                supervisor("sup-b", "small-2", "host-2", "small", 1, 2, 1536.0),
                supervisor("sup-c", "large-1", "host-3", "large", 4, 2, 4096.0));
        JsonNode request = sent("memory-worker-components-supervisors", topology, supervisors, Map.of());

        Map<String, Double> typeMemory = new TreeMap<>();
        request.get("cluster").get("machine_types").forEach(
                t -> typeMemory.put(t.get("name").asText(), t.get("memory_mb").asDouble()));
        assertEquals(Map.of("small", 1024.0, "large", 4096.0), typeMemory,
                "a machine type's memory is the least supervisor.memory.capacity.mb of its supervisors");
        Map<String, Double> componentMemory = new TreeMap<>();
        request.get("topology").get("components").forEach(
                c -> componentMemory.put(c.get("id").asText(), c.get("memory_mb").asDouble()));
        assertEquals(576.0, componentMemory.get("high"), "on-heap 512 plus off-heap 64 MB, as RAS reads it");
        assertEquals(Set.of("spout", "high", "__acker"), componentMemory.keySet());
        assertTrue(componentMemory.get("spout") > 0, "an undeclared component gets Storm's default request");
        assertEquals(300.0, request.get("topology").get("worker_memory_mb").asDouble());
    }

    @Test
    void theWorkerBudgetGoesAlongAsTheTopologysMaxWorkers() throws Exception {
        Map<String, Object> conf = new HashMap<>();
        conf.put(TopologySettings.PROFILES, "micro");
        conf.put(TopologySettings.MAX_WORKERS, 2);
        conf.put(TopologySettings.COMPONENT_PROFILES, Map.of(
                "spout", "spout", "low", "lowCompute", "high", "highCompute", "sink", "sink"));
        TopologyDetails topology = topology("budget-1", StormFixtures.linear(2, 3), Map.of("__acker", 1), conf);
        Map<String, SupervisorDetails> supervisors = byId(
                supervisor("sup-a", "small-1", "host-1", "small", 1, 2),
                supervisor("sup-b", "small-2", "host-2", "small", 1, 2),
                supervisor("sup-c", "large-1", "host-3", "large", 4, 4));
        JsonNode request = sent("linear-worker-budget", topology, supervisors, Map.of());

        assertEquals(2, request.get("topology").get("max_workers").asInt());
    }

    @Test
    void noComponentMemoryWhereTheTopologyDeclaresNoWorkerMemory() throws Exception {
        TopologyDetails topology = topology("linear-2", StormFixtures.linear(1, 2), Map.of("__acker", 1),
                Map.of(TopologySettings.PROFILES, "micro"));
        Map<String, SupervisorDetails> supervisors = byId(supervisor("sup-a", "small-1", "host-1", "small", 1, 2, 1024.0));
        JsonNode request = sent("linear-no-memory", topology, supervisors, Map.of());

        assertTrue(request.get("topology").get("components").findValues("memory_mb").isEmpty());
        assertFalse(request.get("topology").has("worker_memory_mb"));
        assertEquals(1024.0, request.get("cluster").get("machine_types").get(0).get("memory_mb").asDouble(),
                "the supervisors' memory goes along always: with no component memory it binds nothing");
    }

    @Test
    void theFakePlannerRefusesWhatTheServiceRefuses() throws Exception {
        ObjectNode good = FakePlanner.JSON.createObjectNode();
        ObjectNode topology = good.putObject("topology").put("name", "t");
        topology.putArray("components").addObject().put("id", "spout").put("kind", "spout").put("profile", "p").put("parallelism", 1);
        topology.putArray("streams");
        ObjectNode cluster = good.putObject("cluster");
        cluster.putArray("machine_types").addObject().put("name", "small");
        cluster.putArray("machines").addObject().put("id", "m1").put("type", "small");
        good.putObject("profiles").put("name", "micro");
        assertNull(PlanRequestSchema.fault(good));

        Map<String, java.util.function.Consumer<ObjectNode>> breaks = new TreeMap<>();
        breaks.put("the request has the unknown field 'planId'", r -> r.put("planId", "p-1"));
        breaks.put("component spout has kind source, not spout or bolt",
                r -> ((ObjectNode) r.get("topology").get("components").get(0)).put("kind", "source"));
        breaks.put("the stream spout -> sink names an unknown component",
                r -> ((ObjectNode) r.get("topology")).putArray("streams").addObject().put("from", "spout").put("to", "sink"));
        breaks.put("machine m1 is of unknown machine type large",
                r -> ((ObjectNode) r.get("cluster").get("machines").get(0)).put("type", "large"));
        breaks.put("machine type small has capacity 0.0, not a positive number",
                r -> ((ObjectNode) r.get("cluster").get("machine_types").get(0)).put("capacity", 0.0));
        breaks.put("profiles must give exactly one of 'name' (a stored profile set) or 'entries' (inline)",
                r -> ((ObjectNode) r.get("profiles")).putArray("entries"));

        try (FakePlanner planner = new FakePlanner(FakePlanner.planning("p-1", (c, i, machines) -> machines.get(0)))) {
            HttpClient http = HttpClient.newHttpClient();
            for (Map.Entry<String, java.util.function.Consumer<ObjectNode>> broken : breaks.entrySet()) {
                ObjectNode request = good.deepCopy();
                broken.getValue().accept(request);
                HttpResponse<String> answer = http.send(HttpRequest.newBuilder(URI.create(planner.url() + "/v1/plans"))
                        .POST(HttpRequest.BodyPublishers.ofString(request.toString())).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(422, answer.statusCode(), broken.getKey());
                assertEquals(broken.getKey(), FakePlanner.JSON.readTree(answer.body()).get("detail").asText());
            }
            HttpResponse<String> answer = http.send(HttpRequest.newBuilder(URI.create(planner.url() + "/v1/plans"))
                    .POST(HttpRequest.BodyPublishers.ofString(good.toString())).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(201, answer.statusCode(), answer.body());
        }
    }

    /** The body the scheduler POSTs to /v1/plans for this topology and cluster, written to {@link #OUT}. */
    private static JsonNode sent(String name, TopologyDetails topology, Map<String, SupervisorDetails> supervisors,
                                 Map<String, Double> baseLoad) throws Exception {
        try (FakePlanner planner = new FakePlanner(FakePlanner.planning("p-" + name, (c, i, machines) -> machines.get(i % machines.size())))) {
            ObjectNode load = FakePlanner.JSON.valueToTree(baseLoad);
            planner.answerProfileReadsWith(call -> FakePlanner.Answer.json(200, FakePlanner.profileSetWithBaseLoad(
                    call.path().substring("/v1/profiles/".length()), baseLoad.isEmpty() ? null : load)));
            Map<String, Object> yaml = new HashMap<>();
            yaml.put(SchedulerSettings.PLANNER_URL, planner.url().toString());
            yaml.put(SchedulerSettings.PLANNER_TIMEOUT_MS, GENEROUS_TIMEOUT_MS);
            AtomicLong clock = new AtomicLong(1_000_000);
            HetschedScheduler scheduler = StormFixtures.scheduler(yaml, clock::get);
            Cluster cluster = StormFixtures.cluster(supervisors, topology);
            scheduler.schedule(new org.apache.storm.scheduler.Topologies(topology), cluster);

            List<FakePlanner.Call> posts = planner.calls().stream().filter(c -> c.method().equals("POST")).toList();
            assertEquals(1, posts.size(), "the scheduler should ask for one plan: " + planner.calls());
            JsonNode body = posts.get(0).body();
            Files.createDirectories(OUT);
            Files.writeString(OUT.resolve(name + ".json"), FakePlanner.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(body));
            assertNull(PlanRequestSchema.fault(body), "the plugin's request breaks the service's basic rules");
            assertEquals(topology.getExecutors().size(), StormFixtures.placement(cluster, topology.getId()).size(),
                    "every executor is placed by the plan");
            return body;
        }
    }

    /**
     * A topology as Nimbus hands it to a scheduler: one task per executor, task ids from 1 over the
     * components in id order, Storm's system components (``__acker``, ``__eventlogger``) included.
     */
    private static TopologyDetails topology(String id, StormTopology topology, Map<String, Integer> system,
                                            Map<String, Object> conf) {
        Map<String, Object> topoConf = new HashMap<>(Utils.readDefaultConfig());
        topoConf.put(Config.TOPOLOGY_NAME, id.replaceAll("-\\d+$", ""));
        topoConf.putAll(conf);
        Map<String, Integer> parallelism = new TreeMap<>(system);
        for (Map.Entry<String, SpoutSpec> s : topology.get_spouts().entrySet()) {
            parallelism.put(s.getKey(), s.getValue().get_common().get_parallelism_hint());
        }
        for (Map.Entry<String, Bolt> b : topology.get_bolts().entrySet()) {
            parallelism.put(b.getKey(), b.getValue().get_common().get_parallelism_hint());
        }
        Map<ExecutorDetails, String> executors = new HashMap<>();
        int task = 1;
        for (Map.Entry<String, Integer> component : parallelism.entrySet()) {
            for (int i = 0; i < component.getValue(); i++, task++) {
                executors.put(new ExecutorDetails(task, task), component.getKey());
            }
        }
        return new TopologyDetails(id, topoConf, topology, 2, executors, 0, "tester");
    }

    private static Map<String, Integer> parallelism(JsonNode request) {
        Map<String, Integer> counts = new TreeMap<>();
        request.get("topology").get("components").forEach(c -> counts.put(c.get("id").asText(), c.get("parallelism").asInt()));
        return counts;
    }

    private static List<String> machineIds(JsonNode request) {
        List<String> ids = new ArrayList<>();
        request.get("cluster").get("machines").forEach(m -> ids.add(m.get("id").asText()));
        return ids;
    }
}
