package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.executorsOf;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.placement;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SchedulerAssignmentImpl;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A machine returns after the plugin applied its contingency: in the round its supervisor joins, the executors the
 * contingency moved off it go back into one new worker there, the contingency's workers are freed, every other worker
 * keeps its executors, and neither the planner nor Nimbus's rebalance is asked; the plan's contingencies meet the next
 * loss again. Where the topology no longer runs as the contingency left it, or the contingency moved a survivor, the
 * plugin re-plans on the larger cluster as after any join ({@link Upgrades}).
 */
class ReturnTest {
    private static final Map<String, Object> ASKS_PLANNER = Map.of(
            TopologySettings.PROFILES, "micro",
            TopologySettings.STRATEGY, "paper");

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final AtomicInteger planNumber = new AtomicInteger();
    private final Map<String, ObjectNode> storedPlans = new ConcurrentHashMap<>();
    private final List<String> rebalanced = new CopyOnWriteArrayList<>();
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;
    private Map<String, SchedulerAssignment> assignments = Map.of();
    /** Also moved by the contingency for sup-fast-1: a survivor (component, index), or null. */
    private String[] survivorMoved = null;

    private FakePlanner.Answer answer(FakePlanner.Call call) {
        FakePlanner.Answer read = FakePlanner.storedPlanRead(call, storedPlans);
        if (read != null) {
            return read;
        }
        if (call.path().equals("/v1/evaluations")) {
            return FakePlanner.Answer.json(200, FakePlanner.JSON.createObjectNode().put("input_rate", 5.0));
        }
        boolean repair = call.path().equals("/v1/repairs");
        String id = (repair ? "r-" : "p-") + planNumber.incrementAndGet();
        ObjectNode plan = FakePlanner.planFor(call.body(), id, repair
                ? (component, index, machines) -> machines.get(index % machines.size())
                : HetschedSchedulerTest.HIGH_ON_FAST, true);
        if (!repair) {
            withContingencies(plan);
        }
        storedPlans.put(id, plan);
        return FakePlanner.Answer.json(201, plan);
    }

    /** One contingency per machine the plan uses: its instances go to sup-small-2 (and a survivor, where asked). */
    private void withContingencies(ObjectNode plan) {
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
                    .put("machine", "sup-small-2");
        }
        if (survivorMoved != null) {
            moves.get("sup-fast-1").addObject().put("component", survivorMoved[0])
                    .put("index", Integer.parseInt(survivorMoved[1])).put("machine", "sup-small-2");
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
        return StormFixtures.scheduler(planner.url(), Map.of(), clock::get,
                (name, waitSecs) -> rebalanced.add(name));
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

    /** The supervisor is back, offered by Nimbus again. */
    private void giveBack() {
        supervisors = new LinkedHashMap<>(supervisors);
        supervisors.put("sup-fast-1", supervisor("sup-fast-1", "host-3", "fast", 4, 8));
    }

    private List<String> paths() {
        return planner.calls().stream().map(call -> call.method() + " " + call.path()).toList();
    }

    private List<String> binds() {
        return planner.bindingCalls().stream().filter(call -> call.method().equals("PUT"))
                .map(call -> call.path() + " " + call.body().get("plan_id").asText() + " " + call.body().get("reason").asText())
                .toList();
    }

    /** The plugin's log lines at INFO and above while {@code body} runs. */
    private static List<String> logged(Runnable body) {
        org.apache.logging.log4j.core.Logger logger =
                (org.apache.logging.log4j.core.Logger) LogManager.getLogger(HetschedScheduler.class);
        List<String> lines = new CopyOnWriteArrayList<>();
        AbstractAppender appender = new AbstractAppender("return-test", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                lines.add(event.getMessage().getFormattedMessage());
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

    private static Map<WorkerSlot, Set<ExecutorDetails>> workers(Map<ExecutorDetails, WorkerSlot> placed) {
        Map<WorkerSlot, Set<ExecutorDetails>> workers = new HashMap<>();
        placed.forEach((executor, slot) -> workers.computeIfAbsent(slot, k -> new HashSet<>()).add(executor));
        return workers;
    }

    @Test
    void aReturnedMachineGetsItsExecutorsBackInOneWorkerAndTheNextLossMeetsThePlansContingencyAgain() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        Map<ExecutorDetails, WorkerSlot> planned = placement(round(scheduler, linear), "linear-1");
        Map<ExecutorDetails, WorkerSlot> alive = lose("sup-fast-1");
        Map<ExecutorDetails, WorkerSlot> contingency = placement(round(scheduler, linear), "linear-1");
        List<ExecutorDetails> high = executorsOf(linear, "high");
        WorkerSlot created = contingency.get(high.get(0));
        assertEquals("sup-small-2", created.getNodeId(), "the contingency applied");
        assertEquals(Set.copyOf(high), workers(contingency).get(created), "its new worker holds only the moved executors");
        giveBack();

        Cluster[] back = new Cluster[1];
        List<String> lines = logged(() -> back[0] = round(scheduler, linear));

        assertEquals(List.of("POST /v1/plans"), paths(), "neither a plan nor an evaluation asked for the return");
        assertEquals(List.of(), rebalanced, "no rebalance");
        Map<ExecutorDetails, WorkerSlot> placed = placement(back[0], "linear-1");
        assertEquals(linear.getExecutors(), placed.keySet());
        WorkerSlot returned = placed.get(high.get(0));
        assertEquals("sup-fast-1", returned.getNodeId(), "moved back to the returned machine");
        assertEquals(Set.copyOf(high), workers(placed).get(returned), "in one new worker, with nothing else");
        assertFalse(returned.getPort() == planned.get(high.get(0)).getPort(),
                "not on the port it ran a worker on when lost (settling)");
        assertFalse(placed.containsValue(created), "the contingency's worker freed");
        alive.forEach((executor, slot) -> assertEquals(slot, placed.get(executor), "a survivor moved: " + executor));
        assertEquals("hetsched: moved back to sup-fast-1 at 00:16:40 UTC by plan p-1: 3 executors into one new worker, "
                + "the contingency's 1 workers freed, no other worker restarts", back[0].getStatus("linear-1"));
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("hetsched: topology linear-1 moved back to sup-fast-1 at "
                + "00:16:40 UTC by plan p-1: 3 executors into one new worker")), lines.toString());
        assertEquals("/v1/assignments/linear p-1 hetsched plugin, machine joined: sup-fast-1 returned, plan p-1's "
                + "placement restored: moved 3 executors back into one new worker, the contingency's 1 workers freed",
                binds().get(binds().size() - 1), "the planner is told, with a reason it records as a return");

        Map<ExecutorDetails, WorkerSlot> aliveAgain = lose("sup-fast-1");
        Cluster again = round(scheduler, linear);

        assertEquals(List.of("POST /v1/plans"), paths(), "the plan's contingency again, no repair asked for");
        Map<ExecutorDetails, WorkerSlot> placedAgain = placement(again, "linear-1");
        assertEquals(linear.getExecutors(), placedAgain.keySet());
        aliveAgain.forEach((executor, slot) -> assertEquals(slot, placedAgain.get(executor)));
        high.forEach(e -> assertEquals("sup-small-2", placedAgain.get(e).getNodeId()));
        assertTrue(again.getStatus("linear-1").startsWith("hetsched: placed by contingency at "), again.getStatus("linear-1"));
    }

    @Test
    void aTopologyChangedSinceTheContingencyIsPlannedAgainAsAfterAnyJoin() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        lose("sup-fast-1");
        round(scheduler, linear);
        ExecutorDetails low = executorsOf(linear, "low").get(0);
        Map<ExecutorDetails, WorkerSlot> moved = new HashMap<>(assignments.get("linear-1").getExecutorToSlot());
        moved.put(low, new WorkerSlot(moved.get(low).getNodeId(), 6707)); // moved since, by someone else
        assignments = Map.of("linear-1", new SchedulerAssignmentImpl("linear-1", moved, null, null));
        giveBack();

        Cluster[] back = new Cluster[1];
        List<String> lines = logged(() -> back[0] = round(scheduler, linear));

        assertEquals(List.of("POST /v1/plans", "POST /v1/evaluations", "POST /v1/plans"), paths(),
                "the planner asked for a plan on the larger cluster, as before");
        assertFalse(back[0].getStatus("linear-1").contains("moved back"), back[0].getStatus("linear-1"));
        assertEquals(List.of("linear"), rebalanced, "re-placed by Nimbus's rebalance, as before");
        assertEquals(1, lines.stream().filter(l -> l.equals("hetsched: topology linear-1: sup-fast-1 returned, but plan "
                + "p-1's contingency for it is not undone (1 executors run elsewhere than the contingency left them); "
                + "planned again on the larger cluster as after any join")).count(), lines.toString());
    }

    @Test
    void aContingencyThatMovedASurvivorIsNotUndone() {
        survivorMoved = new String[] {"spout", "0"};
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        lose("sup-fast-1");
        Cluster contingency = round(scheduler, linear);
        assertTrue(contingency.getStatus("linear-1").contains("surviving workers restart"), contingency.getStatus("linear-1"));
        giveBack();

        List<String> lines = logged(() -> round(scheduler, linear));

        assertEquals(List.of("POST /v1/plans", "POST /v1/evaluations", "POST /v1/plans"), paths());
        assertTrue(lines.stream().anyMatch(l -> l.contains("is not undone (the contingency moved survivors out of 1 "
                + "workers")), lines.toString());
    }

    @Test
    void anotherMachineJoiningLeavesTheContingencyForTheReturnOfItsOwn() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        lose("sup-fast-1");
        round(scheduler, linear);
        supervisors = new LinkedHashMap<>(supervisors);
        supervisors.put("sup-small-3", supervisor("sup-small-3", "host-4", "small", null, 8));

        List<String> lines = logged(() -> round(scheduler, linear));

        assertTrue(lines.stream().anyMatch(l -> l.equals("hetsched: topology linear-1 stays in plan p-1's contingency "
                + "for sup-fast-1: sup-small-3 joined, not sup-fast-1; planned again on the larger cluster as after any "
                + "join")), lines.toString());
        assertEquals(List.of("POST /v1/plans", "POST /v1/evaluations", "POST /v1/plans"), paths(), "as before");
    }

    // --- ContingencyReturn on its own ----------------------------------------------------------------------------

    private static final ExecutorDetails A = new ExecutorDetails(1, 1);
    private static final ExecutorDetails B = new ExecutorDetails(2, 2);
    private static final ExecutorDetails C = new ExecutorDetails(3, 3);

    /** a on m-a, b and c on m-c (lost; its contingency put them in one worker on m-a). */
    private static ContingencyReturn.Applied applied(int shrunk) {
        Plan plan = new Plan("p-9", "fast", List.of(new Plan.InstanceAssignment("x", 0, "m-a"),
                new Plan.InstanceAssignment("x", 1, "m-c"), new Plan.InstanceAssignment("x", 2, "m-c")),
                Map.of(), 10.0, List.of(), List.of(), Map.of());
        WorkerSlot created = new WorkerSlot("m-a", 6701);
        return new ContingencyReturn.Applied("m-c", plan,
                Map.of(A, new WorkerSlot("m-a", 6700), B, created, C, created), Map.of(created, List.of(B, C)), shrunk);
    }

    private static List<Machine> machines(List<Integer> portsOfC) {
        return List.of(new Machine("m-a", "m-a", "h-a", "small", null, 4, List.of(6702)),
                new Machine("m-c", "m-c", "h-c", "small", null, 4, portsOfC));
    }

    private static Map<ExecutorDetails, WorkerSlot> running(ContingencyReturn.Applied applied) {
        return new HashMap<>(applied.after());
    }

    @Test
    void theUndoPrefersAPortThatIsNotSettlingAndSaysWhyItCannotBeDone() throws PlanFault {
        ContingencyReturn.Applied applied = applied(0);
        Set<ExecutorDetails> all = Set.of(A, B, C);
        Set<String> offered = Set.of("m-a", "m-c");

        ContingencyReturn.Result result = ContingencyReturn.undo(applied, "m-c", all, running(applied), offered,
                machines(List.of(6701, 6700)), Set.of(6700), null);
        assertEquals(new WorkerSlot("m-c", 6701), result.worker());
        assertEquals(List.of(B, C), result.executors());
        assertEquals(Set.of(new WorkerSlot("m-a", 6701)), result.freed());
        assertFalse(result.settling());
        assertTrue(ContingencyReturn.undo(applied, "m-c", all, running(applied), offered, machines(List.of(6700)),
                Set.of(6700), null).settling(), "a settling port where no other is free");

        assertEquals("m-c", ContingencyReturn.returned(applied, List.of(new MachineChanges.Supervisor("sup-9", "m-c")))
                .orElseThrow().name());
        assertTrue(ContingencyReturn.returned(applied, List.of(new MachineChanges.Supervisor("m-b", "m-b"))).isEmpty(),
                "the contingency was not for the machine that joined");

        Map<String, String> faults = new LinkedHashMap<>();
        faults.put("shrunk", reason(() -> ContingencyReturn.undo(applied(1), "m-c", all, running(applied), offered,
                machines(List.of(6701)), Set.of(), null)));
        Map<ExecutorDetails, WorkerSlot> unassigned = running(applied);
        unassigned.remove(A);
        faults.put("unassigned", reason(() -> ContingencyReturn.undo(applied, "m-c", all, unassigned, offered,
                machines(List.of(6701)), Set.of(), null)));
        Map<ExecutorDetails, WorkerSlot> elsewhere = running(applied);
        elsewhere.put(A, new WorkerSlot("m-a", 6703));
        faults.put("elsewhere", reason(() -> ContingencyReturn.undo(applied, "m-c", all, elsewhere, offered,
                machines(List.of(6701)), Set.of(), null)));
        faults.put("not offered", reason(() -> ContingencyReturn.undo(applied, "m-c", all, running(applied),
                Set.of("m-c"), machines(List.of(6701)), Set.of(), null)));
        faults.put("no port", reason(() -> ContingencyReturn.undo(applied, "m-c", all, running(applied), offered,
                machines(List.of()), Set.of(), null)));
        faults.put("limit", reason(() -> ContingencyReturn.undo(applied, "m-c", all, running(applied), offered,
                machines(List.of(6701)), Set.of(), 1)));
        assertEquals(Map.of(
                "shrunk", "the contingency moved survivors out of 1 workers, so plan p-9's placement cannot be restored "
                        + "by moving back",
                "unassigned", "1 executors are not assigned",
                "elsewhere", "1 executors run elsewhere than the contingency left them",
                "not offered", "plan p-9 also uses m-a, which Nimbus does not offer",
                "no port", "'m-c' has no free worker slot for the topology",
                "limit", "2 executors would share one worker, more than the topology's limit of 1"), faults);
    }

    private interface Undo {
        ContingencyReturn.Result run() throws PlanFault;
    }

    private static String reason(Undo undo) {
        return assertThrows(PlanFault.class, undo::run).reason();
    }
}
