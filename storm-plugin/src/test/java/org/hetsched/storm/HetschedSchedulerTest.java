package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.executorsOf;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.placement;
import static org.hetsched.storm.StormFixtures.placementBy;
import static org.hetsched.storm.StormFixtures.slotsBySupervisor;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.DefaultScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The scheduler against real Storm scheduler objects and a real HTTP planner on 127.0.0.1. */
class HetschedSchedulerTest {
    /** The machine is shared and noisy: only the slow-planner test relies on a short timeout. */
    private static final int GENEROUS_TIMEOUT_MS = 60_000;
    private static final Map<String, Object> ASKS_PLANNER = Map.of(
            TopologySettings.PROFILES, "micro",
            TopologySettings.STRATEGY, "paper");

    /** Heavy bolt instances on the fast machine, everything else dealt over the small ones. */
    static final FakePlanner.Rule HIGH_ON_FAST = (component, index, machines) -> {
        if (component.equals("high")) {
            return "sup-fast-1";
        }
        List<String> small = machines.stream().filter(m -> m.startsWith("sup-small")).toList();
        return small.get(index % small.size());
    };

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;
    @TempDir
    Path folder;
    private Path tokenFile;

    @BeforeEach
    void start() throws IOException {
        tokenFile = tokenFile("s3cret\n", "rw-------");
        planner = new FakePlanner(FakePlanner.planning("p-1", HIGH_ON_FAST));
        supervisors = byId(
                supervisor("sup-small-1", "host-1", "small", null, 4),
                supervisor("sup-small-2", "host-2", "small", null, 4),
                supervisor("sup-fast-1", "host-3", "fast", 4, 4));
    }

    @AfterEach
    void stop() {
        planner.close();
    }

    private HetschedScheduler schedulerFor(Object url, Map<String, Object> extra) {
        Map<String, Object> yaml = new HashMap<>();
        yaml.put(SchedulerSettings.PLANNER_URL, url.toString());
        yaml.put(SchedulerSettings.PLANNER_TOKEN_FILE, tokenFile.toString());
        yaml.put(SchedulerSettings.PLANNER_TIMEOUT_MS, GENEROUS_TIMEOUT_MS);
        yaml.putAll(extra);
        yaml.values().removeIf(java.util.Objects::isNull);
        return StormFixtures.scheduler(yaml, clock::get);
    }

    private HetschedScheduler scheduler() {
        return schedulerFor(planner.url(), Map.of());
    }

    private static TopologyDetails linearTopology(String id, Map<String, Object> conf) {
        return topology(id, linear(2, 3), 2, 4, conf);
    }

    @Test
    void placesEveryExecutorWhereThePlanSaysOneWorkerPerSupervisor() {
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        Map<ExecutorDetails, WorkerSlot> placed = placement(cluster, "linear-1");
        assertEquals(linear.getExecutors(), placed.keySet(), "every executor is placed");
        for (String component : List.of("spout", "low", "high", "sink", "__acker")) {
            List<ExecutorDetails> executors = executorsOf(linear, component);
            for (int i = 0; i < executors.size(); i++) {
                String expected = HIGH_ON_FAST.machineFor(component, i, List.of("sup-fast-1", "sup-small-1", "sup-small-2"));
                assertEquals(expected, placed.get(executors.get(i)).getNodeId(),
                        "instance " + i + " of " + component + " runs where the plan put it");
            }
        }
        slotsBySupervisor(cluster, "linear-1").forEach((supervisor, slots) ->
                assertEquals(1, slots.size(), supervisor + " runs the topology in one worker"));
        assertEquals("hetsched: placed by planner (plan p-1, strategy paper) on 3 supervisors in 3 workers",
                cluster.getStatus("linear-1"));

        FakePlanner.Call call = planner.calls().get(0);
        assertEquals("POST", call.method());
        assertEquals("/v1/plans", call.path());
        assertEquals("Bearer s3cret", call.authorization());
    }

    @Test
    void sendsTheTopologyAndClusterAsThePlanRequestOfTheApi() {
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.COMPONENT_PROFILES, Map.of("low", "lowCompute", "high", "highCompute"));
        conf.put(TopologySettings.PLAN_ID, "p-0");
        conf.put(TopologySettings.MACHINE_TYPE_CORES, Map.of("small", 1, "fast", 99));
        conf.put(TopologySettings.OPTIONS, Map.of("max_utilization", 0.9));
        TopologyDetails linear = linearTopology("linear-1", conf);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals("/v1/plans/p-0", planner.calls().get(0).path(), "the stored plan is asked for first");
        JsonNode request = planner.calls().get(1).body();
        JsonNode topology = request.get("topology");
        assertEquals("linear", topology.get("name").asText());
        Map<String, JsonNode> components = new HashMap<>();
        topology.get("components").forEach(c -> components.put(c.get("id").asText(), c));
        assertEquals(Set.of("spout", "low", "high", "sink", "__acker"), components.keySet());
        assertEquals("spout", components.get("spout").get("kind").asText());
        assertEquals("bolt", components.get("high").get("kind").asText());
        assertEquals("highCompute", components.get("high").get("profile").asText());
        assertEquals("lowCompute", components.get("low").get("profile").asText());
        assertEquals("sink", components.get("sink").get("profile").asText(), "the default profile is the component id");
        assertFalse(components.get("__acker").has("profile"), "system components need no profile");
        components.forEach((id, c) -> assertEquals(executorsOf(linear, id).size(), c.get("parallelism").asInt(),
                id + " is sent with its executor count fixed"));

        Set<String> streams = new java.util.HashSet<>();
        topology.get("streams").forEach(s -> streams.add(
                s.get("from").asText() + ">" + s.get("to").asText() + ":" + s.get("grouping").asText()));
        assertEquals(Set.of("spout>low:shuffle", "low>high:fields", "high>sink:global"), streams);

        Map<String, JsonNode> types = new HashMap<>();
        request.get("cluster").get("machine_types").forEach(t -> types.put(t.get("name").asText(), t));
        assertEquals(Set.of("small", "fast"), types.keySet());
        assertEquals(4.0, types.get("fast").get("cores").asDouble(), "supervisor meta cores win over topology conf");
        assertEquals(1.0, types.get("small").get("cores").asDouble(), "topology conf gives cores where meta does not");
        assertEquals(100.0, types.get("small").get("capacity").asDouble());
        assertEquals(4, types.get("small").get("slots").asInt());
        Set<String> machines = new java.util.HashSet<>();
        request.get("cluster").get("machines").forEach(m -> machines.add(m.get("id").asText() + "=" + m.get("type").asText()));
        assertEquals(Set.of("sup-small-1=small", "sup-small-2=small", "sup-fast-1=fast"), machines);

        assertEquals("micro", request.get("profiles").get("name").asText());
        assertEquals("paper", request.get("strategy").asText());
        assertEquals("p-0", request.get("plan_id").asText());
        assertEquals(0.9, request.get("options").get("max_utilization").asDouble());
    }

    @Test
    void mapsEveryStormGroupingToThePlannersName() throws Exception {
        org.apache.storm.topology.TopologyBuilder builder = new org.apache.storm.topology.TopologyBuilder();
        builder.setSpout("spout", new org.apache.storm.testing.TestWordSpout(), 1);
        builder.setBolt("all", new org.apache.storm.testing.TestWordCounter(), 1).allGrouping("spout");
        builder.setBolt("local", new org.apache.storm.testing.TestWordCounter(), 1).localOrShuffleGrouping("spout");
        builder.setBolt("pk", new org.apache.storm.testing.TestWordCounter(), 1)
                .partialKeyGrouping("spout", new org.apache.storm.tuple.Fields("word"));
        builder.setBolt("none", new org.apache.storm.testing.TestWordCounter(), 1).noneGrouping("spout");
        builder.setBolt("direct", new org.apache.storm.testing.TestWordCounter(), 1).directGrouping("spout");
        TopologyDetails td = topology("groupings-1", builder.createTopology(), 1, 1, ASKS_PLANNER);

        TopologyGraph graph = TopologyGraph.of(td);

        Map<String, String> groupings = graph.streams().stream()
                .collect(Collectors.toMap(TopologyGraph.Stream::to, TopologyGraph.Stream::grouping));
        assertEquals(Map.of("all", "all", "local", "local_or_shuffle", "pk", "partial_key",
                "none", "none", "direct", "direct"), groupings);
    }

    @Test
    void plannerDownFallsBackToStormsEvenScheduling() throws IOException {
        assertFallsBackEvenly(FakePlanner.nothingListening(), Map.of(), "planner unreachable");
    }

    @Test
    void plannerSlowerThanTheTimeoutFallsBack() {
        planner.answerWith(call -> new FakePlanner.Answer(201, "{}", 120_000));
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TIMEOUT_MS, 300), "planner timed out");
    }

    @Test
    void plannerErrorFallsBack() {
        planner.answerWith(call -> FakePlanner.Answer.raw(500, "{\"detail\": \"internal error\"}"));
        assertFallsBackEvenly(planner.url(), Map.of(), "HTTP 500: internal error");
    }

    @Test
    void answerThatIsNotJsonFallsBack() {
        planner.answerWith(call -> FakePlanner.Answer.raw(201, "<html>oops"));
        assertFallsBackEvenly(planner.url(), Map.of(), "is not JSON");
    }

    @Test
    void jsonThatIsNotAPlanFallsBack() {
        planner.answerWith(call -> FakePlanner.Answer.raw(201, "{\"id\": \"p-1\", \"assignments\": [{\"component\": 3}]}"));
        assertFallsBackEvenly(planner.url(), Map.of(), "malformed plan");
    }

    @Test
    void planNamingAnUnknownSupervisorFallsBack() {
        planner.answerWith(FakePlanner.planning("p-2", (c, i, machines) -> c.equals("high") ? "sup-gone" : machines.get(0)));
        assertFallsBackEvenly(planner.url(), Map.of(), "supervisor 'sup-gone', which is not in the cluster");
    }

    @Test
    void planWithAWrongInstanceCountFallsBack() {
        planner.answerWith(call -> {
            var plan = FakePlanner.planFor(call.body(), "p-3", HIGH_ON_FAST, true);
            ((com.fasterxml.jackson.databind.node.ArrayNode) plan.get("assignments")).remove(0);
            return FakePlanner.Answer.json(201, plan);
        });
        assertFallsBackEvenly(planner.url(), Map.of(), "the plan places 1 instances of '__acker' but the topology has 2");
    }

    @Test
    void missingProfileSetIsPlacedEvenlyNamingTheSet() {
        planner.answerWith(call -> FakePlanner.Answer.raw(404,
                "{\"detail\": \"profile set 'micro' does not exist: store it with PUT /v1/profiles/micro\", "
                        + "\"error\": \"not_found\"}"));
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Topologies topologies = new Topologies(linear);
        Cluster cluster = cluster(supervisors, topologies, Map.of());

        schedulerFor(planner.url(), Map.of()).schedule(topologies, cluster);

        assertEquals(placementBy(new DefaultScheduler(), supervisors, topologies, Map.of(), "linear-1"),
                placement(cluster, "linear-1"), "placed as Storm's DefaultScheduler places it");
        String status = cluster.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: profile set micro does not exist on the planner at " + planner.url()
                + "; scheduled evenly by Storm's DefaultScheduler at "), status);
    }

    @Test
    void requestThePlannerFindsWrongFallsBack() {
        planner.answerWith(call -> FakePlanner.Answer.raw(422,
                "{\"detail\": \"no profile for (highCompute, fast)\"}"));
        assertFallsBackEvenly(planner.url(), Map.of(), "HTTP 422: no profile for (highCompute, fast)");
    }

    @Test
    void planNeedingMoreSlotsThanASupervisorHasFallsBack() {
        // another topology already holds every port of sup-fast-1, so the planner is not offered it
        TopologyDetails other = topology("other-1", linear(4, 4), 0, 4, Map.of());
        Map<ExecutorDetails, WorkerSlot> held = new HashMap<>();
        int port = StormFixtures.FIRST_PORT;
        for (ExecutorDetails e : other.getExecutors()) {
            held.put(e, new WorkerSlot("sup-fast-1", StormFixtures.FIRST_PORT + (port++ % 4)));
        }
        Map<String, SchedulerAssignment> assignments = Map.of("other-1",
                new org.apache.storm.scheduler.SchedulerAssignmentImpl("other-1", held, null, null));
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Topologies both = new Topologies(other, linear);
        Cluster cluster = cluster(supervisors, both, assignments);

        scheduler().schedule(both, cluster);

        JsonNode machines = planner.calls().get(0).body().get("cluster").get("machines");
        assertEquals(2, machines.size(), "a supervisor without a free slot is not offered");
        assertTrue(cluster.getStatus("linear-1").contains("which has no free worker slot"), cluster.getStatus("linear-1"));
        assertEquals(placementBy(new DefaultScheduler(), supervisors, both, assignments, "linear-1"),
                placement(cluster, "linear-1"));
        assertEquals(held, placement(cluster, "other-1"), "the running topology keeps its assignment");
    }

    @Test
    void executorCapPerWorkerSplitsASupervisorsExecutorsOverMoreWorkers() {
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.MAX_EXECUTORS_PER_WORKER, 2);
        TopologyDetails linear = topology("linear-1", linear(2, 5), 2, 4, conf);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals(3, slotsBySupervisor(cluster, "linear-1").get("sup-fast-1").size(),
                "five executors at most two per worker need three workers");
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: placed by planner"));

        conf.put(TopologySettings.MAX_EXECUTORS_PER_WORKER, 1);
        TopologyDetails tooMany = topology("linear-2", linear(2, 5), 2, 4, conf);
        Cluster small = cluster(supervisors, tooMany);
        scheduler().schedule(new Topologies(tooMany), small);
        assertTrue(small.getStatus("linear-2").contains("which needs 5 worker slots but has 4 free"),
                small.getStatus("linear-2"));
        assertEquals(tooMany.getExecutors(), placement(small, "linear-2").keySet(), "fallen back, fully placed");
    }

    @Test
    void circuitBreakerStopsCallingAFailingPlannerAndRetriesWithGrowingBackoff() {
        planner.answerWith(call -> FakePlanner.Answer.raw(503, "{\"detail\": \"busy\"}"));
        HetschedScheduler scheduler = schedulerFor(planner.url(), Map.of(
                SchedulerSettings.BREAKER_FAILURES, 2,
                SchedulerSettings.BREAKER_BACKOFF_MS, 1_000,
                SchedulerSettings.BREAKER_MAX_BACKOFF_MS, 3_000));

        assertEquals(1, roundCalls(scheduler, "t-1"), "first failure");
        assertEquals(1, roundCalls(scheduler, "t-2"), "second failure opens the breaker for 1000 ms");
        String skipped = statusOfRound(scheduler, "t-3");
        assertTrue(skipped.contains("circuit open for 1000 ms"), skipped);
        assertTrue(skipped.contains("; scheduled evenly by Storm's DefaultScheduler"), skipped);
        assertEquals(2, planner.calls().size(), "no call while open");

        clock.addAndGet(1_000);
        assertEquals(1, roundCalls(scheduler, "t-4"), "one try after the backoff; it fails: open for 2000 ms");
        clock.addAndGet(1_000);
        assertEquals(0, roundCalls(scheduler, "t-5"), "still open");
        clock.addAndGet(1_000);
        assertEquals(1, roundCalls(scheduler, "t-6"), "tried again; fails: open for 3000 ms, the maximum");
        clock.addAndGet(2_000);
        assertTrue(statusOfRound(scheduler, "t-7").contains("circuit open for 3000 ms"));

        planner.answerWith(FakePlanner.planning("p-9", HIGH_ON_FAST));
        clock.addAndGet(1_000);
        assertTrue(statusOfRound(scheduler, "t-8").startsWith("hetsched: placed by planner (plan p-9"));
        assertEquals(1, roundCalls(scheduler, "t-9"), "a success closes the breaker");
        assertEquals(6, planner.calls().size(), "calls in rounds 1, 2, 4, 6, 8 and 9");
    }

    @Test
    void plansOnWhatTheProfileSetsMachineBaseLoadLeavesOfEachMachine() {
        planner.answerProfileReadsWith(call -> FakePlanner.Answer.json(200, FakePlanner.profileSetWithBaseLoad(
                "micro", FakePlanner.JSON.createObjectNode().put("small", 25.0).put("fast", 5.5))));
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals("/v1/profiles/micro", planner.profileReads().get(0).path());
        Map<String, Double> capacity = new HashMap<>();
        planner.calls().get(0).body().get("cluster").get("machine_types")
                .forEach(t -> capacity.put(t.get("name").asText(), t.get("capacity").asDouble()));
        assertEquals(Map.of("small", 75.0, "fast", 94.5), capacity, "100% less each type's base load");
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: placed by planner (plan p-1"),
                cluster.getStatus("linear-1"));
    }

    @Test
    void aProfileSetTheReadDoesNotFindIsStillAskedForSoThePlannerSaysWhatIsWrong() {
        planner.answerProfileReadsWith(call -> FakePlanner.Answer.raw(404, "{\"detail\": \"profile set 'micro' does not exist\"}"));
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        planner.calls().get(0).body().get("cluster").get("machine_types")
                .forEach(t -> assertEquals(100.0, t.get("capacity").asDouble(), "no base load: the whole machine"));
    }

    @Test
    void aBadMachineBaseLoadFallsBackNamingTheMachineTypeWithoutAPlanCall() {
        planner.answerProfileReadsWith(call -> FakePlanner.Answer.json(200, FakePlanner.profileSetWithBaseLoad(
                "micro", FakePlanner.JSON.createObjectNode().put("small", 120.0))));
        assertFallsBackEvenly(planner.url(), Map.of(),
                "profile set micro: the base load of machine type small must be a percent from 0 up to (not including) 100, got 120.0");
        assertTrue(planner.calls().isEmpty(), "no plan asked for with a base load that makes no sense");
    }

    @Test
    void aPlannerThatServesReadsButFailsEveryPlanStillOpensTheBreaker() {
        planner.answerWith(call -> FakePlanner.Answer.raw(503, "{\"detail\": \"busy\"}"));
        HetschedScheduler scheduler = schedulerFor(planner.url(), Map.of(SchedulerSettings.BREAKER_FAILURES, 2));
        roundCalls(scheduler, "t-1");
        roundCalls(scheduler, "t-2");
        assertTrue(statusOfRound(scheduler, "t-3").contains("circuit open"), "two plan failures in a row open it");
        assertEquals(2, planner.profileReads().size(), "no read either while open");
    }

    @Test
    void refusalsOfAnUpPlannerDoNotOpenTheBreaker() {
        planner.answerWith(call -> FakePlanner.Answer.raw(404, "{\"detail\": \"profile set 'micro' does not exist\"}"));
        HetschedScheduler scheduler = schedulerFor(planner.url(), Map.of(SchedulerSettings.BREAKER_FAILURES, 1));
        for (int round = 1; round <= 3; round++) {
            assertEquals(1, roundCalls(scheduler, "t-" + round), "round " + round + " asks the planner");
        }
    }

    @Test
    void runningTopologiesKeepTheirAssignmentAndOnlyNewOnesAreAskedFor() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails plain = topology("plain-1", linear(2, 2), 1, 2, Map.of());
        TopologyDetails planned = linearTopology("planned-1", ASKS_PLANNER);
        Topologies first = new Topologies(plain, planned);
        Cluster round1 = cluster(supervisors, first, Map.of());
        scheduler.schedule(first, round1);
        Map<ExecutorDetails, WorkerSlot> plainBefore = placement(round1, "plain-1");
        Map<ExecutorDetails, WorkerSlot> plannedBefore = placement(round1, "planned-1");
        assertEquals(1, planner.calls().size());
        assertTrue(round1.needsScheduling(planned), "the plan uses 3 workers where topology.workers asks 4");

        TopologyDetails added = linearTopology("added-1", ASKS_PLANNER);
        Topologies second = new Topologies(plain, planned, added);
        Cluster round2 = cluster(supervisors, second, round1.getAssignments());
        scheduler.schedule(second, round2);

        assertEquals(plainBefore, placement(round2, "plain-1"));
        assertEquals(plannedBefore, placement(round2, "planned-1"), "a placed planner topology is not re-planned");
        assertEquals(2, planner.calls().size(), "only the new topology is asked for");
        assertEquals("added", planner.calls().get(1).body().get("topology").get("name").asText());
        assertEquals(added.getExecutors(), placement(round2, "added-1").keySet());
    }

    @Test
    void topologyThatLostExecutorsKeepsTheSurvivorsWhereTheyRunAndRepairsTheRest() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster round1 = cluster(supervisors, linear);
        scheduler.schedule(new Topologies(linear), round1);

        // sup-small-2 dies: Nimbus drops it and the executors that ran there
        Map<String, SupervisorDetails> left = new HashMap<>(supervisors);
        left.remove("sup-small-2");
        Map<ExecutorDetails, WorkerSlot> alive = placement(round1, "linear-1").entrySet().stream()
                .filter(e -> !e.getValue().getNodeId().equals("sup-small-2"))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        Cluster round2 = cluster(left, new Topologies(linear), Map.of("linear-1",
                new org.apache.storm.scheduler.SchedulerAssignmentImpl("linear-1", alive, null, null)));
        scheduler.schedule(new Topologies(linear), round2);

        assertEquals(List.of("/v1/plans", "/v1/repairs"), planner.calls().stream().map(FakePlanner.Call::path).toList());
        Map<ExecutorDetails, WorkerSlot> after = placement(round2, "linear-1");
        assertEquals(linear.getExecutors(), after.keySet());
        alive.forEach((executor, slot) -> assertEquals(slot, after.get(executor), "a survivor moved: " + executor));
        assertTrue(after.values().stream().noneMatch(slot -> slot.getNodeId().equals("sup-small-2")));
        assertTrue(round2.getStatus("linear-1").contains("kept " + alive.size() + " executors where they run"),
                round2.getStatus("linear-1"));
    }

    @Test
    void topologyThatAsksForNoPlannerIsScheduledAsStormWould() {
        TopologyDetails plain = topology("plain-1", linear(2, 3), 2, 3, Map.of());
        Topologies topologies = new Topologies(plain);
        Cluster cluster = cluster(supervisors, topologies, Map.of());

        scheduler().schedule(topologies, cluster);

        assertTrue(planner.calls().isEmpty());
        assertEquals(placementBy(new DefaultScheduler(), supervisors, topologies, Map.of(), "plain-1"),
                placement(cluster, "plain-1"));
        assertTrue(cluster.getStatus("plain-1").contains("asks for no planner"), cluster.getStatus("plain-1"));
    }

    @Test
    void fallbackNoneLeavesTheTopologyWaiting() {
        planner.answerWith(call -> FakePlanner.Answer.raw(500, ""));
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, linear);

        schedulerFor(planner.url(), Map.of(SchedulerSettings.FALLBACK, "none")).schedule(new Topologies(linear), cluster);

        assertNull(cluster.getAssignmentById("linear-1"));
        assertTrue(cluster.getStatus("linear-1").contains("left unscheduled"), cluster.getStatus("linear-1"));
    }

    @Test
    void storedPlanIdAloneReadsThePlanAndSpreadsTheAckersItLeftOut() {
        planner.answerWith(call -> {
            // a plan made before submission names hosts and knows nothing of __acker
            FakePlanner.Rule byHost = (c, i, m) -> c.equals("high") ? "host-3" : "host-" + (1 + i % 2);
            JsonNode request = requestFor(linearTopology("linear-1", ASKS_PLANNER));
            return FakePlanner.Answer.json(200, FakePlanner.planFor(request, "p-7", byHost, false));
        });
        TopologyDetails linear = linearTopology("linear-1", Map.of(TopologySettings.PLAN_ID, "p-7"));
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals("GET", planner.calls().get(0).method());
        assertEquals("/v1/plans/p-7", planner.calls().get(0).path());
        Map<ExecutorDetails, WorkerSlot> placed = placement(cluster, "linear-1");
        assertEquals(linear.getExecutors(), placed.keySet());
        executorsOf(linear, "high").forEach(e -> assertEquals("sup-fast-1", placed.get(e).getNodeId()));
        Set<String> ackerHosts = executorsOf(linear, "__acker").stream()
                .map(e -> placed.get(e).getNodeId()).collect(Collectors.toSet());
        assertEquals(2, ackerHosts.size(), "two ackers on two different supervisors of the plan");
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: placed by planner (stored plan p-7"));
    }

    @Test
    void machinesAreNamedByTheMachineIdTheirSupervisorsDeclare() {
        // Storm's supervisor ids are generated; plans made by the command line use the cluster's machine ids
        Map<String, SupervisorDetails> declared = byId(
                supervisor("6f1c-aaaa", "small-1", "127.0.0.2", "small", null, 4),
                supervisor("6f1c-bbbb", "small-2", "127.0.0.3", "small", null, 4),
                supervisor("6f1c-cccc", "fast-1", "127.0.0.4", "fast", 4, 4));
        planner.answerWith(FakePlanner.planning("p-4", (c, i, m) -> c.equals("high") ? "fast-1" : "small-" + (1 + i % 2)));
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster cluster = cluster(declared, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        Set<String> sent = new java.util.HashSet<>();
        planner.calls().get(0).body().get("cluster").get("machines").forEach(m -> sent.add(m.get("id").asText()));
        assertEquals(Set.of("small-1", "small-2", "fast-1"), sent);
        Map<ExecutorDetails, WorkerSlot> placed = placement(cluster, "linear-1");
        executorsOf(linear, "high").forEach(e -> assertEquals("6f1c-cccc", placed.get(e).getNodeId()));
        List<ExecutorDetails> low = executorsOf(linear, "low");
        assertEquals("6f1c-aaaa", placed.get(low.get(0)).getNodeId());
        assertEquals("6f1c-bbbb", placed.get(low.get(1)).getNodeId());
    }

    @Test
    void storedPlanThatFitsIsUsedWithoutPlanningAgain() {
        JsonNode request = requestFor(linearTopology("linear-1", ASKS_PLANNER));
        planner.answerWith(call -> call.method().equals("GET")
                ? FakePlanner.Answer.json(200, FakePlanner.planFor(request, "p-5", HIGH_ON_FAST, false))
                : FakePlanner.Answer.raw(500, "{\"detail\": \"must not be asked\"}"));
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.PLAN_ID, "p-5");
        TopologyDetails linear = linearTopology("linear-1", conf);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals(1, planner.calls().size());
        executorsOf(linear, "high").forEach(e -> assertEquals("sup-fast-1", placement(cluster, "linear-1").get(e).getNodeId()));
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: placed by planner (stored plan p-5"),
                cluster.getStatus("linear-1"));
    }

    @Test
    void storedPlanThatNoLongerFitsIsReplacedByANewPlan() {
        JsonNode request = requestFor(linearTopology("linear-1", ASKS_PLANNER));
        planner.answerWith(call -> call.method().equals("GET")
                ? FakePlanner.Answer.json(200, FakePlanner.planFor(request, "p-5", (c, i, m) -> "sup-retired", false))
                : FakePlanner.Answer.json(201, FakePlanner.planFor(call.body(), "p-6", HIGH_ON_FAST, true)));
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.PLAN_ID, "p-5");
        TopologyDetails linear = linearTopology("linear-1", conf);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals(List.of("GET", "POST"), planner.calls().stream().map(FakePlanner.Call::method).toList());
        assertEquals("p-5", planner.calls().get(1).body().get("plan_id").asText());
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: placed by planner (plan p-6"),
                cluster.getStatus("linear-1"));
    }

    @Test
    void storedPlanOnMoreMachinesThanTheWorkerBudgetIsReplacedByANewPlanWithinIt() {
        JsonNode request = requestFor(linearTopology("linear-1", ASKS_PLANNER));
        planner.answerWith(call -> call.method().equals("GET")
                ? FakePlanner.Answer.json(200, FakePlanner.planFor(request, "p-5", HIGH_ON_FAST, false))
                : FakePlanner.Answer.json(201, FakePlanner.planFor(call.body(), "p-6", (c, i, m) -> "sup-fast-1", true)));
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.PLAN_ID, "p-5");
        conf.put(TopologySettings.MAX_WORKERS, 1);
        TopologyDetails linear = linearTopology("linear-1", conf);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertEquals(List.of("GET", "POST"), planner.calls().stream().map(FakePlanner.Call::method).toList());
        assertEquals(1, planner.calls().get(1).body().get("topology").get("max_workers").asInt());
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: placed by planner (plan p-6"),
                cluster.getStatus("linear-1"));
    }

    private Path tokenFile(String text, String mode) throws IOException {
        Path file = Files.createTempFile(folder, "token", "");
        Files.writeString(file, text);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
        return file;
    }

    @Test
    void aTokenFileReadableByItsOwnerOnlyIsSentAndReadAgainAtEveryCall() throws IOException {
        HetschedScheduler scheduler = scheduler();
        statusOfRound(scheduler, "linear-1");
        Files.writeString(tokenFile, "rotated");
        statusOfRound(scheduler, "linear-2");

        assertEquals("Bearer s3cret", planner.calls().get(0).authorization());
        assertEquals("Bearer rotated", planner.calls().get(planner.calls().size() - 1).authorization());
    }

    @Test
    void aMissingTokenFileFallsBackNamingTheFileWithoutAPlannerCall() {
        Path missing = folder.resolve("no-such-token");
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, missing.toString()),
                "hetsched.planner.token.file " + missing + " does not exist");
        assertTrue(planner.calls().isEmpty() && planner.profileReads().isEmpty(), "the planner is not asked");
    }

    @Test
    void anEmptyTokenFileFallsBackNamingTheFile() throws IOException {
        Path empty = tokenFile(" \n", "rw-------");
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, empty.toString()),
                "hetsched.planner.token.file " + empty + " is empty");
        assertTrue(planner.calls().isEmpty());
    }

    @Test
    void aTokenFileItsGroupCanReadFallsBackNamingTheFileAndItsMode() throws IOException {
        Path shared = tokenFile("s3cret", "rw-r-----");
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, shared.toString()),
                "hetsched.planner.token.file " + shared + " is readable by its group (rw-r-----)");
        assertTrue(planner.calls().isEmpty());
    }

    @Test
    void aTokenFileOthersCanReadFallsBackNamingTheFileAndItsMode() throws IOException {
        Path open = tokenFile("s3cret", "rw----r--");
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, open.toString()),
                "hetsched.planner.token.file " + open + " is readable by others (rw----r--); make it readable by the Nimbus user only (chmod 600)");
        Path world = tokenFile("s3cret", "rw-r--r--");
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, world.toString()),
                "is readable by group and others (rw-r--r--)");
        assertTrue(planner.calls().isEmpty());
    }

    @Test
    void aFolderOrATokenWithSpacesIsRefused() throws IOException {
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, folder.toString()),
                "hetsched.planner.token.file " + folder + " is not a regular file");
        Path twoWords = tokenFile("s3cret and more", "r--------");
        assertFallsBackEvenly(planner.url(), Map.of(SchedulerSettings.PLANNER_TOKEN_FILE, twoWords.toString()),
                "must hold the token alone");
        assertTrue(planner.calls().isEmpty());
    }

    @Test
    void aTokenFileFixedAfterARefusalIsUsedWithoutRestartingNimbus() throws IOException {
        Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-rw-rw-"));
        HetschedScheduler scheduler = scheduler();
        assertTrue(statusOfRound(scheduler, "linear-1").contains("is readable by group and others"));
        Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));

        assertTrue(statusOfRound(scheduler, "linear-2").startsWith("hetsched: placed by planner"));
        assertEquals("Bearer s3cret", planner.calls().get(0).authorization());
    }

    @Test
    void theDeprecatedInlineTokenIsStillSent() {
        Map<String, Object> inline = new HashMap<>();
        inline.put(SchedulerSettings.PLANNER_TOKEN_FILE, null);
        inline.put(SchedulerSettings.PLANNER_TOKEN, "inline-t0k");
        statusOfRound(schedulerFor(planner.url(), inline), "linear-1");
        assertEquals("Bearer inline-t0k", planner.calls().get(0).authorization());
    }

    @Test
    void noPlannerConfiguredFallsBackWithTheReason() {
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, linear);
        HetschedScheduler scheduler = StormFixtures.scheduler(Map.of(), clock::get);

        scheduler.schedule(new Topologies(linear), cluster);

        assertEquals(linear.getExecutors(), placement(cluster, "linear-1").keySet());
        assertTrue(cluster.getStatus("linear-1").contains("hetsched.planner.url is not set"), cluster.getStatus("linear-1"));
    }

    @Test
    void malformedTopologyConfFallsBackNamingTheKey() {
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.COMPONENT_PROFILES, "high=highCompute");
        TopologyDetails linear = linearTopology("linear-1", conf);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertTrue(planner.calls().isEmpty());
        assertEquals(linear.getExecutors(), placement(cluster, "linear-1").keySet());
        assertTrue(cluster.getStatus("linear-1").contains("hetsched.component.profiles must be a map"),
                cluster.getStatus("linear-1"));
    }

    @Test
    void aBadWorkerBudgetFallsBackNamingTheKeyAndAGoodOneGoesToThePlanner() {
        Map<String, Object> bad = new HashMap<>(ASKS_PLANNER);
        bad.put(TopologySettings.MAX_WORKERS, 0);
        TopologyDetails linear = linearTopology("linear-1", bad);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertTrue(planner.calls().isEmpty());
        assertEquals(linear.getExecutors(), placement(cluster, "linear-1").keySet());
        assertTrue(cluster.getStatus("linear-1").contains(
                "hetsched.max.workers must be a whole number of workers from 1 to 100000, got '0'"), cluster.getStatus("linear-1"));

        Map<String, Object> good = new HashMap<>(ASKS_PLANNER);
        good.put(TopologySettings.MAX_WORKERS, "2");
        assertEquals(2, requestFor(linearTopology("linear-2", good)).get("topology").get("max_workers").asInt());
        assertFalse(requestFor(linearTopology("linear-3", ASKS_PLANNER)).get("topology").has("max_workers"));
    }

    /** The PlanRequest the plugin would send for a topology on this test's cluster. */
    private JsonNode requestFor(TopologyDetails td) {
        try {
            TopologySettings settings = TopologySettings.fromConf(td.getConf());
            Cluster cluster = cluster(supervisors, td);
            return PlanRequests.build(FakePlanner.JSON, TopologyGraph.of(td),
                    Machine.usableBy(cluster, td.getId(), SchedulerSettings.fromConf(Map.of()), settings), settings,
                    Map.of());
        } catch (PlanFault e) {
            throw new AssertionError(e);
        }
    }

    /** Schedules a fresh planner topology and returns how many planner calls that round made. */
    private int roundCalls(HetschedScheduler scheduler, String topologyId) {
        int before = planner.calls().size();
        statusOfRound(scheduler, topologyId);
        return planner.calls().size() - before;
    }

    private String statusOfRound(HetschedScheduler scheduler, String topologyId) {
        TopologyDetails td = linearTopology(topologyId, ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, td);
        scheduler.schedule(new Topologies(td), cluster);
        assertEquals(td.getExecutors(), placement(cluster, topologyId).keySet(), "never left unscheduled");
        return cluster.getStatus(topologyId);
    }

    /** The topology ends up exactly where Storm's DefaultScheduler would put it, with the reason in its status. */
    private void assertFallsBackEvenly(Object url, Map<String, Object> yaml, String reason) {
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        Topologies topologies = new Topologies(linear);
        Cluster cluster = cluster(supervisors, topologies, Map.of());

        schedulerFor(url, yaml).schedule(topologies, cluster);

        assertEquals(placementBy(new DefaultScheduler(), supervisors, topologies, Map.of(), "linear-1"),
                placement(cluster, "linear-1"), "placed as Storm's DefaultScheduler places it");
        assertEquals(linear.getExecutors(), placement(cluster, "linear-1").keySet());
        String status = cluster.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: planner not used ("), status);
        assertTrue(status.contains(reason), status + " should say " + reason);
        assertTrue(status.contains("; scheduled evenly by Storm's DefaultScheduler"), status);
    }
}
