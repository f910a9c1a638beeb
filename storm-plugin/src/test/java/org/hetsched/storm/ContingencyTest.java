package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.executorsOf;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.placement;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34: a plan that stores a contingency per machine ({@code options.survive_loss}) is re-placed by it in the
 * round its machine is lost, without asking the planner, every surviving worker left as it runs; where the contingency
 * does not apply the planner is asked for a repair as before. The planner is told afterwards, off Nimbus's thread, by
 * binding the plan with a reason the service reads (tests/test_topology_events.py holds the service to the same words);
 * a planner that cannot be told changes nothing but one line in the log.
 */
class ContingencyTest {
    private static final Map<String, Object> ASKS_PLANNER = Map.of(
            TopologySettings.PROFILES, "micro",
            TopologySettings.STRATEGY, "paper");

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final AtomicInteger planNumber = new AtomicInteger();
    private final Map<String, ObjectNode> storedPlans = new ConcurrentHashMap<>();
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;
    private Map<String, SchedulerAssignment> assignments = Map.of();
    /** Where the contingency for a lost machine sends instance (component, index); null: no contingencies at all. */
    private BiFunction<String, Integer, String> contingencyTarget = (component, index) -> "sup-small-2";
    /** Where a repair plan's contingencies send an instance; null: repair plans store none. */
    private BiFunction<String, Integer, String> repairContingencyTarget = null;

    private FakePlanner.Answer answer(FakePlanner.Call call) {
        FakePlanner.Answer read = FakePlanner.storedPlanRead(call, storedPlans);
        if (read != null) {
            return read;
        }
        boolean repair = call.path().equals("/v1/repairs");
        String id = (repair ? "r-" : "p-") + planNumber.incrementAndGet();
        ObjectNode plan = FakePlanner.planFor(call.body(), id, repair
                ? (component, index, machines) -> machines.get(index % machines.size())
                : HetschedSchedulerTest.HIGH_ON_FAST, true);
        if (!repair && contingencyTarget != null) {
            withContingencies(plan, contingencyTarget);
        } else if (repair && repairContingencyTarget != null) {
            withContingencies(plan, repairContingencyTarget);
        }
        storedPlans.put(id, plan);
        return FakePlanner.Answer.json(201, plan);
    }

    /** One contingency per machine the plan uses: its instances go where {@code target} says. */
    private static void withContingencies(ObjectNode plan, BiFunction<String, Integer, String> target) {
        Map<String, ArrayNode> moves = new LinkedHashMap<>();
        ArrayNode contingencies = plan.putArray("contingencies");
        for (JsonNode a : plan.get("assignments")) {
            String machine = a.get("machine").asText();
            ArrayNode list = moves.computeIfAbsent(machine, m -> {
                ObjectNode c = contingencies.addObject().put("machine", m).put("input_rate", 7.5)
                        .put("bottleneck", "sup-small-2").put("lost", 0).put("moved", 0);
                return c.putArray("moves");
            });
            list.addObject().put("component", a.get("component").asText()).put("index", a.get("index").asInt())
                    .put("machine", target.apply(a.get("component").asText(), a.get("index").asInt()));
        }
    }

    @BeforeEach
    void start() throws IOException {
        planner = new FakePlanner(this::answer);
        supervisors = byId(
                supervisor("sup-small-1", "host-1", "small", null, 8),
                supervisor("sup-small-2", "host-2", "small", null, 8),
                supervisor("sup-fast-1", "host-3", "fast", 4, 8));
    }

    @AfterEach
    void stop() {
        planner.close();
    }

    private HetschedScheduler scheduler() {
        return StormFixtures.scheduler(planner.url(), Map.of(), clock::get, (name, waitSecs) -> { });
    }

    private static TopologyDetails linearTopology() {
        return topology("linear-1", linear(2, 3), 2, 4, new HashMap<>(ASKS_PLANNER));
    }

    private Cluster round(HetschedScheduler scheduler, TopologyDetails topology) {
        Topologies all = new Topologies(topology);
        Cluster cluster = cluster(supervisors, all, assignments);
        scheduler.schedule(all, cluster);
        assignments = new HashMap<>(cluster.getAssignments());
        return cluster;
    }

    /** A supervisor dies: Nimbus drops it and every executor that ran there; returns the executors that survive. */
    private Map<ExecutorDetails, WorkerSlot> lose(String supervisorId) {
        supervisors = new LinkedHashMap<>(supervisors);
        assertTrue(supervisors.remove(supervisorId) != null);
        assignments = StormFixtures.withoutSupervisor(assignments, supervisorId);
        Map<ExecutorDetails, WorkerSlot> alive = new HashMap<>();
        assignments.values().forEach(assignment -> alive.putAll(assignment.getExecutorToSlot()));
        return alive;
    }

    private List<String> paths() {
        return planner.calls().stream().map(call -> call.method() + " " + call.path()).toList();
    }

    /** The binds the plugin made ({@code PUT /v1/assignments/...}): path, plan id and reason of each. */
    private List<String> binds() {
        return planner.bindingCalls().stream().filter(call -> call.method().equals("PUT"))
                .map(call -> call.path() + " " + call.body().get("plan_id").asText() + " " + call.body().get("reason").asText())
                .toList();
    }

    /** The plugin's log lines at WARN and above (Nimbus's log) while {@code body} runs. */
    private static List<String> warnings(Runnable body) {
        org.apache.logging.log4j.core.Logger logger =
                (org.apache.logging.log4j.core.Logger) LogManager.getLogger(HetschedScheduler.class);
        List<String> lines = new CopyOnWriteArrayList<>();
        AbstractAppender appender = new AbstractAppender("contingency-test", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                    lines.add(event.getMessage().getFormattedMessage());
                }
            }
        };
        appender.start();
        Level before = logger.getLevel();
        logger.addAppender(appender);
        logger.setLevel(Level.INFO);
        try {
            body.run();
        } finally {
            logger.removeAppender(appender);
            logger.setLevel(before);
            appender.stop();
        }
        return lines;
    }

    @Test
    void aLostMachineIsReplacedByItsContingencyInTheSameRoundWithoutAskingThePlanner() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        Map<ExecutorDetails, WorkerSlot> alive = lose("sup-fast-1");

        Cluster after = round(scheduler, linear);

        assertEquals(List.of("POST /v1/plans"), paths(), "no repair asked for");
        Map<ExecutorDetails, WorkerSlot> placed = placement(after, "linear-1");
        assertEquals(linear.getExecutors(), placed.keySet(), "every executor placed in the round of the loss");
        alive.forEach((executor, slot) -> assertEquals(slot, placed.get(executor), "a survivor moved: " + executor));
        for (ExecutorDetails high : executorsOf(linear, "high")) {
            assertEquals("sup-small-2", placed.get(high).getNodeId(), "where the contingency says");
        }
        assertTrue(after.getStatus("linear-1").startsWith("hetsched: placed by contingency at 00:16:40 UTC after "
                + "losing sup-fast-1 (plan p-1, predicted 7.50 tuples/s): kept " + alive.size()
                + " executors where they run, moved 3 without asking the planner"), after.getStatus("linear-1"));
        assertEquals(List.of("/v1/assignments/linear p-1 hetsched plugin, contingency for sup-fast-1 lost: kept "
                + alive.size() + " executors where they run, moved 3, predicted 7.50 tuples/s"), binds(),
                "the planner is told: the plan bound, with the reason its events are read from");
    }

    @Test
    void theReasonNamesTheLostMachineAsTheServiceReadsIt() {
        ContingencyPlacement.Result result = new ContingencyPlacement.Result("m-large-1", 45.125, Map.of(),
                Map.of(new WorkerSlot("m-a", 6700), List.of()), 5, 3);
        assertEquals("contingency for m-large-1 lost: kept 5 executors where they run, moved 3, predicted 45.13 "
                + "tuples/s, 1 surviving workers restart", ContingencyPlacement.reason(result));
        assertEquals("contingency for m-large-1 lost: kept 5 executors where they run, moved 3",
                ContingencyPlacement.reason(new ContingencyPlacement.Result("m-large-1", Double.NaN, Map.of(), Map.of(),
                        5, 3)));
        assertEquals("hetsched plugin, ", HetschedScheduler.PLUGIN_REASON);
    }

    @Test
    void thePlannerIsToldOffNimbusThreadAfterTheRoundHasPlacedTheContingency() {
        List<Runnable> later = new java.util.ArrayList<>();
        boolean[] deferring = {false};
        Executor executor = task -> {
            if (deferring[0]) {
                later.add(task);
            } else {
                task.run();
            }
        };
        Map<String, Object> yaml = new HashMap<>(Map.of(SchedulerSettings.PLANNER_URL, planner.url().toString(),
                SchedulerSettings.PLANNER_TIMEOUT_MS, 60_000));
        HetschedScheduler scheduler = new HetschedScheduler(clock::get, executor, (name, waitSecs) -> { });
        scheduler.prepare(yaml, new StormMetricsRegistry());
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        lose("sup-fast-1");
        deferring[0] = true;

        Cluster after = round(scheduler, linear);

        assertEquals(linear.getExecutors(), placement(after, "linear-1").keySet(), "placed without waiting for the bind");
        assertEquals(List.of(), binds(), "nothing told within the round");
        assertEquals(1, later.size(), "one bind handed to the plugin's thread");
        later.forEach(Runnable::run);
        assertEquals(1, binds().size());
        assertTrue(binds().get(0).startsWith("/v1/assignments/linear p-1 hetsched plugin, contingency for sup-fast-1 lost"),
                binds().toString());
    }

    @Test
    void aPlannerThatCannotBeToldChangesNothingButOneLineInTheLog() throws IOException {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        Map<ExecutorDetails, WorkerSlot> alive = lose("sup-fast-1");
        planner.close(); // the planner is gone too: the bind is refused a connection
        planner = new FakePlanner(this::answer); // only for stop(): the scheduler still calls the closed one

        Cluster[] after = new Cluster[1];
        List<String> warned = warnings(() -> after[0] = round(scheduler, linear));

        Map<ExecutorDetails, WorkerSlot> placed = placement(after[0], "linear-1");
        assertEquals(linear.getExecutors(), placed.keySet(), "placed by its contingency all the same");
        alive.forEach((executor, slot) -> assertEquals(slot, placed.get(executor)));
        assertTrue(after[0].getStatus("linear-1").startsWith("hetsched: placed by contingency at "),
                after[0].getStatus("linear-1"));
        List<String> told = warned.stream().filter(w -> w.contains("to tell the planner")).toList();
        assertEquals(1, told.size(), "said once: " + warned);
        String line = told.get(0);
        assertTrue(line.startsWith("hetsched: topology linear: binding plan p-1 to tell the planner 'hetsched plugin, "
                + "contingency for sup-fast-1 lost: kept "), line);
        assertTrue(line.contains("failed, so its events lack it (scheduling is not affected): planner unreachable at "),
                line);
        assertTrue(!line.contains("\n"), "one line: " + line);

        assertTrue(warnings(() -> round(scheduler, linear)).stream().noneMatch(w -> w.contains("to tell the planner")),
                "not retried: nothing more is said of it");
    }

    @Test
    void aContingencyThatDoesNotFitTheClusterFallsBackToARepair() {
        contingencyTarget = (component, index) -> "sup-gone";
        assertTheLossIsRepairedByThePlanner();
    }

    @Test
    void aPlanWithoutContingenciesIsRepairedAsBefore() {
        contingencyTarget = null;
        assertTheLossIsRepairedByThePlanner();
    }

    /** Where no contingency applies, losing a machine asks the planner for a repair, which keeps every survivor. */
    private void assertTheLossIsRepairedByThePlanner() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        Map<ExecutorDetails, WorkerSlot> alive = lose("sup-fast-1");

        Cluster after = round(scheduler, linear);

        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs"), paths());
        Map<ExecutorDetails, WorkerSlot> placed = placement(after, "linear-1");
        alive.forEach((executor, slot) -> assertEquals(slot, placed.get(executor)));
        assertTrue(after.getStatus("linear-1").startsWith("hetsched: repaired at "), after.getStatus("linear-1"));
    }

    @Test
    void aRepairPlanWithContingenciesMeetsTheNextLossWithoutAskingThePlanner() {
        contingencyTarget = null;
        repairContingencyTarget = (component, index) -> "sup-small-2";
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        lose("sup-fast-1");
        round(scheduler, linear);
        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs"), paths());
        Map<ExecutorDetails, WorkerSlot> alive = lose("sup-small-1");

        Cluster after = round(scheduler, linear);

        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs"), paths(), "the repair's contingency, no second repair");
        Map<ExecutorDetails, WorkerSlot> placed = placement(after, "linear-1");
        assertEquals(linear.getExecutors(), placed.keySet(), "every executor placed in the round of the loss");
        alive.forEach((executor, slot) -> assertEquals(slot, placed.get(executor), "a survivor moved: " + executor));
        assertTrue(after.getStatus("linear-1").startsWith("hetsched: placed by contingency at "), after.getStatus("linear-1"));
    }

    // --- ContingencyPlacement on its own -------------------------------------------------------------------------

    private static TopologyGraph graph(TopologyDetails topology) {
        try {
            return TopologyGraph.of(topology);
        } catch (PlanFault fault) {
            throw new AssertionError(fault.reason());
        }
    }

    private static List<Machine> machines(String... ids) {
        return java.util.Arrays.stream(ids).map(id -> new Machine(id, id, id, "small", null, 4, List.of(6701, 6702)))
                .toList();
    }

    /** high on m-c (lost); low on m-a and m-b; everything else on m-a, one worker per machine at port 6700. */
    private static Plan planOf(TopologyDetails topology, Map<String, Plan.Contingency> contingencies) {
        List<Plan.InstanceAssignment> assignments = new java.util.ArrayList<>();
        for (TopologyGraph.Component c : graph(topology).components()) {
            for (int i = 0; i < c.executors().size(); i++) {
                String machine = c.id().equals("high") ? "m-c" : c.id().equals("low") && i == 1 ? "m-b" : "m-a";
                assignments.add(new Plan.InstanceAssignment(c.id(), i, machine));
            }
        }
        return new Plan("p-9", "fast", assignments, Map.of(), 10.0, List.of(), List.of(), contingencies);
    }

    private static Map<ExecutorDetails, WorkerSlot> runningOf(TopologyDetails topology, Plan plan) {
        Map<ExecutorDetails, WorkerSlot> running = new HashMap<>();
        for (TopologyGraph.Component c : graph(topology).components()) {
            for (int i = 0; i < c.executors().size(); i++) {
                String machine = plan.machineOf(c.id(), i);
                if (!machine.equals("m-c")) {
                    running.put(c.executors().get(i), new WorkerSlot(machine, 6700));
                }
            }
        }
        return running;
    }

    @Test
    void aSurvivorTheContingencyMovesLeavesItsWorkerAndTheRestStay() throws PlanFault {
        TopologyDetails linear = topology("linear-1", linear(2, 2), 0, 3, Map.of());
        List<Plan.InstanceAssignment> moves = List.of(new Plan.InstanceAssignment("high", 0, "m-a"),
                new Plan.InstanceAssignment("high", 1, "m-b"), new Plan.InstanceAssignment("low", 1, "m-a"));
        Plan plan = planOf(linear, Map.of("m-c", new Plan.Contingency("m-c", 8.0, moves)));
        Map<String, String> names = Map.of("m-a", "m-a", "m-b", "m-b");

        ContingencyPlacement.Result result = ContingencyPlacement.place(plan, graph(linear), runningOf(linear, plan),
                names, machines("m-a", "m-b"), Map.of("m-a", List.of(6701), "m-b", List.of(6702)));

        assertEquals("m-c", result.machine());
        assertEquals(3, result.moved());
        assertEquals(linear.getExecutors().size() - 3, result.kept());
        WorkerSlot onA = new WorkerSlot("m-a", 6701);
        WorkerSlot onB = new WorkerSlot("m-b", 6702);
        assertEquals(Set.of(onA, onB), result.workers().keySet());
        assertEquals(Set.of(executorsOf(linear, "high").get(0), executorsOf(linear, "low").get(1)),
                Set.copyOf(result.workers().get(onA)));
        assertEquals(List.of(executorsOf(linear, "high").get(1)), result.workers().get(onB));
        assertEquals(Map.of(new WorkerSlot("m-b", 6700), List.of()), result.shrunk(),
                "low 1 left m-b's worker, which had nothing else");
    }

    @Test
    void aWorkerThatDiedOnALiveMachineIsNoLossAndTwoLostMachinesAreNotOne() {
        TopologyDetails linear = topology("linear-1", linear(2, 2), 0, 3, Map.of());
        Plan plan = planOf(linear, Map.of("m-c", new Plan.Contingency("m-c", 8.0, List.of())));
        PlanFault alive = assertThrows(PlanFault.class, () -> ContingencyPlacement.place(plan, graph(linear),
                runningOf(linear, plan), Map.of("m-a", "m-a", "m-b", "m-b", "m-c", "m-c"), machines("m-a", "m-b", "m-c"),
                Map.of()));
        assertTrue(alive.reason().contains("which is still in the cluster: no machine was lost"), alive.reason());

        Map<ExecutorDetails, WorkerSlot> running = runningOf(linear, plan);
        running.values().removeIf(slot -> slot.getNodeId().equals("m-b"));
        Plan both = planOf(linear, Map.of("m-c", new Plan.Contingency("m-c", 8.0, List.of()),
                "m-b", new Plan.Contingency("m-b", 8.0, List.of())));
        PlanFault two = assertThrows(PlanFault.class, () -> ContingencyPlacement.place(both, graph(linear), running,
                Map.of("m-a", "m-a"), machines("m-a"), Map.of("m-a", List.of(6701))));
        assertTrue(two.reason().contains("are both lost; a contingency answers one"), two.reason());
    }

    /** The body tests/test_plugin_contract.py checks against the service's answer: both sides read this file. */
    @Test
    void theServicesPlanWithContingenciesIsParsed() throws Exception {
        JsonNode body = FakePlanner.JSON.readTree(java.nio.file.Path.of("..", "tests", "fixtures", "contract",
                "plan-with-contingencies.json").toFile());
        Plan plan = Plan.parse(body);
        assertEquals(body.get("contingencies").size(), plan.contingencies().size());
        for (JsonNode c : body.get("contingencies")) {
            Plan.Contingency parsed = plan.contingencies().get(c.get("machine").asText());
            assertEquals(c.get("input_rate").asDouble(), parsed.inputRate());
            assertEquals(c.get("moves").size(), parsed.moves().size());
            for (JsonNode m : c.get("moves")) {
                assertEquals(m.get("machine").asText(), parsed.targetOf(m.get("component").asText(), m.get("index").asInt()));
                assertEquals(c.get("machine").asText(), plan.machineOf(m.get("component").asText(), m.get("index").asInt()),
                        "the fixture's moves are the lost machine's instances");
            }
        }
    }

    @Test
    void aContingencyInTheAnswerIsParsedAndABrokenOneIsThePlannersFault() throws Exception {
        ObjectNode body = FakePlanner.JSON.createObjectNode();
        body.putArray("assignments").addObject().put("component", "high").put("index", 0).put("machine", "m-c");
        ObjectNode c = body.putArray("contingencies").addObject().put("machine", "m-c").put("input_rate", 4.5);
        c.putArray("moves").addObject().put("component", "high").put("index", 0).put("machine", "m-a");
        Plan plan = Plan.parse(body);
        assertEquals("m-a", plan.contingencies().get("m-c").targetOf("high", 0));
        assertEquals(4.5, plan.contingencies().get("m-c").inputRate());

        body.put("contingencies", "all of them");
        PlanFault fault = assertThrows(PlanFault.class, () -> Plan.parse(body));
        assertTrue(fault.reason().contains("'contingencies' is not a list"), fault.reason());
        body.putNull("contingencies");
        assertTrue(Plan.parse(body).contingencies().isEmpty());
    }
}
