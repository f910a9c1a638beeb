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
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
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
import org.junit.jupiter.api.io.TempDir;

/**
 * Nimbus never waits on the planner: requests run in the background, later rounds apply their answers, slow
 * answers trip the breaker, and a topology placed evenly because the planner was down is planned again.
 */
class AsyncSchedulingTest {
    private static final Map<String, Object> ASKS_PLANNER = Map.of(
            TopologySettings.PROFILES, "micro",
            TopologySettings.STRATEGY, "paper");
    private static final FakePlanner.Rule HIGH_ON_FAST = HetschedSchedulerTest.HIGH_ON_FAST;

    private final AtomicLong clock = new AtomicLong(1_000_000);
    private FakePlanner planner;
    private Map<String, SupervisorDetails> supervisors;
    /** Every topology's assignment as the last round left it: Nimbus builds each round's cluster from these. */
    private Map<String, SchedulerAssignment> assignments = Map.of();
    /** Every topology's status as Nimbus keeps it: each round's statuses merged over the earlier ones. */
    private final Map<String, String> statuses = new HashMap<>();
    @TempDir
    Path folder;
    private Path tokenFile;

    /** Runs the background requests only when the test says so. */
    private static final class StepExecutor implements Executor {
        private final ArrayDeque<Runnable> queued = new ArrayDeque<>();

        @Override
        public void execute(Runnable task) {
            queued.add(task);
        }

        int queued() {
            return queued.size();
        }

        void runAll() {
            while (!queued.isEmpty()) {
                queued.poll().run();
            }
        }
    }

    @BeforeEach
    void start() throws IOException {
        tokenFile = Files.createTempFile(folder, "token", "");
        Files.writeString(tokenFile, "s3cret");
        Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
        planner = new FakePlanner(FakePlanner.planning("p-1", HIGH_ON_FAST));
        supervisors = byId(
                supervisor("sup-small-1", "host-1", "small", null, 8),
                supervisor("sup-small-2", "host-2", "small", null, 8),
                supervisor("sup-fast-1", "host-3", "fast", 4, 8));
    }

    @AfterEach
    void stop() {
        planner.close();
    }

    private HetschedScheduler scheduler(Map<String, Object> extra, LongSupplier now, Executor executor) {
        Map<String, Object> yaml = new HashMap<>();
        yaml.put(SchedulerSettings.PLANNER_URL, planner.url().toString());
        yaml.put(SchedulerSettings.PLANNER_TOKEN_FILE, tokenFile.toString());
        yaml.put(SchedulerSettings.PLANNER_TIMEOUT_MS, 60_000);
        yaml.putAll(extra);
        return StormFixtures.scheduler(yaml, now, executor);
    }

    private static TopologyDetails linearTopology(String id, Map<String, Object> conf) {
        return topology(id, linear(2, 3), 2, 4, conf);
    }

    /** One Nimbus round: a fresh Cluster from the last round's assignments, scheduled, its assignments kept. */
    private Cluster round(HetschedScheduler scheduler, TopologyDetails... topologies) {
        Topologies all = new Topologies(topologies);
        Cluster cluster = cluster(supervisors, all, assignments);
        scheduler.schedule(all, cluster);
        assignments = new HashMap<>(cluster.getAssignments());
        statuses.putAll(cluster.getStatusMap());
        return cluster;
    }

    private static boolean highOnFast(Cluster cluster, TopologyDetails topology) {
        Map<ExecutorDetails, WorkerSlot> placed = placement(cluster, topology.getId());
        return placed.keySet().equals(topology.getExecutors())
                && executorsOf(topology, "high").stream().allMatch(e -> placed.get(e).getNodeId().equals("sup-fast-1"));
    }

    @Test
    void aPlannerAnsweringIn1900MsNeverHoldsARoundAndSixTopologiesArePlacedByPlan() throws InterruptedException {
        planner.answerWith(call -> {
            FakePlanner.Answer plan = FakePlanner.planning("p-1", HIGH_ON_FAST).answer(call);
            return new FakePlanner.Answer(plan.status(), plan.body(), 1_900);
        });
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.PLANNER_TIMEOUT_MS, 10_000),
                System::currentTimeMillis, null);
        List<TopologyDetails> six = new ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            six.add(linearTopology("linear-" + i, ASKS_PLANNER));
        }
        TopologyDetails[] topologies = six.toArray(TopologyDetails[]::new);
        long maxRoundMillis = 0;
        int rounds = 0;
        boolean allPlanned = false;
        try {
            while (!allPlanned && rounds < 40) {
                rounds++;
                long started = System.nanoTime();
                Cluster cluster = round(scheduler, topologies);
                long millis = (System.nanoTime() - started) / 1_000_000;
                maxRoundMillis = Math.max(maxRoundMillis, millis);
                assertTrue(millis < 1_000, "round " + rounds + " took " + millis + " ms: Nimbus waited on the planner");
                for (TopologyDetails t : six) {
                    String status = Objects.toString(statuses.get(t.getId()));
                    assertFalse(status.contains("scheduled evenly"), "never placed evenly meanwhile: " + status);
                }
                allPlanned = six.stream().allMatch(t -> highOnFast(cluster, t)
                        && statuses.get(t.getId()).startsWith("hetsched: placed by planner (plan p-1"));
                Thread.sleep(200);
            }
        } finally {
            scheduler.cleanup();
        }
        System.out.printf("slow planner (1900 ms per plan), 6 topologies: every topology placed by plan after %d rounds;"
                + " longest schedule() %d ms%n", rounds, maxRoundMillis);
        assertTrue(allPlanned, "every topology placed by plan within 40 rounds");
        assertEquals(6, planner.calls().size(), "one plan request per topology");
    }

    @Test
    void aTopologyWaitsUnassignedWhileItsRequestIsUnderWayAndALaterRoundPlacesIt() {
        StepExecutor background = new StepExecutor();
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.ROUND_BUDGET_MS, 20), clock::get, background);
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);

        Cluster first = round(scheduler, linear);
        assertNull(first.getAssignmentById("linear-1"), "not placed while the planner is being asked");
        assertEquals("hetsched: waiting for its plan: asked the planner at 00:16:40 UTC; placed when the plan arrives",
                first.getStatus("linear-1"));
        assertEquals(1, background.queued());
        round(scheduler, linear);
        assertEquals(1, background.queued(), "one request per topology, not one per round");

        background.runAll();
        Cluster answered = round(scheduler, linear);
        assertTrue(highOnFast(answered, linear));
        assertTrue(answered.getStatus("linear-1").startsWith("hetsched: placed by planner (plan p-1"));
        assertEquals(1, planner.calls().size());
    }

    @Test
    void requestsInFlightAreBoundedAndTheRestWaitForALaterRound() {
        StepExecutor background = new StepExecutor();
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.ROUND_BUDGET_MS, 20,
                SchedulerSettings.PLANNER_CONCURRENCY, 2), clock::get, background);
        TopologyDetails a = linearTopology("a-1", ASKS_PLANNER);
        TopologyDetails b = linearTopology("b-1", ASKS_PLANNER);
        TopologyDetails c = linearTopology("c-1", ASKS_PLANNER);

        Cluster first = round(scheduler, a, b, c);
        assertEquals(2, background.queued());
        assertTrue(first.getStatus("c-1").contains("2 planner requests in flight (hetsched.planner.concurrency)"),
                first.getStatus("c-1"));

        background.runAll();
        Cluster second = round(scheduler, a, b, c);
        assertTrue(highOnFast(second, a) && highOnFast(second, b));
        assertEquals(1, background.queued(), "c-1 asked once a request finished");
        background.runAll();
        assertTrue(highOnFast(round(scheduler, a, b, c), c));
    }

    @Test
    void answersSlowerThanTheSlowLimitAreUsedButOpenTheBreaker() {
        planner.answerWith(call -> {
            clock.addAndGet(1_500);
            return FakePlanner.planning("p-1", HIGH_ON_FAST).answer(call);
        });
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.PLANNER_SLOW_MS, 1_000,
                SchedulerSettings.BREAKER_FAILURES, 2, SchedulerSettings.ROUND_BUDGET_MS, 60_000), clock::get, Runnable::run);

        TopologyDetails one = linearTopology("t-1", ASKS_PLANNER);
        TopologyDetails two = linearTopology("t-2", ASKS_PLANNER);
        assertTrue(highOnFast(round(scheduler, one), one), "a slow plan is still a plan");
        assertTrue(highOnFast(round(scheduler, one, two), two));
        TopologyDetails three = linearTopology("t-3", ASKS_PLANNER);
        Cluster third = round(scheduler, one, two, three);

        assertTrue(third.getStatus("t-3").contains("2 calls failed in a row, circuit open"), third.getStatus("t-3"));
        assertEquals(2, planner.calls().size(), "the third topology does not wait on a slow planner");
    }

    @Test
    void theRoundBudgetLeavesTheRestOfTheWorkToTheNextRound() {
        planner.answerWith(call -> {
            clock.addAndGet(600);
            return FakePlanner.planning("p-1", HIGH_ON_FAST).answer(call);
        });
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.ROUND_BUDGET_MS, 500), clock::get, Runnable::run);
        TopologyDetails a = linearTopology("a-1", ASKS_PLANNER);
        TopologyDetails b = linearTopology("b-1", ASKS_PLANNER);

        Cluster first = round(scheduler, a, b);
        assertEquals(1, planner.calls().size(), "the first request used up the round's 500 ms");
        assertTrue(first.getStatus("b-1").contains("hetsched.round.budget.ms (500 ms) is used up"), first.getStatus("b-1"));
        assertNull(first.getAssignmentById("a-1"), "its plan came after the round's budget: applied next round");

        Cluster second = round(scheduler, a, b);
        assertTrue(highOnFast(second, a));
        Cluster third = round(scheduler, a, b);
        assertTrue(highOnFast(third, b));
        assertEquals(2, planner.calls().size());
    }

    @Test
    void aTopologyPlacedEvenlyWhileThePlannerWasDownIsPlannedWhenItIsBackRespectingTheBreaker() {
        planner.answerWith(call -> FakePlanner.Answer.raw(503, "{\"detail\": \"busy\"}"));
        HetschedScheduler scheduler = scheduler(Map.of(SchedulerSettings.BREAKER_FAILURES, 1,
                SchedulerSettings.BREAKER_BACKOFF_MS, 1_000), clock::get, Runnable::run);
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);

        Cluster down = round(scheduler, linear);
        Map<ExecutorDetails, WorkerSlot> evenly = placement(down, "linear-1");
        assertEquals(linear.getExecutors(), evenly.keySet(), "placed evenly at once");
        assertEquals("hetsched: planner not used (planner failed: POST /v1/plans answered HTTP 503: busy); scheduled "
                + "evenly by Storm's DefaultScheduler at 00:16:40 UTC; planned again once the planner answers "
                + "(hetsched.replan.after.fallback)", down.getStatus("linear-1"));

        planner.answerWith(FakePlanner.planning("p-1", HIGH_ON_FAST));
        clock.addAndGet(500);
        assertEquals(evenly, placement(round(scheduler, linear), "linear-1"), "the breaker is open: not asked yet");
        assertEquals(1, planner.calls().size());

        clock.addAndGet(500);
        Cluster back = round(scheduler, linear);
        assertEquals(2, planner.calls().size());
        assertTrue(highOnFast(back, linear), "re-placed by plan");
        assertNotEquals(evenly, placement(back, "linear-1"));
        assertEquals("hetsched: placed evenly at 00:16:40 UTC: planner failed: POST /v1/plans answered HTTP 503: busy; "
                + "planned at 00:16:41 UTC (plan p-1, strategy paper) on 3 supervisors in 3 workers",
                back.getStatus("linear-1"));

        round(scheduler, linear);
        assertEquals(2, planner.calls().size(), "planned: not asked again");
    }

    @Test
    void aFallenBackTopologyThatLosesExecutorsIsPlacedWholeByPlanOnceAndNotAgain() {
        planner.answerWith(call -> FakePlanner.Answer.raw(503, "{\"detail\": \"busy\"}"));
        HetschedScheduler scheduler = scheduler(Map.of(), clock::get, Runnable::run);
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        round(scheduler, linear);
        planner.answerWith(FakePlanner.planning("p-1", HIGH_ON_FAST));

        // a worker dies: Nimbus drops its executors from the assignment
        SchedulerAssignment evenly = assignments.get("linear-1");
        WorkerSlot lost = evenly.getSlots().iterator().next();
        Map<ExecutorDetails, WorkerSlot> alive = new HashMap<>(evenly.getExecutorToSlot());
        alive.values().removeIf(lost::equals);
        assignments = Map.of("linear-1", new org.apache.storm.scheduler.SchedulerAssignmentImpl("linear-1", alive, null, null));

        Cluster again = round(scheduler, linear);
        assertTrue(highOnFast(again, linear), "placed whole by plan");
        assertEquals(2, planner.calls().size());
        round(scheduler, linear);
        assertEquals(2, planner.calls().size(), "planned: not asked again");
    }

    @Test
    void aTopologyThatSaysNoToReplanningKeepsItsEvenPlacement() {
        planner.answerWith(call -> FakePlanner.Answer.raw(503, "{\"detail\": \"busy\"}"));
        HetschedScheduler scheduler = scheduler(Map.of(), clock::get, Runnable::run);
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.REPLAN_AFTER_FALLBACK, false);
        TopologyDetails linear = linearTopology("linear-1", conf);

        Cluster down = round(scheduler, linear);
        assertTrue(down.getStatus("linear-1").endsWith("scheduled evenly by Storm's DefaultScheduler"),
                down.getStatus("linear-1"));
        planner.answerWith(FakePlanner.planning("p-1", HIGH_ON_FAST));
        Map<ExecutorDetails, WorkerSlot> evenly = placement(down, "linear-1");
        assertEquals(evenly, placement(round(scheduler, linear), "linear-1"));
        assertEquals(1, planner.calls().size());
    }

    @Test
    void aStoredPlanWhoseMachineIsNowOfAnotherTypeIsNotReused() {
        TopologyDetails linear = linearTopology("linear-1", ASKS_PLANNER);
        JsonNode madeFor = requestFor(linear);
        supervisors = byId(
                supervisor("sup-small-1", "host-1", "small", null, 8),
                supervisor("sup-small-2", "host-2", "small", null, 8),
                supervisor("sup-fast-1", "host-3", "small", null, 8));
        planner.answerWith(call -> call.method().equals("GET")
                ? FakePlanner.Answer.json(200, FakePlanner.planFor(madeFor, "p-5", HIGH_ON_FAST, false))
                : FakePlanner.Answer.json(201, FakePlanner.planFor(call.body(), "p-6", HIGH_ON_FAST, true)));
        Map<String, Object> conf = new HashMap<>(ASKS_PLANNER);
        conf.put(TopologySettings.PLAN_ID, "p-5");
        HetschedScheduler scheduler = scheduler(Map.of(), clock::get, Runnable::run);

        Cluster replanned = round(scheduler, linearTopology("linear-1", conf));
        assertEquals(List.of("GET", "POST"), planner.calls().stream().map(FakePlanner.Call::method).toList());
        assertTrue(replanned.getStatus("linear-1").startsWith("hetsched: placed by planner (plan p-6"),
                replanned.getStatus("linear-1"));

        assignments = Map.of();
        Cluster storedOnly = round(scheduler, linearTopology("linear-1", Map.of(TopologySettings.PLAN_ID, "p-5")));
        assertTrue(storedOnly.getStatus("linear-1").contains(
                "the plan was made for machine 'sup-fast-1' of type fast, which is now of type small"),
                storedOnly.getStatus("linear-1"));
    }

    /** The PlanRequest the plugin would send for a topology on this test's cluster as it is now. */
    private JsonNode requestFor(TopologyDetails td) {
        try {
            TopologySettings settings = TopologySettings.fromConf(td.getConf());
            return PlanRequests.build(FakePlanner.JSON, TopologyGraph.of(td),
                    Machine.usableBy(cluster(supervisors, td), td.getId(), SchedulerSettings.fromConf(Map.of()), settings),
                    settings, Map.of());
        } catch (PlanFault e) {
            throw new AssertionError(e);
        }
    }
}
