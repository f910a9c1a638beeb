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
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
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
 * A topology whose own profiles cannot plan it (its set lacks pairs, or does not exist) is placed evenly at once,
 * with a status naming the cause and what to do, and is asked for again only when its set or the machine types
 * change; a true admission refusal stays unscheduled.
 */
class ProfileGapTest {
    private static final Map<String, Object> ASKS_PLANNER = Map.of(TopologySettings.PROFILES, "lab");
    private static final String MISSING_HIGH_ON_FAST = "{\"detail\": \"no profile for highCompute on machine type fast "
            + "(component high)\", \"error\": \"profile_missing\", \"missing\": [{\"component\": \"high\", "
            + "\"profile\": \"highCompute\", \"machine_type\": \"fast\"}, {\"component\": \"low\", \"profile\": "
            + "\"lowCompute\", \"machine_type\": \"fast\"}, {\"component\": \"high\", \"profile\": \"highCompute\", "
            + "\"machine_type\": \"small\"}]}";

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;
    private Map<String, SchedulerAssignment> assignments = Map.of();
    private volatile long setVersion = 1;
    /** Every topology's status as Nimbus keeps it: each round's statuses merged over the earlier ones. */
    private final Map<String, String> statuses = new HashMap<>();

    @BeforeEach
    void start() throws IOException {
        planner = new FakePlanner(call -> FakePlanner.Answer.raw(422, MISSING_HIGH_ON_FAST));
        planner.answerProfileReadsWith(call -> {
            ObjectNode set = FakePlanner.profileSetWithBaseLoad("lab", null);
            set.put("version", setVersion);
            return FakePlanner.Answer.json(200, set);
        });
        supervisors = byId(
                supervisor("sup-small-1", "host-1", "small", null, 4),
                supervisor("sup-fast-1", "host-2", "fast", 4, 4));
    }

    @AfterEach
    void stop() {
        planner.close();
    }

    private HetschedScheduler scheduler(Map<String, Object> extra) {
        return StormFixtures.scheduler(planner.url(), extra, clock::get, (name, wait) -> { });
    }

    private static TopologyDetails linearTopology(Map<String, Object> conf) {
        Map<String, Object> all = new HashMap<>(ASKS_PLANNER);
        all.putAll(conf);
        all.put(TopologySettings.COMPONENT_PROFILES, Map.of("low", "lowCompute", "high", "highCompute"));
        return topology("linear-1", linear(2, 3), 2, 4, all);
    }

    /** One Nimbus round 10 s after the last, on a cluster built from the last round's assignments. */
    private Cluster round(HetschedScheduler scheduler, TopologyDetails topology) {
        clock.addAndGet(10_000);
        Topologies all = new Topologies(topology);
        Cluster cluster = cluster(supervisors, all, assignments);
        scheduler.schedule(all, cluster);
        assignments = new HashMap<>(cluster.getAssignments());
        statuses.putAll(cluster.getStatusMap());
        return cluster;
    }

    private long planRequests() {
        return planner.calls().stream().filter(c -> c.method().equals("POST") && c.path().equals("/v1/plans")).count();
    }

    @Test
    void missingPairsArePlacedEvenlyAtOnceWithTheCauseAndWhatToDoAndNotAskedEveryRound() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology(Map.of());

        Cluster first = round(scheduler, linear);

        assertTrue(first.getUnassignedExecutors(linear).isEmpty(), "placed evenly in the round that asked");
        String status = first.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: profile set lab has no profile for component high (profile key "
                + "highCompute) on machine types fast, small; for component low (profile key lowCompute) on machine "
                + "type fast; scheduled evenly by Storm's DefaultScheduler at "), status);
        assertTrue(status.contains("profile it live: hetsched tune linear --store DIR --explore"), status);
        assertTrue(status.endsWith("planned again once profile set lab or the machine types change"), status);
        for (int i = 0; i < 20; i++) {
            round(scheduler, linear);
        }
        assertEquals(1, planRequests(), "asked once in 21 rounds (200 s): nothing changed");
        assertTrue(planner.profileReads().size() <= 1 + 200 / 30 + 1, "the set's version read at most every 30 s: "
                + planner.profileReads().size());
    }

    @Test
    void itIsPlacedEvenlyEvenWhereTheFallbackIsNone() {
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.FALLBACK, "none"));
        TopologyDetails linear = linearTopology(Map.of());

        Cluster cluster = round(scheduler, linear);

        assertTrue(cluster.getUnassignedExecutors(linear).isEmpty(), "always scheduled: no later round could plan it");
    }

    @Test
    void anUnknownSetIsNamedAndPlacedEvenly() {
        planner.answerWith(call -> FakePlanner.Answer.raw(404, "{\"detail\": \"profile set 'lab' does not exist: store "
                + "it with PUT /v1/profiles/lab\", \"error\": \"not_found\"}"));
        planner.answerProfileReadsWith(call -> FakePlanner.Answer.raw(404, "{\"detail\": \"profile set 'lab' does not "
                + "exist\", \"error\": \"not_found\"}"));
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology(Map.of());

        Cluster cluster = round(scheduler, linear);

        assertTrue(cluster.getUnassignedExecutors(linear).isEmpty());
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: profile set lab does not exist on the planner at "
                + planner.url() + "; scheduled evenly"), cluster.getStatus("linear-1"));
        for (int i = 0; i < 10; i++) {
            round(scheduler, linear);
        }
        assertEquals(1, planRequests());
    }

    @Test
    void aProxysNotFoundIsNotTakenForAnUnknownSet() {
        planner.answerWith(call -> FakePlanner.Answer.raw(404, "<html>404 Not Found</html>"));
        Cluster cluster = round(scheduler(Map.of()), linearTopology(Map.of()));

        assertTrue(statuses.get("linear-1").startsWith("hetsched: planner not used (planner refused the request: "
                + "POST /v1/plans answered HTTP 404"), statuses.get("linear-1"));
        assertTrue(cluster.getUnassignedExecutors(cluster.getTopologies().getById("linear-1")).isEmpty());
    }

    @Test
    void aNewVersionOfTheSetIsAskedForAndThePlanPlaced() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology(Map.of());
        round(scheduler, linear);
        round(scheduler, linear);
        assertEquals(1, planRequests());

        setVersion = 2;
        planner.answerWith(FakePlanner.planning("p-2", HetschedSchedulerTest.HIGH_ON_FAST));
        for (int i = 0; i < 6 && planRequests() < 2; i++) {
            round(scheduler, linear);
        }
        Cluster cluster = round(scheduler, linear);

        assertEquals(2, planRequests(), "asked again once, after the set changed");
        assertTrue(executorsOf(linear, "high").stream()
                .allMatch(e -> placement(cluster, "linear-1").get(e).getNodeId().equals("sup-fast-1")), "placed by plan");
        assertTrue(statuses.get("linear-1").contains("; planned at"), statuses.get("linear-1"));
    }

    @Test
    void aNewMachineTypeIsAskedForAndStillMissingPairsKeepItEven() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology(Map.of());
        round(scheduler, linear);
        assertEquals(1, planRequests());

        supervisors = new HashMap<>(supervisors);
        supervisors.put("sup-medium-1", supervisor("sup-medium-1", "host-3", "medium", 2, 4));
        Cluster cluster = round(scheduler, linear);
        cluster = round(scheduler, linear);

        assertEquals(2, planRequests(), "asked again once: the machine types changed");
        assertTrue(cluster.getUnassignedExecutors(linear).isEmpty(), "kept evenly");
        assertTrue(statuses.get("linear-1").startsWith("hetsched: profile set lab has no profile"),
                statuses.get("linear-1"));
        for (int i = 0; i < 5; i++) {
            round(scheduler, linear);
        }
        assertEquals(2, planRequests(), "and waits again");
    }

    @Test
    void executorsLostFromAWaitingTopologyArePlacedEvenlyAgainWithoutAsking() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology(Map.of());
        round(scheduler, linear);
        SchedulerAssignment placed = assignments.get("linear-1");
        Map<ExecutorDetails, WorkerSlot> kept = new HashMap<>(placed.getExecutorToSlot());
        ExecutorDetails lost = kept.keySet().iterator().next();
        kept.remove(lost);
        assignments = Map.of("linear-1", new SchedulerAssignmentImpl("linear-1", kept, null, null));

        Cluster cluster = round(scheduler, linear);

        assertTrue(cluster.getUnassignedExecutors(linear).isEmpty());
        assertEquals(1, planRequests());
    }

    @Test
    void aRebalancedWaitingTopologyIsAskedForAgain() {
        HetschedScheduler scheduler = scheduler(Map.of());
        TopologyDetails linear = linearTopology(Map.of());
        round(scheduler, linear);
        assignments = Map.of(); // Nimbus's rebalance (hetsched tune) freed every slot, maybe after binding a plan

        planner.answerWith(FakePlanner.planning("p-3", HetschedSchedulerTest.HIGH_ON_FAST));
        Cluster cluster = round(scheduler, linear);

        assertEquals(2, planRequests());
        assertTrue(cluster.getStatus("linear-1").contains("plan p-3"), cluster.getStatus("linear-1"));
    }

    @Test
    void aTrueAdmissionRefusalStillLeavesItUnscheduled() {
        planner.answerWith(call -> FakePlanner.Answer.raw(409, "{\"detail\": \"topology linear is not admitted: its "
                + "minimum rate 30 tuples/s needs 120.0% of machine sup-fast-1\", \"error\": \"admission_refused\"}"));
        Cluster cluster = round(scheduler(Map.of()), linearTopology(Map.of()));

        assertNull(cluster.getAssignmentById("linear-1"));
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: not admitted"), cluster.getStatus("linear-1"));
        assertFalse(cluster.getStatus("linear-1").contains("profile set"));
    }

    @Test
    void aWaitNoticesANewVersionOnlyOnceItsReadIsDone() {
        ProfileWaits waits = new ProfileWaits();
        waits.waitFor("t-1", new ProfileWaits.Wait("lab", 3L, java.util.Set.of("small"), "cause", 0));
        assertFalse(waits.versionReadDue("t-1", 29_999));
        assertTrue(waits.versionReadDue("t-1", 30_000));
        java.util.concurrent.CompletableFuture<Long> read = new java.util.concurrent.CompletableFuture<>();
        waits.versionReadStarted("t-1", read, 30_000);
        assertNull(waits.changed("t-1", java.util.Set.of("small")), "under way");
        assertFalse(waits.versionReadDue("t-1", 90_000), "one read at a time");
        read.complete(3L);
        assertNull(waits.changed("t-1", java.util.Set.of("small")), "the same version");
        assertEquals("the machine types are now medium, small (were small)",
                waits.changed("t-1", java.util.Set.of("small", "medium")));
        waits.versionReadStarted("t-1", java.util.concurrent.CompletableFuture.completedFuture(4L), 60_000);
        assertEquals("profile set lab is now version 4 (was 3)", waits.changed("t-1", java.util.Set.of("small")));
        waits.versionReadStarted("t-1", java.util.concurrent.CompletableFuture.failedFuture(
                PlanFault.plannerFailed("down")), 90_000);
        assertNull(waits.changed("t-1", java.util.Set.of("small")), "a failed read is no change");
        waits.retainOnly(id -> false);
        assertFalse(waits.isWaiting("t-1"));
    }

    @Test
    void theCauseNamesEveryComponentAMissingKeyLeavesWithoutAProfile() {
        ProfileGap gap = ProfileGap.pairs(List.of(new ProfileGap.Pair("count", "counter", "small"),
                new ProfileGap.Pair("count", "counter", "medium"), new ProfileGap.Pair("split", "split", "small")));
        Map<String, String> keys = new java.util.TreeMap<>(Map.of("count", "counter", "count2", "counter",
                "split", "split", "spout", "words"));
        assertEquals("profile set lab has no profile for components count, count2 (profile key counter) on machine "
                + "types medium, small; for component split on machine type small", gap.cause("lab", "http://p", keys));
        assertEquals("profile set lab does not exist on the planner at http://p",
                ProfileGap.unknown().cause("lab", "http://p", keys));
    }
}
