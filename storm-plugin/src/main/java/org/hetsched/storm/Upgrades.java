package org.hetsched.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Re-planning after machines join: for a topology running by plan, a background request for a plan on the larger
 * cluster and the predicted rate of the placement it runs in; it is re-placed (plan bound, Nimbus's rebalance) only
 * when the gain reaches {@code hetsched.replan.min.gain} and it was not re-placed within
 * {@code hetsched.replan.min.interval.secs}.
 */
final class Upgrades {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);

    /** Nimbus's rebalance of a topology onto a stored plan, drained for {@code waitSecs}. */
    record Rebalance(String topologyName, String planId, int waitSecs, String reason) {
    }

    /** What an answered request comes to: the topology's new status, and the re-placement to make, if any. */
    record Outcome(String topologyId, String status, Rebalance rebalance) {
    }

    private record Answer(Plan plan, double currentRate, PlanFault fault) {
    }

    private record Job(CompletableFuture<Answer> answer, long startedMillis, List<String> joined) {
    }

    private final PlannerCalls calls;
    private final ObjectMapper json;
    private final ReplanSettings settings;
    private final LongSupplier nowMillis;
    private final Map<String, Job> jobs = new ConcurrentHashMap<>();
    /** When each topology was last re-placed onto a better plan (plugin clock, ms). */
    private final Map<String, Long> lastReplaced = new HashMap<>();

    Upgrades(PlannerCalls calls, ObjectMapper json, ReplanSettings settings, LongSupplier nowMillis) {
        this.calls = calls;
        this.json = json;
        this.settings = settings;
        this.nowMillis = nowMillis;
    }

    boolean has(String topologyId) {
        return jobs.containsKey(topologyId);
    }

    /** A topology re-placed now (here, or beside a newcomer): the next re-placement waits the minimum interval. */
    void replaced(String topologyId, long atMillis) {
        lastReplaced.put(topologyId, atMillis);
    }

    void retainOnly(Predicate<String> running) {
        jobs.keySet().removeIf(id -> !running.test(id));
        lastReplaced.keySet().removeIf(id -> !running.test(id));
    }

    /** Starts the background request for the topology's plan on the larger cluster ({@code joined}: machine names). */
    void start(String topologyId, TopologyGraph graph, List<Machine> machines, TopologySettings wanted,
               Map<String, List<String>> running, TenantSettings tenant, List<String> joined, Executor executor) {
        CompletableFuture<Answer> answer = CompletableFuture.supplyAsync(
                () -> ask(graph, machines, wanted, running, tenant), executor);
        jobs.put(topologyId, new Job(answer, nowMillis.getAsLong(), List.copyOf(joined)));
    }

    private Answer ask(TopologyGraph graph, List<Machine> machines, TopologySettings wanted,
                       Map<String, List<String>> running, TenantSettings tenant) {
        PlannerClient planner = calls.client();
        try {
            Map<String, Double> baseLoad = calls.ask(() -> planner.fetchBaseLoad(wanted.profiles()), false);
            double now = calls.ask(() -> planner.evaluate(
                    PlanRequests.evaluation(json, graph, machines, wanted, baseLoad, running)), false);
            ObjectNode request = PlanRequests.build(json, graph, machines, wanted, baseLoad, tenant);
            request.remove("plan_id");
            Plan plan = calls.ask(() -> planner.requestPlan(request), true);
            return new Answer(plan, now, null);
        } catch (PlanFault fault) {
            return new Answer(null, Double.NaN, fault);
        } catch (RuntimeException e) {
            return new Answer(null, Double.NaN, PlanFault.plannerFailed("asking the planner failed unexpectedly: " + e));
        }
    }

    /** The outcomes of the requests answered by now (of topologies Nimbus still lists), each logged once. */
    List<Outcome> answered(Topologies topologies) {
        List<Outcome> outcomes = new ArrayList<>();
        for (String id : new ArrayList<>(jobs.keySet())) {
            Job job = jobs.get(id);
            TopologyDetails topology = topologies.getById(id);
            if (job == null || !job.answer().isDone() || topology == null) {
                continue;
            }
            jobs.remove(id);
            outcomes.add(outcome(topology, job, job.answer().join()));
        }
        return outcomes;
    }

    private Outcome outcome(TopologyDetails topology, Job job, Answer answer) {
        String id = topology.getId();
        String joined = "supervisor" + (job.joined().size() > 1 ? "s " : " ") + String.join(", ", job.joined())
                + " joined at " + HetschedScheduler.clockTime(job.startedMillis()) + ": ";
        if (answer.fault() != null) {
            LOG.warn("hetsched: topology {} keeps its placement; no plan for the larger cluster: {}", id,
                    answer.fault().reason());
            return new Outcome(id, joined + "no plan for the larger cluster (" + answer.fault().reason()
                    + "); kept as it runs", null);
        }
        Plan plan = answer.plan();
        double gain = answer.currentRate() > 0 ? plan.inputRate() / answer.currentRate() - 1
                : (plan.inputRate() > 0 ? Double.POSITIVE_INFINITY : 0);
        String figures = String.format(Locale.ROOT, "plan %s predicts %.2f tuples/s against %.2f now (%+.1f%%)",
                plan.id(), plan.inputRate(), answer.currentRate(), gain * 100);
        long now = nowMillis.getAsLong();
        Long last = lastReplaced.get(id);
        String outcome;
        Rebalance rebalance = null;
        if (!(gain >= settings.minGain())) {
            outcome = figures + ", below " + SchedulerSettings.REPLAN_MIN_GAIN + " ("
                    + Math.round(settings.minGain() * 100) + "%): kept as it runs";
        } else if (last != null && now - last < settings.minInterval().toMillis()) {
            outcome = figures + ", but it was re-placed at " + HetschedScheduler.clockTime(last) + ", within "
                    + SchedulerSettings.REPLAN_MIN_INTERVAL_SECS + " (" + settings.minInterval().toSeconds()
                    + " s): kept as it runs";
        } else if (plan.id() == null) {
            outcome = figures + ", but the plan is not stored, so it cannot be bound: kept as it runs";
        } else {
            int wait = TopologySettings.messageTimeoutSecs(topology.getConf());
            outcome = figures + ": re-placing it drained (plan bound, rebalanced after " + wait + " s)";
            lastReplaced.put(id, now);
            rebalance = new Rebalance(topology.getName(), plan.id(), wait, "machine joined: " + figures);
        }
        LOG.info("hetsched: topology {}: {}{}", id, joined, outcome);
        return new Outcome(id, joined + outcome, rebalance);
    }
}
