package org.hetsched.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One topology's request to the planner, run on a plugin thread (never Nimbus's): a repair where executors still
 * run; else the plan bound to the topology, else its stored plan, where either fits the snapshot; else a new plan.
 * Never throws: every failure is the answer's fault.
 */
final class PlanAsker {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);

    /** Where a plan came from: asked afresh (or the conf's stored plan), bound to the topology, or a repair. */
    enum Source { PLANNED, BOUND, REPAIR }

    /** What a background request came back with: a plan, or the fault that kept it from one. */
    record PlanAnswer(Plan plan, PlanFault fault, Map<String, Double> baseLoad, long millis, Source source) {
    }

    /**
     * The inputs of a background request: a snapshot of the topology and cluster as this round sees them;
     * {@code kept}: component, instance index, machine of the executors that still run (a repair when not empty).
     */
    record PlanInputs(String topologyId, String topologyName, TopologySettings wanted, TopologyGraph graph,
                      List<Machine> machines, Set<String> knownSupervisors,
                      Map<String, Map<Integer, String>> kept, TenantSettings tenant) {
    }

    private final PlannerCalls calls;
    private final PlannerClient planner;
    private final ObjectMapper json;
    private final LongSupplier nowMillis;

    PlanAsker(PlannerCalls calls, ObjectMapper json, LongSupplier nowMillis) {
        this.calls = calls;
        this.planner = calls.client();
        this.json = json;
        this.nowMillis = nowMillis;
    }

    /** The answer for one snapshot; a profile gap carries the set's version read just before the plan request. */
    PlanAnswer ask(PlanInputs in) {
        long started = nowMillis.getAsLong();
        TopologySettings wanted = in.wanted();
        try {
            if (!in.kept().isEmpty()) {
                if (wanted.profiles() == null) {
                    throw PlanFault.topologyConf("a repair needs " + TopologySettings.PROFILES + " in the topology's conf");
                }
                Map<String, Double> baseLoad = calls.ask(() -> planner.fetchBaseLoad(wanted.profiles()), false);
                Plan repair = calls.ask(() -> planner.requestRepair(
                        PlanRequests.repair(json, in.graph(), in.machines(), wanted, baseLoad, in.kept())), true);
                return new PlanAnswer(repair, null, baseLoad, nowMillis.getAsLong() - started, Source.REPAIR);
            }
            String bound = boundPlanId(in.topologyName());
            if (bound != null) {
                try {
                    Plan plan = calls.ask(() -> planner.fetchPlan(bound), true);
                    PlanPlacement.place(plan, in.graph(), in.machines(), in.knownSupervisors(), wanted.maxExecutorsPerWorker());
                    return new PlanAnswer(plan, null, Map.of(), nowMillis.getAsLong() - started, Source.BOUND);
                } catch (PlanFault fault) {
                    if (fault.countsAgainstPlanner() || fault.plannerUnavailable()) {
                        throw fault;
                    }
                    LOG.info("hetsched: topology {}: the plan {} bound to it is not used ({})",
                            in.topologyId(), bound, fault.reason());
                }
            }
            if (wanted.planId() != null) {
                try {
                    Plan stored = calls.ask(() -> planner.fetchPlan(wanted.planId()), true);
                    withinWorkerBudget(stored, wanted);
                    PlanPlacement.place(stored, in.graph(), in.machines(), in.knownSupervisors(), wanted.maxExecutorsPerWorker());
                    return new PlanAnswer(stored, null, Map.of(), nowMillis.getAsLong() - started, Source.PLANNED);
                } catch (PlanFault fault) {
                    if (wanted.profiles() == null || fault.countsAgainstPlanner() || fault.plannerUnavailable()) {
                        throw fault;
                    }
                    LOG.info("hetsched: topology {}: stored plan {} not used ({}); asking for a new plan",
                            in.topologyId(), wanted.planId(), fault.reason());
                }
            }
            PlannerClient.ProfileSetInfo set = calls.ask(() -> planner.fetchProfileSet(wanted.profiles()), false);
            Map<String, Double> baseLoad = set.baseLoad();
            Plan plan;
            try {
                plan = calls.ask(() -> planner.requestPlan(
                        PlanRequests.build(json, in.graph(), in.machines(), wanted, baseLoad, in.tenant())), true);
            } catch (PlanFault fault) {
                if (fault.profileGap() == null) {
                    throw fault;
                }
                throw PlanFault.profilesMissing(fault.reason(), fault.profileGap().withVersion(set.version()));
            }
            return new PlanAnswer(plan, null, baseLoad, nowMillis.getAsLong() - started, Source.PLANNED);
        } catch (PlanFault fault) {
            return new PlanAnswer(null, fault, Map.of(), nowMillis.getAsLong() - started, Source.PLANNED);
        } catch (RuntimeException e) {
            LOG.warn("hetsched: asking the planner for topology {} failed unexpectedly", in.topologyId(), e);
            return new PlanAnswer(null, PlanFault.plannerFailed("asking the planner failed unexpectedly: " + e),
                    Map.of(), nowMillis.getAsLong() - started, Source.PLANNED);
        }
    }

    /**
     * A stored plan on more machines than the topology's worker budget ({@code hetsched.max.workers}) is not used, so
     * the planner plans it afresh within the budget, as it would not reuse that plan either.
     */
    static void withinWorkerBudget(Plan stored, TopologySettings wanted) throws PlanFault {
        if (wanted.maxWorkers() == null) {
            return;
        }
        long machines = stored.assignments().stream().map(Plan.InstanceAssignment::machine).distinct().count();
        if (machines > wanted.maxWorkers()) {
            throw PlanFault.planDoesNotFit("it uses " + machines + " machines, over " + TopologySettings.MAX_WORKERS
                    + " (" + wanted.maxWorkers() + ")");
        }
    }

    /**
     * The plan bound to the topology ({@code PUT /v1/assignments/{name}}, e.g. by {@code hetsched replan}), or null.
     * A failure here is not the planner's last word: the plan calls that follow say what is wrong.
     */
    private String boundPlanId(String topologyName) {
        if (topologyName == null || !calls.allowsCall()) {
            return null;
        }
        try {
            return planner.fetchBoundPlanId(topologyName);
        } catch (PlanFault fault) {
            LOG.debug("hetsched: reading the plan bound to {} failed: {}", topologyName, fault.reason());
            return null;
        }
    }

}
