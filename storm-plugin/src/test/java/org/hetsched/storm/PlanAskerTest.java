package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.TopologyDetails;
import org.hetsched.storm.PlanAsker.PlanAnswer;
import org.hetsched.storm.PlanAsker.PlanInputs;
import org.hetsched.storm.PlanAsker.Source;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One topology's request to the planner on its own: which plan it comes back with, and from where. */
class PlanAskerTest {
    private final AtomicLong clock = new AtomicLong(1_000_000);
    private final Map<String, ObjectNode> stored = new ConcurrentHashMap<>();
    private FakePlanner planner;
    private PlanAsker asker;
    private TopologyDetails linear;
    private TopologyGraph graph;
    private List<Machine> machines;

    @BeforeEach
    void start() throws IOException, PlanFault {
        planner = new FakePlanner(call -> {
            FakePlanner.Answer read = FakePlanner.storedPlanRead(call, stored);
            return read != null ? read : FakePlanner.planning("p-new", HetschedSchedulerTest.HIGH_ON_FAST).answer(call);
        });
        PlannerClient client = new PlannerClient(URI.create(planner.url().toString()), Duration.ofSeconds(30),
                PlannerToken.inline(null), FakePlanner.JSON);
        CircuitBreaker breaker = new CircuitBreaker(3, Duration.ofSeconds(5), Duration.ofSeconds(60), clock::get);
        asker = new PlanAsker(new PlannerCalls(client, breaker, 60_000, clock::get), FakePlanner.JSON, clock::get);
        linear = topology("linear-1", linear(2, 3), 1, 2, Map.of(TopologySettings.PROFILES, "lab",
                TopologySettings.PLAN_ID, "p-stored"));
        Cluster cluster = cluster(byId(supervisor("sup-small-1", "host-1", "small", null, 4),
                supervisor("sup-fast-1", "host-2", "fast", 4, 4)), linear);
        graph = TopologyGraph.of(linear);
        machines = Machine.usableBy(cluster, "linear-1", SchedulerSettings.fromConf(Map.of()), wanted());
    }

    @AfterEach
    void stop() {
        planner.close();
    }

    private TopologySettings wanted() throws PlanFault {
        return TopologySettings.fromConf(linear.getConf());
    }

    private PlanInputs inputs(Map<String, Map<Integer, String>> kept) throws PlanFault {
        return new PlanInputs("linear-1", "linear", wanted(), graph, machines, Set.of("sup-small-1", "sup-fast-1"), kept,
                TenantSettings.fromConf(Map.of()));
    }

    private ObjectNode planNamed(String id) throws PlanFault {
        return FakePlanner.planFor(PlanRequests.build(FakePlanner.JSON, graph, machines, wanted(), Map.of()), id,
                HetschedSchedulerTest.HIGH_ON_FAST, true);
    }

    private List<String> paths() {
        return planner.calls().stream().map(c -> c.method() + " " + c.path()).toList();
    }

    @Test
    void aBoundPlanThatFitsComesFirst() throws PlanFault {
        stored.put("p-bound", planNamed("p-bound"));
        stored.put("p-stored", planNamed("p-stored"));
        planner.bind("linear", "p-bound");

        PlanAnswer answer = asker.ask(inputs(Map.of()));

        assertEquals("p-bound", answer.plan().id());
        assertEquals(Source.BOUND, answer.source());
        assertEquals(List.of("GET /v1/plans/p-bound"), paths());
    }

    @Test
    void theStoredPlanWhereItFitsElseANewPlan() throws PlanFault {
        stored.put("p-stored", planNamed("p-stored"));
        assertEquals("p-stored", asker.ask(inputs(Map.of())).plan().id());

        stored.clear();
        PlanAnswer fresh = asker.ask(inputs(Map.of()));
        assertEquals("p-new", fresh.plan().id());
        assertEquals(Source.PLANNED, fresh.source());
        assertEquals(List.of("GET /v1/plans/p-stored", "GET /v1/plans/p-stored", "POST /v1/plans"), paths());
        assertEquals(1, planner.profileReads().size(), "the set's base load read before the new plan");
    }

    @Test
    void aProfileGapCarriesTheVersionReadBeforeThePlanRequest() throws PlanFault {
        planner.answerProfileReadsWith(call -> FakePlanner.Answer.json(200,
                FakePlanner.profileSetWithBaseLoad("lab", null).put("version", 7)));
        planner.answerWith(call -> call.method().equals("GET") ? FakePlanner.Answer.raw(404, "{}")
                : FakePlanner.Answer.raw(422, "{\"detail\": \"no profile for highCompute on machine type fast "
                + "(component high)\", \"error\": \"profile_missing\", \"missing\": [{\"component\": \"high\", "
                + "\"profile\": \"highCompute\", \"machine_type\": \"fast\"}]}"));

        PlanAnswer answer = asker.ask(inputs(Map.of()));

        assertNull(answer.plan());
        ProfileGap gap = answer.fault().profileGap();
        assertEquals(new ProfileGap(false, List.of(new ProfileGap.Pair("high", "highCompute", "fast")), 7L), gap);
    }

    @Test
    void executorsStillRunningMakeItARepair() throws PlanFault {
        planner.answerWith(call -> FakePlanner.Answer.json(201, planNamedQuietly("p-repair")));

        PlanAnswer answer = asker.ask(inputs(Map.of("high", Map.of(0, "sup-fast-1"))));

        assertEquals(Source.REPAIR, answer.source());
        assertEquals(List.of("POST /v1/repairs"), paths());
        assertTrue(planner.calls().get(0).body().has("keep"), planner.calls().get(0).body().toString());
    }

    private ObjectNode planNamedQuietly(String id) {
        try {
            return planNamed(id);
        } catch (PlanFault fault) {
            throw new IllegalStateException(fault);
        }
    }
}
