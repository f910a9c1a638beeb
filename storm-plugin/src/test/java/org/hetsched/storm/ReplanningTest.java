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
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
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
 * Issue 15: a machine lost (keep what runs, place only the lost executors), a machine joined or returned (re-plan,
 * apply by Nimbus's rebalance when the predicted gain reaches the threshold, at most once per interval), and the plan
 * bound to a topology placing it after the rebalance.
 */
class ReplanningTest {
    private static final Map<String, Object> ASKS_PLANNER = Map.of(
            TopologySettings.PROFILES, "micro",
            TopologySettings.STRATEGY, "paper");

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final AtomicReference<Double> runningRate = new AtomicReference<>(5.0);
    private final AtomicInteger planNumber = new AtomicInteger();
    private final Map<String, ObjectNode> storedPlans = new ConcurrentHashMap<>();
    private final List<String> rebalances = new ArrayList<>();
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;
    private Map<String, SchedulerAssignment> assignments = Map.of();
    private final Map<String, String> statuses = new HashMap<>();

    /** A planner that keeps its plans: new plans by HIGH_ON_FAST, repairs spread over the machines the request has. */
    private FakePlanner.Answer answer(FakePlanner.Call call) {
        String path = call.path();
        FakePlanner.Answer read = FakePlanner.storedPlanRead(call, storedPlans);
        if (read != null) {
            return read;
        }
        if (path.equals("/v1/evaluations")) {
            return FakePlanner.Answer.json(200, FakePlanner.JSON.createObjectNode().put("input_rate", runningRate.get()));
        }
        boolean repair = path.equals("/v1/repairs");
        String id = (repair ? "r-" : "p-") + planNumber.incrementAndGet();
        FakePlanner.Rule rule = repair ? (component, index, machines) -> machines.get(index % machines.size())
                : HetschedSchedulerTest.HIGH_ON_FAST;
        ObjectNode plan = FakePlanner.planFor(call.body(), id, rule, true);
        storedPlans.put(id, plan);
        return FakePlanner.Answer.json(201, plan);
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

    private HetschedScheduler scheduler(Map<String, Object> extra) {
        return StormFixtures.scheduler(planner.url(), extra, clock::get,
                (name, waitSecs) -> rebalances.add(name + " wait " + waitSecs));
    }

    private static TopologyDetails linearTopology() {
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put("topology.message.timeout.secs", 20);
        return topology("linear-1", linear(2, 3), 2, 4, conf);
    }

    /** Hosts Nimbus's BlacklistScheduler keeps out of the next rounds. */
    private Set<String> blacklistedHosts = Set.of();

    /** One Nimbus round: a fresh Cluster from the last round's assignments, scheduled, its assignments kept. */
    private Cluster round(HetschedScheduler scheduler, TopologyDetails topology) {
        Topologies all = new Topologies(topology);
        Cluster cluster = cluster(supervisors, all, assignments);
        cluster.setBlacklistedHosts(blacklistedHosts);
        scheduler.schedule(all, cluster);
        assignments = new HashMap<>(cluster.getAssignments());
        statuses.putAll(cluster.getStatusMap());
        return cluster;
    }

    /** A supervisor dies: Nimbus drops it and every executor that ran there; returns the executors that survive. */
    private Map<ExecutorDetails, WorkerSlot> lose(String supervisorId) {
        supervisors = new LinkedHashMap<>(supervisors);
        SupervisorDetails gone = supervisors.remove(supervisorId);
        assertTrue(gone != null);
        Map<String, SchedulerAssignment> left = new HashMap<>();
        Map<ExecutorDetails, WorkerSlot> alive = new HashMap<>();
        assignments.forEach((id, assignment) -> {
            Map<ExecutorDetails, WorkerSlot> kept = new HashMap<>(assignment.getExecutorToSlot());
            kept.values().removeIf(slot -> slot.getNodeId().equals(supervisorId));
            alive.putAll(kept);
            left.put(id, new SchedulerAssignmentImpl(id, kept, null, null));
        });
        assignments = left;
        return alive;
    }

    private void join(SupervisorDetails supervisor) {
        supervisors = new LinkedHashMap<>(supervisors);
        supervisors.put(supervisor.getId(), supervisor);
    }

    private List<String> paths() {
        return planner.calls().stream().map(call -> call.method() + " " + call.path()).toList();
    }

    private static boolean highOn(Cluster cluster, TopologyDetails topology, String supervisorId) {
        Map<ExecutorDetails, WorkerSlot> placed = placement(cluster, topology.getId());
        return placed.keySet().equals(topology.getExecutors())
                && executorsOf(topology, "high").stream().allMatch(e -> placed.get(e).getNodeId().equals(supervisorId));
    }

    @Test
    void aLostMachineRestartsNothingElseAndItsExecutorsArePlacedByARepairWithinOneRound() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology();
        assertTrue(highOn(round(scheduler, linear), linear, "sup-fast-1"));

        Map<ExecutorDetails, WorkerSlot> alive = lose("sup-fast-1");
        Cluster repaired = round(scheduler, linear);

        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs"), paths());
        Map<ExecutorDetails, WorkerSlot> after = placement(repaired, "linear-1");
        assertEquals(linear.getExecutors(), after.keySet(), "every executor placed in the same round");
        alive.forEach((executor, slot) -> assertEquals(slot, after.get(executor), "moved: " + executor));
        assertTrue(after.values().stream().noneMatch(slot -> slot.getNodeId().equals("sup-fast-1")));

        JsonNode request = planner.calls().get(1).body();
        Set<String> keep = new HashSet<>();
        request.get("keep").forEach(k -> keep.add(k.get("component").asText() + "/" + k.get("index").asInt() + "@"
                + k.get("machine").asText()));
        assertEquals(alive.size(), keep.size());
        for (TopologyGraph.Component component : TopologyGraphs.of(linear).components()) {
            for (int i = 0; i < component.executors().size(); i++) {
                WorkerSlot slot = alive.get(component.executors().get(i));
                assertEquals(slot != null, keep.contains(component.id() + "/" + i + "@" + (slot == null ? "" : slot.getNodeId())));
            }
        }
        String status = repaired.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: repaired at 00:16:40 UTC after losing executors (gone: sup-fast-1): kept "
                + alive.size() + " executors where they run, placed " + (linear.getExecutors().size() - alive.size())
                + " by repair plan r-2 on "), status);
        assertTrue(rebalances.isEmpty());
        assertEquals("r-2", planner.boundPlan("linear"), "the repair it placed is the plan it runs by, bound");
        List<JsonNode> binds = planner.bindingCalls().stream().filter(call -> call.method().equals("PUT"))
                .map(FakePlanner.Call::body).toList();
        assertEquals(1, binds.size());
        assertEquals("hetsched plugin, repair placed after losing sup-fast-1: kept " + alive.size()
                + " executors where they run, placed " + (linear.getExecutors().size() - alive.size()) + " on "
                + status.substring(status.indexOf(" by repair plan r-2 on ") + " by repair plan r-2 on ".length()),
                binds.get(0).get("reason").asText());
    }

    @Test
    void aReturnedMachineIsPlannedOnAndTheTopologyReplacedByRebalanceOntoTheBoundPlan() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        SupervisorDetails fast = supervisors.get("sup-fast-1");
        lose("sup-fast-1");
        round(scheduler, linear);

        join(fast);
        runningRate.set(5.0);
        Cluster back = round(scheduler, linear);

        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs", "POST /v1/evaluations", "POST /v1/plans"), paths());
        assertEquals(List.of("linear wait 20"), rebalances, "drained: deactivated for the message timeout");
        assertEquals("p-3", planner.boundPlan("linear"));
        String status = back.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: supervisor sup-fast-1 joined at 00:16:40 UTC: plan p-3 predicts 10.00 "
                + "tuples/s against 5.00 now (+100.0%): re-placing it drained"), status);
        JsonNode evaluated = planner.calls().get(2).body();
        assertEquals(linear.getExecutors().size(), evaluated.get("assignments").size());
        assertFalse(planner.calls().get(3).body().has("plan_id"), "a fresh plan, not the stored one again");

        // Nimbus's rebalance frees the topology's slots; the next round places it by the plan bound to it
        assignments = Map.of();
        Cluster replaced = round(scheduler, linear);
        assertTrue(highOn(replaced, linear, "sup-fast-1"));
        assertTrue(replaced.getStatus("linear-1").startsWith("hetsched: placed by planner (bound plan p-3"),
                replaced.getStatus("linear-1"));
        assertEquals("GET /v1/plans/p-3", paths().get(4));
    }

    @Test
    void aReturnedMachineGetsItsNewWorkersOnOtherPortsThanThoseItRanWhenLostUntilTheySettle() {
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.RETURNED_PORTS_SETTLE_SECS, 300));
        TopologyDetails linear = linearTopology();
        Set<Integer> before = portsOn(round(scheduler, linear), "sup-fast-1");
        assertFalse(before.isEmpty());
        SupervisorDetails fast = supervisors.get("sup-fast-1");
        lose("sup-fast-1");
        round(scheduler, linear);
        join(fast);
        round(scheduler, linear);

        assignments = Map.of();  // Nimbus's rebalance
        Cluster replaced = round(scheduler, linear);
        assertTrue(highOn(replaced, linear, "sup-fast-1"));
        Set<Integer> after = portsOn(replaced, "sup-fast-1");
        assertTrue(after.stream().noneMatch(before::contains), "orphans may hold " + before + "; used " + after);

        clock.addAndGet(301_000);  // settled: the lowest ports first again
        assignments = Map.of();
        assertEquals(before, portsOn(round(scheduler, linear), "sup-fast-1"));
    }

    private static Set<Integer> portsOn(Cluster cluster, String supervisorId) {
        Set<Integer> ports = new java.util.TreeSet<>();
        cluster.getAssignments().values().forEach(a -> a.getSlots().stream()
                .filter(slot -> slot.getNodeId().equals(supervisorId)).forEach(slot -> ports.add(slot.getPort())));
        return ports;
    }

    @Test
    void aReturnedMachineNimbusBlacklistsIsPlannedOnOnlyOnceNimbusOffersItAgain() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        SupervisorDetails fast = supervisors.get("sup-fast-1");
        lose("sup-fast-1");
        round(scheduler, linear);

        join(fast);
        blacklistedHosts = Set.of(fast.getHost());
        runningRate.set(5.0);
        round(scheduler, linear);
        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs"), paths(), "a blacklisted machine has not joined");
        assertTrue(rebalances.isEmpty());

        blacklistedHosts = Set.of();
        Cluster back = round(scheduler, linear);
        assertEquals(List.of("POST /v1/plans", "POST /v1/repairs", "POST /v1/evaluations", "POST /v1/plans"), paths());
        assertEquals(List.of("linear wait 20"), rebalances);
        assertTrue(back.getStatus("linear-1").startsWith("hetsched: supervisor sup-fast-1 joined"),
                back.getStatus("linear-1"));
    }

    @Test
    void aGainBelowTheThresholdKeepsTheTopologyAsItRuns() {
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.REPLAN_MIN_GAIN, 0.10));
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);
        Map<ExecutorDetails, WorkerSlot> before = placement(round(scheduler, linear), "linear-1");

        runningRate.set(9.5);
        join(supervisor("sup-fast-2", "host-4", "fast", 4, 8));
        Cluster joined = round(scheduler, linear);

        assertTrue(rebalances.isEmpty());
        assertEquals(before, placement(joined, "linear-1"));
        assertEquals(null, planner.boundPlan("linear"));
        String status = joined.getStatus("linear-1");
        assertTrue(status.endsWith("plan p-2 predicts 10.00 tuples/s against 9.50 now (+5.3%), below "
                + "hetsched.replan.min.gain (10%): kept as it runs"), status);
    }

    @Test
    void aTopologyIsReplacedAtMostOncePerInterval() {
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.REPLAN_MIN_INTERVAL_SECS, 600));
        TopologyDetails linear = linearTopology();
        round(scheduler, linear);

        join(supervisor("sup-fast-2", "host-4", "fast", 4, 8));
        round(scheduler, linear);
        assertEquals(1, rebalances.size());

        clock.addAndGet(599_000);
        join(supervisor("sup-fast-3", "host-5", "fast", 4, 8));
        Cluster soon = round(scheduler, linear);
        assertEquals(1, rebalances.size(), "not twice within hetsched.replan.min.interval.secs");
        assertTrue(soon.getStatus("linear-1").endsWith("but it was re-placed at 00:16:40 UTC, within "
                + "hetsched.replan.min.interval.secs (600 s): kept as it runs"), soon.getStatus("linear-1"));

        clock.addAndGet(2_000);
        join(supervisor("sup-fast-4", "host-6", "fast", 4, 8));
        round(scheduler, linear);
        assertEquals(2, rebalances.size(), "again once the interval has passed");
    }

    @Test
    void noMachineJoinedNoPlannerCall() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology();
        for (int i = 0; i < 3; i++) {
            round(scheduler, linear);
        }
        assertEquals(List.of("POST /v1/plans"), paths());
        assertTrue(rebalances.isEmpty());
    }

    @Test
    void replanSettingsRefuseNonsense() {
        IllegalArgumentException fault = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> SchedulerSettings.replanSettings(Map.of(SchedulerSettings.REPLAN_MIN_GAIN, "-0.1")));
        assertEquals("hetsched.replan.min.gain must be a finite number of at least 0, got -0.1", fault.getMessage());
        assertEquals(0.10, SchedulerSettings.replanSettings(Map.of()).minGain());
        assertEquals(600, SchedulerSettings.replanSettings(Map.of()).minInterval().toSeconds());
    }

    /** TopologyGraph.of without the checked exception, for assertions. */
    private static final class TopologyGraphs {
        static TopologyGraph of(TopologyDetails topology) {
            try {
                return TopologyGraph.of(topology);
            } catch (PlanFault fault) {
                throw new AssertionError(fault.reason());
            }
        }
    }
}
