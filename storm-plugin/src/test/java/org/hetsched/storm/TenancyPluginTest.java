package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Topologies sharing the cluster: priority and rates sent as the plan request's tenant, refusals, heartbeats. */
class TenancyPluginTest {
    private static final Map<String, Object> ASKS_PLANNER = Map.of(TopologySettings.PROFILES, "micro");

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;

    @BeforeEach
    void start() throws IOException {
        planner = new FakePlanner(FakePlanner.planning("p-1", HetschedSchedulerTest.HIGH_ON_FAST));
        supervisors = byId(
                supervisor("sup-small-1", "host-1", "small", null, 4),
                supervisor("sup-small-2", "host-2", "small", null, 4),
                supervisor("sup-fast-1", "host-3", "fast", 4, 4));
    }

    @AfterEach
    void stop() {
        planner.close();
    }

    private HetschedScheduler scheduler() {
        Map<String, Object> yaml = new HashMap<>();
        yaml.put(SchedulerSettings.PLANNER_URL, planner.url().toString());
        yaml.put(SchedulerSettings.PLANNER_TIMEOUT_MS, 60_000);
        return StormFixtures.scheduler(yaml, clock::get);
    }

    @Test
    void priorityAndRatesGoAlongAsTheTenant() {
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TenantSettings.PRIORITY, 2);
        conf.put(TenantSettings.MIN_RATE, 5);
        conf.put(TenantSettings.TARGET_RATE, "12.5");
        TopologyDetails linear = topology("linear-1", linear(2, 3), 2, 4, conf);

        scheduler().schedule(new Topologies(linear), cluster(supervisors, linear));

        JsonNode tenant = planner.calls().get(0).body().get("tenant");
        assertEquals(2, tenant.get("priority").asInt());
        assertEquals(5.0, tenant.get("min_rate").asDouble());
        assertEquals(12.5, tenant.get("target_rate").asDouble());
    }

    @Test
    void stormsDefaultPriorityAndNoRatesWhenTheConfSetsNone() throws PlanFault {
        TopologyDetails linear = topology("linear-1", linear(2, 3), 2, 4, ASKS_PLANNER);
        assertEquals(new TenantSettings(29, 0.0, null), TenantSettings.fromConf(linear.getConf()));
    }

    @Test
    void malformedRatesAreNamed() {
        PlanFault negative = assertThrows(PlanFault.class, () -> TenantSettings.fromConf(Map.of(TenantSettings.MIN_RATE, -1)));
        assertTrue(negative.reason().startsWith("hetsched.min.rate must be a non-negative number"), negative.reason());
        PlanFault below = assertThrows(PlanFault.class, () -> TenantSettings.fromConf(
                Map.of(TenantSettings.MIN_RATE, 5, TenantSettings.TARGET_RATE, 2)));
        assertEquals("hetsched.target.rate (2.0) is below hetsched.min.rate (5.0)", below.reason());
        PlanFault priority = assertThrows(PlanFault.class, () -> TenantSettings.fromConf(Map.of(TenantSettings.PRIORITY, "high")));
        assertEquals("topology.priority must be a whole number, got 'high'", priority.reason());
    }

    @Test
    void aTopologyThePlannerDoesNotAdmitIsLeftUnscheduledNotPlacedEvenly() {
        planner.answerWith(call -> FakePlanner.Answer.raw(409, "{\"detail\": \"topology linear is not admitted: its "
                + "minimum rate 30 tuples/s needs 120.0% of machine sup-fast-1\", \"error\": \"admission_refused\"}"));
        TopologyDetails linear = topology("linear-1", linear(2, 3), 2, 4, ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, linear);

        scheduler().schedule(new Topologies(linear), cluster);

        assertNull(cluster.getAssignmentById("linear-1"), "not placed evenly: it would take the others' CPU");
        String status = cluster.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: not admitted (planner did not admit it: topology linear is not admitted: "
                + "its minimum rate 30 tuples/s"), status);
        assertFalse(status.contains("evenly"), status);
    }

    /** The planner refuses {@code star} (its minimum does not fit) and plans every other topology. */
    private static FakePlanner.Answer refusingStar(FakePlanner.Call call) {
        if (call.body() != null && "star".equals(call.body().path("topology").path("name").asText())) {
            return FakePlanner.Answer.raw(409, "{\"detail\": \"topology star is not admitted: its minimum rate 30 "
                    + "tuples/s needs 120.0% of machine sup-fast-1\", \"error\": \"admission_refused\"}");
        }
        return FakePlanner.planning("p-1", HetschedSchedulerTest.HIGH_ON_FAST).answer(call);
    }

    private HetschedScheduler scheduler(Map<String, Object> extra) {
        Map<String, Object> yaml = new HashMap<>();
        yaml.put(SchedulerSettings.PLANNER_URL, planner.url().toString());
        yaml.put(SchedulerSettings.PLANNER_TIMEOUT_MS, 60_000);
        yaml.putAll(extra);
        return StormFixtures.scheduler(yaml, clock::get);
    }

    /** The next Nimbus round on the last one's assignments. */
    private static Cluster nextRound(HetschedScheduler scheduler, Topologies topologies, Cluster last) {
        Cluster cluster = StormFixtures.cluster(last.getSupervisors(), topologies, last.getAssignments());
        scheduler.schedule(topologies, cluster);
        return cluster;
    }

    @Test
    void aRefusedTopologyStaysUnscheduledWhileThePlannerIsUnreachableOrTheBreakerOpen() {
        planner.answerWith(TenancyPluginTest::refusingStar);
        TopologyDetails star = topology("star-3", linear(1, 1), 1, 2, ASKS_PLANNER);
        Topologies topologies = new Topologies(star);
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.BREAKER_FAILURES, 2));
        Cluster cluster = cluster(supervisors, star);
        scheduler.schedule(topologies, cluster);
        assertTrue(cluster.getStatus("star-3").startsWith("hetsched: not admitted (planner did not admit it: "),
                cluster.getStatus("star-3"));

        String url = planner.url().toString();
        planner.close(); // the planning service is killed
        clock.addAndGet(5_000);
        cluster = nextRound(scheduler, topologies, cluster);

        assertNull(cluster.getAssignmentById("star-3"), "not placed evenly on the machines the admitted ones need");
        String status = cluster.getStatus("star-3");
        assertTrue(status.startsWith("hetsched: not admitted at 00:16:40 UTC (planner did not admit it: topology star is "
                + "not admitted: its minimum rate 30 tuples/s needs 120.0% of machine sup-fast-1); the planner is "
                + "unavailable (planner unreachable at " + url), status);
        assertTrue(status.endsWith("), so it stays unscheduled until the planner answers"), status);

        clock.addAndGet(5_000);
        cluster = nextRound(scheduler, topologies, cluster); // the second failure in a row opens the breaker
        clock.addAndGet(1_000);
        cluster = nextRound(scheduler, topologies, cluster);

        assertNull(cluster.getAssignmentById("star-3"));
        assertTrue(cluster.getStatus("star-3").matches("hetsched: not admitted at 00:16:40 UTC \\(planner did not admit "
                + "it: .*\\); the planner is unavailable \\(planner skipped: 2 calls failed in a row, circuit open .*\\), "
                + "so it stays unscheduled until the planner answers"), cluster.getStatus("star-3"));
    }

    @Test
    void aTopologyNeverRefusedFallsBackEvenlyAsBeforeWhenThePlannerIsUnreachable() {
        planner.answerWith(TenancyPluginTest::refusingStar);
        TopologyDetails star = topology("star-3", linear(1, 1), 1, 2, ASKS_PLANNER);
        HetschedScheduler scheduler = scheduler();
        Cluster cluster = cluster(supervisors, star);
        scheduler.schedule(new Topologies(star), cluster);

        planner.close();
        TopologyDetails linear = topology("linear-1", linear(2, 3), 2, 4, ASKS_PLANNER);
        Topologies both = new Topologies(star, linear);
        cluster = nextRound(scheduler, both, cluster);

        assertNull(cluster.getAssignmentById("star-3"));
        assertFalse(cluster.getAssignmentById("linear-1").getExecutors().isEmpty(), "placed evenly");
        String status = cluster.getStatus("linear-1");
        assertTrue(status.startsWith("hetsched: planner not used (planner unreachable at "), status);
        assertTrue(status.endsWith("); scheduled evenly by Storm's DefaultScheduler at 00:16:40 UTC; planned again once "
                + "the planner answers (hetsched.replan.after.fallback)"), status);
    }

    @Test
    void aRefusedTopologyAdmittedLaterIsPlacedAndItsRefusalForgotten() {
        planner.answerWith(TenancyPluginTest::refusingStar);
        TopologyDetails star = topology("star-3", linear(1, 1), 1, 2, ASKS_PLANNER);
        Topologies topologies = new Topologies(star);
        HetschedScheduler scheduler = scheduler();
        Cluster cluster = cluster(supervisors, star);
        scheduler.schedule(topologies, cluster);
        assertNull(cluster.getAssignmentById("star-3"));

        planner.answerWith(FakePlanner.planning("p-2", HetschedSchedulerTest.HIGH_ON_FAST)); // room now: admitted
        cluster = nextRound(scheduler, topologies, cluster);
        assertFalse(cluster.getAssignmentById("star-3").getExecutors().isEmpty());
        assertTrue(cluster.getStatus("star-3").startsWith("hetsched: placed by planner (plan p-2"),
                cluster.getStatus("star-3"));

        planner.close(); // then it loses its workers while the planner is down: a fallback as for any topology
        cluster = StormFixtures.cluster(supervisors, topologies, Map.of());
        scheduler.schedule(topologies, cluster);
        assertFalse(cluster.getAssignmentById("star-3").getExecutors().isEmpty(), "placed evenly: no refusal is kept");
        assertTrue(cluster.getStatus("star-3").startsWith("hetsched: planner not used (planner unreachable at "),
                cluster.getStatus("star-3"));
    }

    @Test
    void aTopologyTheLedgerRefusesAfterAPriorityChangeIsEvictedAtTheNextHeartbeat() throws InterruptedException {
        TopologyDetails linear = topology("linear-1", linear(2, 3), 2, 4, ASKS_PLANNER);
        TopologyDetails other = topology("other-1", linear(1, 1), 1, 2, ASKS_PLANNER);
        Topologies both = new Topologies(linear, other);
        planner.answerHeartbeatsWith(FakePlanner.Answer.raw(200, "{\"renewed\": [\"linear\", \"other\"], "
                + "\"released\": [], \"evicted\": [{\"topology\": \"linear\", \"reason\": \"its minimum rate 5 "
                + "tuples/s needs 80.0% of machine sup-fast-1\", \"fits_rate\": 1.2}]}"));
        HetschedScheduler scheduler = scheduler();
        Cluster cluster = cluster(supervisors, linear, other);
        scheduler.schedule(both, cluster); // both placed by plan; the heartbeat asked as they were placed
        cluster = roundsUntil(scheduler, both, cluster, c -> planner.heartbeats().size() >= 1);
        for (int i = 0; i < 3; i++) { // the first heartbeat's answer is taken, and found stale
            Thread.sleep(50);
            cluster = roundsUntil(scheduler, both, cluster, c -> false, 1);
        }
        assertFalse(cluster.getAssignmentById("linear-1").getExecutors().isEmpty(),
                "a refusal asked no later than its placement may predate the plan that admitted it");

        clock.addAndGet(AliveHeartbeat.INTERVAL_MS); // the next heartbeat is asked after the placement
        cluster = roundsUntil(scheduler, both, cluster, c -> planner.heartbeats().size() >= 2);
        cluster = roundsUntil(scheduler, both, cluster, c -> c.getAssignmentById("linear-1").getExecutors().isEmpty());

        assertTrue(cluster.getAssignmentById("linear-1").getExecutors().isEmpty(),
                "its slots are freed without waiting for a plan answer");
        assertEquals("hetsched: not admitted at 00:16:45 UTC (its minimum rate 5 tuples/s needs 80.0% of machine "
                + "sup-fast-1): evicted, its slots freed; the next round asks again", cluster.getStatus("linear-1"));
        assertFalse(cluster.getAssignmentById("other-1").getExecutors().isEmpty(), "the others keep running");

        planner.close(); // the eviction is remembered: with the planner gone it is not placed evenly
        cluster = nextRound(scheduler, both, cluster);
        scheduler.cleanup();
        assertTrue(cluster.getAssignmentById("linear-1") == null
                || cluster.getAssignmentById("linear-1").getExecutors().isEmpty(), "still evicted");
        assertTrue(cluster.getStatus("linear-1").startsWith("hetsched: not admitted at 00:16:45 UTC (its minimum rate 5 "
                + "tuples/s needs 80.0% of machine sup-fast-1); the planner is unavailable (planner unreachable at "),
                cluster.getStatus("linear-1"));
    }

    @Test
    void onlyARunningPlannerTopologyNotBeingPlannedIsEvicted() {
        TopologyDetails planned = topology("planned-1", linear(1, 1), 1, 2, ASKS_PLANNER);
        TopologyDetails storms = topology("storms-1", linear(1, 1), 1, 2, Map.of());
        TopologyDetails replanned = topology("replanned-1", linear(1, 1), 1, 2, ASKS_PLANNER);
        TopologyDetails asking = topology("asking-1", linear(1, 1), 1, 2, ASKS_PLANNER);
        TopologyDetails waiting = topology("waiting-1", linear(1, 1), 1, 2, ASKS_PLANNER);
        Cluster cluster = cluster(supervisors, planned, storms, replanned, asking, waiting);
        for (TopologyDetails t : List.of(planned, storms, replanned, asking)) {
            EvenScheduling.schedule(cluster, List.of(t));
        }
        List<Plan.Evicted> refused = List.of("planned", "storms", "replanned", "asking", "waiting", "killed").stream()
                .map(name -> new Plan.Evicted(name, "short")).toList();

        List<Tenancy.Eviction> evictions = Tenancy.refused(refused, 1_000, cluster,
                Map.of("replanned-1", 1_000L, "planned-1", 999L), java.util.Set.of("asking-1"), 2_000);

        assertEquals(List.of("planned-1"), evictions.stream().map(Tenancy.Eviction::topologyId).toList(),
                "not Storm's own, not one placed by plan since the heartbeat asked, not one being planned, not one "
                        + "unassigned or gone");
    }

    /** Nimbus's rounds, each on the last one's assignments, until {@code done} holds (at most 5 s); the last cluster. */
    private static Cluster roundsUntil(HetschedScheduler scheduler, Topologies topologies, Cluster cluster,
                                       java.util.function.Predicate<Cluster> done) throws InterruptedException {
        return roundsUntil(scheduler, topologies, cluster, done, 250);
    }

    private static Cluster roundsUntil(HetschedScheduler scheduler, Topologies topologies, Cluster cluster,
                                       java.util.function.Predicate<Cluster> done, int rounds) throws InterruptedException {
        for (int i = 0; i < rounds && !done.test(cluster); i++) {
            Thread.sleep(20);
            cluster = StormFixtures.cluster(cluster.getSupervisors(), topologies, cluster.getAssignments());
            scheduler.schedule(topologies, cluster);
        }
        return cluster;
    }

    @Test
    void everyRoundTellsThePlannerWhichTopologiesRun() throws InterruptedException {
        TopologyDetails a = topology("alpha-1", linear(2, 3), 2, 4, ASKS_PLANNER);
        TopologyDetails b = topology("beta-7", linear(1, 1), 1, 2, Map.of());
        HetschedScheduler scheduler = scheduler();

        scheduler.schedule(new Topologies(a, b), cluster(supervisors, a, b));
        for (int i = 0; i < 100 && planner.heartbeats().isEmpty(); i++) {
            Thread.sleep(20);
        }
        scheduler.schedule(new Topologies(a, b), cluster(supervisors, a, b));
        clock.addAndGet(AliveHeartbeat.INTERVAL_MS);
        scheduler.schedule(new Topologies(a), cluster(supervisors, a));
        for (int i = 0; i < 100 && planner.heartbeats().size() < 2; i++) {
            Thread.sleep(20);
        }
        scheduler.cleanup();

        List<FakePlanner.Call> sent = planner.heartbeats();
        assertEquals(2, sent.size(), "one per interval, not one per round");
        assertEquals("[\"alpha\",\"beta\"]", sent.get(0).body().get("topologies").toString());
        assertEquals("[\"alpha\"]", sent.get(1).body().get("topologies").toString());
    }
}
