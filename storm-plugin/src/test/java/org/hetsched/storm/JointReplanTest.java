package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.placement;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 16: a newcomer's plan names running topologies the planner planned again beside it
 * ({@code stats.tenancy.replaced}); the plugin re-places each drained by Nimbus's rebalance onto its bound plan.
 */
class JointReplanTest {
    private static final FakePlanner.Rule ALL_ON_SMALL_1 = (component, index, machines) -> "sup-small-1";

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final Map<String, ObjectNode> storedPlans = new ConcurrentHashMap<>();
    private final List<String> rebalances = new ArrayList<>();
    private final Map<String, String> statuses = new HashMap<>();
    private Map<String, SchedulerAssignment> assignments = Map.of();
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;

    /** Linear's first plan puts high on the fast machine; the second topology's plan names linear planned again. */
    private FakePlanner.Answer answer(FakePlanner.Call call) {
        FakePlanner.Answer read = FakePlanner.storedPlanRead(call, storedPlans);
        if (read != null) {
            return read;
        }
        String name = call.body().get("topology").get("name").asText();
        if (name.equals("linear")) {
            ObjectNode plan = FakePlanner.planFor(call.body(), "p-1", HetschedSchedulerTest.HIGH_ON_FAST, true);
            storedPlans.put("p-9", FakePlanner.planFor(call.body(), "p-9", ALL_ON_SMALL_1, true));
            return FakePlanner.Answer.json(201, plan);
        }
        ObjectNode plan = FakePlanner.planFor(call.body(), "p-2", HetschedSchedulerTest.HIGH_ON_FAST, true);
        plan.putObject("stats").putObject("tenancy").putArray("replaced").addObject()
                .put("topology", "linear").put("plan_id", "p-9").put("rate_before", 10.0).put("rate_after", 12.5);
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

    private HetschedScheduler scheduler() {
        return StormFixtures.scheduler(planner.url(), Map.of(), clock::get,
                (name, waitSecs) -> rebalances.add(name + " wait " + waitSecs));
    }

    private static TopologyDetails tenant(String id) {
        Map<String, Object> conf = new HashMap<>(Map.of(TopologySettings.PROFILES, "micro"));
        conf.put("topology.message.timeout.secs", 20);
        return topology(id, linear(2, 3), 2, 4, conf);
    }

    private Cluster round(HetschedScheduler scheduler, TopologyDetails... running) {
        Topologies all = new Topologies(running);
        Cluster cluster = cluster(supervisors, all, assignments);
        scheduler.schedule(all, cluster);
        assignments = new HashMap<>(cluster.getAssignments());
        statuses.putAll(cluster.getStatusMap());
        return cluster;
    }

    @Test
    void theTopologiesPlannedAgainBesideANewcomerAreReplacedDrainedOntoTheirBoundPlans() {
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = tenant("linear-1");
        TopologyDetails second = tenant("second-2");
        round(scheduler, linear);
        assertTrue(rebalances.isEmpty());

        round(scheduler, linear, second);

        assertEquals(List.of("linear wait 20"), rebalances, "drained: deactivated for the message timeout");
        assertEquals("p-9", planner.boundPlan("linear"));
        assertTrue(statuses.get("linear-1").startsWith("hetsched: planned again beside second at 00:16:40 UTC (plan p-9, "
                + "10.00 -> 12.50 tuples/s): re-placing it drained"), statuses.get("linear-1"));
        assertTrue(statuses.get("second-2").endsWith("; re-placing linear (plan p-9, 10.00 -> 12.50 tuples/s) beside it"),
                statuses.get("second-2"));

        // Nimbus's rebalance frees linear's slots; the next round places it by the plan bound to it
        assignments = new HashMap<>(assignments);
        assignments.remove("linear-1");
        Cluster after = round(scheduler, linear, second);
        assertTrue(placement(after, "linear-1").values().stream().allMatch(slot -> slot.getNodeId().equals("sup-small-1")));
        assertTrue(statuses.get("linear-1").contains("placed by planner (bound plan p-9"), statuses.get("linear-1"));
        assertEquals(1, rebalances.size(), "placing the bound plan re-places nothing else");
    }

    @Test
    void theTopologiesANewcomerLeavesWithoutTheirMinimumAreEvicted() {
        planner.answerWith(call -> {
            String name = call.body().get("topology").get("name").asText();
            ObjectNode plan = FakePlanner.planFor(call.body(), "p-" + name, HetschedSchedulerTest.HIGH_ON_FAST, true);
            if (name.equals("second")) {
                plan.putObject("stats").putObject("tenancy").putArray("evicted").addObject()
                        .put("topology", "linear").put("reason", "its minimum rate 5 tuples/s needs 60% of machine small-1");
            }
            return FakePlanner.Answer.json(201, plan);
        });
        HetschedScheduler scheduler = scheduler();
        TopologyDetails linear = tenant("linear-1");
        TopologyDetails second = tenant("second-2");
        round(scheduler, linear);

        Cluster cluster = round(scheduler, linear, second);

        assertTrue(placement(cluster, "linear-1").isEmpty(), "its slots are freed");
        assertEquals(second.getExecutors(), placement(cluster, "second-2").keySet());
        assertTrue(statuses.get("linear-1").startsWith("hetsched: not admitted beside second at 00:16:40 UTC (its minimum "
                + "rate 5 tuples/s needs 60% of machine small-1): evicted"), statuses.get("linear-1"));
        assertTrue(statuses.get("second-2").endsWith("; evicted linear (not admitted beside it)"), statuses.get("second-2"));
        assertTrue(rebalances.isEmpty());
    }

    @Test
    void anEvictedFieldThatIsNotAListIsThePlannersFault() {
        ObjectNode plan = FakePlanner.JSON.createObjectNode();
        plan.putArray("assignments");
        plan.putObject("stats").putObject("tenancy").put("evicted", "linear");
        PlanFault fault = assertThrows(PlanFault.class, () -> Plan.parse(plan));
        assertTrue(fault.reason().contains("stats.tenancy.evicted is not a list"), fault.reason());
    }

    @Test
    void aReplacedEntryWithoutATopologyIsThePlannersFault() {
        ObjectNode plan = FakePlanner.JSON.createObjectNode();
        plan.putArray("assignments");
        plan.putObject("stats").putObject("tenancy").putArray("replaced").addObject().put("plan_id", "p-9");
        PlanFault fault = assertThrows(PlanFault.class, () -> Plan.parse(plan));
        assertTrue(fault.reason().contains("stats.tenancy.replaced entry 0 lacks a text 'topology' or 'plan_id'"),
                fault.reason());
    }
}
