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

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.junit.jupiter.api.Test;

/** The scheduler's collaborators, each on its own: what each returns for what it is given. */
class CollaboratorsTest {
    private final AtomicLong clock = new AtomicLong(1_000_000);

    private static Map<String, SupervisorDetails> supervisors(SupervisorDetails... all) {
        return byId(all);
    }

    @Test
    void machineChangesSayWhoJoinedAndWhoLeftOnceAndNothingInTheFirstRound() {
        MachineChanges changes = new MachineChanges("machine-id");
        SupervisorDetails small = supervisor("sup-1", "small-1", "host-1", "small", null, 2);
        SupervisorDetails large = supervisor("sup-2", "large-1", "host-2", "large", null, 2);
        SupervisorDetails unnamed = supervisor("sup-3", "host-3", "large", null, 2);

        assertEquals(List.of(), changes.notice(cluster(supervisors(small))).joined(), "the first round sees no join");
        MachineChanges.Changes second = changes.notice(cluster(supervisors(small, large, unnamed)));
        assertEquals(List.of("large-1", "sup-3"), second.joinedNames(), "by machine id, else supervisor id");
        MachineChanges.Changes third = changes.notice(cluster(supervisors(small, unnamed)));
        assertEquals(List.of(new MachineChanges.Supervisor("sup-2", "large-1")), third.lost());
        assertEquals(List.of("large-1"), changes.goneNames());
        assertEquals(List.of(), changes.notice(cluster(supervisors(small, unnamed))).lost(), "said once");
        MachineChanges.Changes back = changes.notice(cluster(supervisors(small, large, unnamed)));
        assertEquals(List.of("large-1"), back.joinedNames(), "a returned machine joins again");
        assertEquals(List.of(), changes.goneNames());

        Cluster blacklisted = cluster(supervisors(small, large, unnamed));
        blacklisted.setBlacklistedHosts(Set.of("host-2"));
        assertEquals(List.of("sup-2"), changes.notice(blacklisted).lost().stream()
                .map(MachineChanges.Supervisor::id).toList(), "blacklisted by Nimbus counts as gone");
    }

    @Test
    void planJobsCountWhatIsInFlightAndHandOverAnswersOnce() {
        PlanJobs<String> jobs = new PlanJobs<>(clock::get);
        CompletableFuture<String> slow = new CompletableFuture<>();
        jobs.start("t-1", slow);
        jobs.start("t-2", CompletableFuture.completedFuture("plan"));
        assertEquals(1, jobs.inFlight());
        assertEquals(1_000_000, jobs.get("t-1").startedMillis());
        assertFalse(jobs.get("t-1").done());
        assertEquals("plan", jobs.take("t-2"));
        assertFalse(jobs.has("t-2"));
        jobs.await(clock.get()); // a deadline already reached does not wait
        slow.complete("late");
        jobs.retainOnly(id -> !id.equals("t-1"));
        assertFalse(jobs.has("t-1"), "a killed topology's answer is dropped");
    }

    @Test
    void plannerCallsCountFailuresAndSlowAnswersAndSkipWhileTheBreakerIsOpen() throws PlanFault {
        CircuitBreaker breaker = new CircuitBreaker(2, Duration.ofSeconds(5), Duration.ofSeconds(60), clock::get);
        PlannerCalls calls = new PlannerCalls(null, breaker, 100, clock::get);

        assertThrows(PlanFault.class, () -> calls.ask(() -> {
            throw PlanFault.plannerRefused("a refusal of this request");
        }, true));
        assertTrue(calls.allowsCall(), "a refusal is not the planner failing");
        assertEquals("slow", calls.ask(() -> {
            clock.addAndGet(500);
            return "slow";
        }, true), "a slow answer is still used");
        assertThrows(PlanFault.class, () -> calls.ask(() -> {
            throw PlanFault.plannerFailed("down");
        }, true));
        assertFalse(calls.allowsCall(), "a slow answer and a failure: the breaker opens at 2");
        PlanFault skipped = assertThrows(PlanFault.class, () -> calls.ask(() -> "never asked", true));
        assertTrue(skipped.plannerUnavailable());
        clock.addAndGet(5_000);
        assertEquals("ok", calls.ask(() -> "ok", true));
        assertTrue(calls.allowsCall(), "a plan answer closes it again");
    }

    @Test
    void tenancyReplacesAndEvictsOnlyTheTopologiesNimbusRuns() throws PlanFault {
        TopologyDetails running = topology("mt-linear-1", linear(1, 1), 1, 2,
                Map.of("topology.message.timeout.secs", 45));
        TopologyDetails squeezed = topology("mt-star-1", linear(1, 1), 1, 2, Map.of());
        Cluster cluster = cluster(supervisors(supervisor("sup-1", "host-1", "small", null, 4)),
                new Topologies(running, squeezed), Map.of());
        Plan plan = new Plan("p-new", "fast", List.of(), Map.of(), 10.0,
                List.of(new Plan.Replaced("mt-linear", "p-9", 17.93, 20.33), new Plan.Replaced("gone", "p-8", 1, 2)),
                List.of(new Plan.Evicted("mt-star", "its minimum does not fit")));

        Tenancy.Actions actions = Tenancy.beside("mt-diamond", plan, cluster, 0);

        assertEquals(List.of(new Tenancy.Replacement("mt-linear-1", "mt-linear", "p-9", 45,
                "planned again beside mt-diamond: plan p-9, 17.93 -> 20.33 tuples/s",
                "planned again beside mt-diamond at 00:00:00 UTC (plan p-9, 17.93 -> 20.33 tuples/s): re-placing it "
                        + "drained (rebalanced after 45 s)")), actions.replacements());
        assertEquals(List.of(new Tenancy.Eviction("mt-star-1", "its minimum does not fit", "not admitted beside mt-diamond at 00:00:00 UTC (its "
                + "minimum does not fit): evicted, its slots freed; the next round asks again")), actions.evictions());
        assertEquals("; re-placing mt-linear (plan p-9, 17.93 -> 20.33 tuples/s) beside it; evicted mt-star (not "
                + "admitted beside it)", actions.newcomerStatus());
        assertEquals("", Tenancy.beside("x", new Plan("p", "fast", List.of()), cluster, 0).newcomerStatus());
    }

    @Test
    void upgradesReplaceOnlyForEnoughGainAndNotTwiceWithinTheInterval() throws IOException {
        try (FakePlanner planner = new FakePlanner(call -> call.path().equals("/v1/evaluations")
                ? FakePlanner.Answer.raw(200, "{\"input_rate\": 5.0}")
                : FakePlanner.planning("p-up", (component, index, machines) -> machines.get(0)).answer(call))) {
            CircuitBreaker breaker = new CircuitBreaker(3, Duration.ofSeconds(5), Duration.ofSeconds(60), clock::get);
            PlannerClient client = new PlannerClient(URI.create(planner.url().toString()), Duration.ofSeconds(30),
                    PlannerToken.inline(null), FakePlanner.JSON);
            Upgrades upgrades = new Upgrades(new PlannerCalls(client, breaker, 60_000, clock::get), FakePlanner.JSON,
                    new ReplanSettings(0.10, Duration.ofSeconds(600)), clock::get);
            TopologyDetails linear = topology("linear-1", linear(1, 1), 1, 2, Map.of(TopologySettings.PROFILES, "lab"));
            Topologies topologies = new Topologies(linear);
            Cluster cluster = cluster(supervisors(supervisor("sup-1", "small-1", "host-1", "small", null, 4)), linear);
            TopologySettings wanted = settingsOf(linear);
            List<Machine> machines = Machine.usableBy(cluster, "linear-1",
                    SchedulerSettings.fromConf(Map.of()), wanted);

            upgrades.start("linear-1", graphOf(linear), machines, wanted, Map.of(), TenantSettings.fromConf(Map.of()),
                    List.of("large-1"), Runnable::run);
            List<Upgrades.Outcome> first = upgrades.answered(topologies);
            assertEquals(1, first.size());
            assertEquals(new Upgrades.Rebalance("linear", "p-up", 30,
                    "machine joined: plan p-up predicts 10.00 tuples/s against 5.00 now (+100.0%)"), first.get(0).rebalance());
            assertTrue(first.get(0).status().startsWith("supervisor large-1 joined at "), first.get(0).status());
            assertTrue(upgrades.answered(topologies).isEmpty(), "each answer once");

            clock.addAndGet(60_000);
            upgrades.start("linear-1", graphOf(linear), machines, wanted, Map.of(), TenantSettings.fromConf(Map.of()),
                    List.of("large-2"), Runnable::run);
            Upgrades.Outcome second = upgrades.answered(topologies).get(0);
            assertNull(second.rebalance(), "re-placed a minute ago");
            assertTrue(second.status().endsWith("(600 s): kept as it runs"), second.status());
        } catch (PlanFault fault) {
            throw new AssertionError(fault.reason());
        }
    }

    private static TopologySettings settingsOf(TopologyDetails topology) throws PlanFault {
        return TopologySettings.fromConf(topology.getConf());
    }

    private static TopologyGraph graphOf(TopologyDetails topology) throws PlanFault {
        return TopologyGraph.of(topology);
    }

    @Test
    void profileWaitsStartNoVersionReadBeforeTheInterval() {
        ProfileWaits waits = new ProfileWaits();
        waits.waitFor("t", new ProfileWaits.Wait("lab", null, Set.of("small"), "cause", 0));
        assertFalse(waits.versionReadDue("t", ProfileWaits.VERSION_CHECK_MS - 1));
        waits.versionReadStarted("t", CompletableFuture.completedFuture(1L), ProfileWaits.VERSION_CHECK_MS);
        assertEquals("profile set lab is now stored (version 1)", waits.changed("t", Set.of("small")));
    }

    @Test
    void refusalsAreKeptUntilThePlannerAnswersOtherwise() {
        Refusals refusals = new Refusals();
        PlanFault down = PlanFault.plannerFailed("planner unreachable");
        refusals.answered("t-1", PlanFault.notAdmitted("no room"), 60_000);

        assertEquals("not admitted at 00:01:00 UTC (no room); the planner is unavailable (planner unreachable), so it "
                + "stays unscheduled until the planner answers", refusals.whileUnavailable("t-1", down));
        assertEquals("not admitted at 00:01:00 UTC (no room); the planner is unavailable (planner skipped: open), so it "
                + "stays unscheduled until the planner answers",
                refusals.whileUnavailable("t-1", PlanFault.plannerSkipped("planner skipped: open")));
        assertNull(refusals.whileUnavailable("t-1", PlanFault.planDoesNotFit("no free slot")),
                "only the planner's unavailability keeps it so");
        assertNull(refusals.whileUnavailable("t-2", down), "never refused: falls back as before");

        refusals.answered("t-1", down, 120_000);
        assertEquals(new Refusals.Refusal(60_000, "no room"), refusals.get("t-1"), "no answer: still refused");
        refusals.answered("t-1", PlanFault.plannerRefused("HTTP 422"), 120_000);
        assertNull(refusals.get("t-1"), "the planner answered otherwise");
        refusals.refused("t-1", 0, "evicted");
        refusals.answered("t-1", null, 120_000);
        assertNull(refusals.get("t-1"), "admitted: placed by plan");
        refusals.refused("t-1", 0, "evicted");
        refusals.retainOnly(id -> false);
        assertNull(refusals.get("t-1"), "gone");
    }

    @Test
    void fallbacksDecideByTheFaultAndRememberOnlyWhatIsPlannedAgain() {
        Fallbacks even = new Fallbacks(SchedulerSettings.Fallback.EVEN);
        Fallbacks none = new Fallbacks(SchedulerSettings.Fallback.NONE);
        PlanFault down = PlanFault.plannerFailed("planner unreachable");
        ProfileWaits.Wait wait = new ProfileWaits.Wait("lab", 2L, Set.of("small"), "profile set lab has no profile", 0);

        assertEquals(new Fallbacks.Even("planner unreachable", true, true, null), even.decide(down, true, null).even());
        assertFalse(even.decide(down, false, null).even().retry(), "hetsched.replan.after.fallback: false");
        assertFalse(even.decide(PlanFault.plannerRefused("HTTP 422"), true, null).even().retry(), "a refusal is final");
        assertEquals("planner not used (planner unreachable); left unscheduled (hetsched.fallback: none), the next "
                + "round asks again", none.decide(down, true, null).status());
        assertEquals("not admitted (no room); left unscheduled, the next round asks again",
                even.decide(PlanFault.notAdmitted("no room"), true, null).status());
        assertEquals(wait, none.decide(PlanFault.profilesMissing("HTTP 422", ProfileGap.unknown()), true, wait)
                .even().profileWait(), "its own profiles: placed evenly whatever hetsched.fallback says");

        String status = even.placedEvenly("t-1", even.decide(down, true, null).even(), "scheduled evenly", 0);
        assertEquals("planner not used (planner unreachable); scheduled evenly at 00:00:00 UTC; planned again once the "
                + "planner answers (hetsched.replan.after.fallback)", status);
        assertEquals(new Fallbacks.FellBack(0, "planner unreachable"), even.get("t-1"));
        even.placedEvenly("t-1", even.decide(down, true, null).even(), "scheduled evenly", 60_000);
        assertEquals(0, even.get("t-1").atMillis(), "placed evenly since the first time");
        assertEquals("the topology asks for no planner; scheduled evenly", even.placedEvenly("t-2",
                new Fallbacks.Even("the topology asks for no planner", false, false, null), "scheduled evenly", 0));
        assertEquals(List.of("t-1"), even.ids());
        even.retainOnly(id -> false);
        assertFalse(even.contains("t-1"));
    }
}
