package org.hetsched.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The hetsched Nimbus scheduler: places a topology's executors where the planning service says,
 * and falls back to Storm's even scheduling whenever the planner cannot place it.
 *
 * <p>Enable in Nimbus's storm.yaml with {@code storm.scheduler: "org.hetsched.storm.HetschedScheduler"}
 * and {@code hetsched.planner.url}. A topology asks for the planner with {@code hetsched.profiles}
 * (or a stored {@code hetsched.plan.id}) in its conf; every other topology is scheduled as Storm's
 * DefaultScheduler would. Topologies that are already placed are never touched.
 */
public class HetschedScheduler implements IScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);
    private static final String STATUS = "hetsched: ";

    private final LongSupplier nowMillis;
    private final ObjectMapper json = new ObjectMapper();
    private SchedulerSettings settings;
    private PlannerClient planner;
    private CircuitBreaker breaker;

    public HetschedScheduler() {
        this(System::currentTimeMillis);
    }

    /** For tests: a clock the circuit breaker reads, in milliseconds. */
    HetschedScheduler(LongSupplier nowMillis) {
        this.nowMillis = nowMillis;
    }

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
        settings = SchedulerSettings.fromConf(conf);
        breaker = new CircuitBreaker(settings.breakerFailures(), settings.breakerBackoff(),
                settings.breakerMaxBackoff(), nowMillis);
        if (settings.hasPlanner()) {
            planner = new PlannerClient(settings.plannerUrl(), settings.timeout(), settings.plannerToken(), json);
            LOG.info("hetsched: planner at {} (timeout {} ms, fallback {}, machine type from scheduler meta '{}', {})",
                    settings.plannerUrl(), settings.timeout().toMillis(), settings.fallback(), settings.machineTypeKey(),
                    tokenSource(settings));
            checkTokenNow(settings);
        } else {
            LOG.warn("hetsched: {} is not set in storm.yaml; every topology is scheduled evenly",
                    SchedulerSettings.PLANNER_URL);
        }
    }

    private static String tokenSource(SchedulerSettings settings) {
        if (settings.tokenFile() != null) {
            return "token from " + settings.tokenFile();
        }
        return settings.token() != null ? "token from storm.yaml" : "no token";
    }

    /** Says at start what is wrong with the token, so the operator need not wait for the first topology. */
    private static void checkTokenNow(SchedulerSettings settings) {
        if (settings.token() != null) {
            LOG.warn("hetsched: {} is deprecated: Storm shows Nimbus's storm.yaml to anyone who can reach Nimbus "
                    + "(getNimbusConf, the Storm UI's Nimbus Configuration); put the token in a file readable by the "
                    + "Nimbus user only and name it with {}", SchedulerSettings.PLANNER_TOKEN, SchedulerSettings.PLANNER_TOKEN_FILE);
        }
        try {
            settings.plannerToken().get();
        } catch (PlanFault fault) {
            LOG.warn("hetsched: {}; planner topologies fall back until it is fixed", fault.reason());
        }
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        List<TopologyDetails> waiting = new ArrayList<>(cluster.needsSchedulingTopologies());
        waiting.sort(Comparator.comparing(TopologyDetails::getId));
        Map<TopologyDetails, String> evenWithReason = new LinkedHashMap<>();
        for (TopologyDetails topology : waiting) {
            if (!TopologySettings.asksForPlanner(topology.getConf())) {
                evenWithReason.put(topology, "the topology asks for no planner (no "
                        + TopologySettings.PROFILES + " in its conf)");
                continue;
            }
            if (cluster.getUnassignedExecutors(topology).isEmpty()) {
                continue; // placed whole already: the plan, not topology.workers, decides its worker count
            }
            try {
                placeByPlanner(topology, cluster);
            } catch (PlanFault fault) {
                fallBack(topology, cluster, fault.reason(), evenWithReason);
            } catch (RuntimeException e) {
                LOG.warn("hetsched: placing topology {} by plan failed unexpectedly", topology.getId(), e);
                cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
                fallBack(topology, cluster, "placing the plan failed: " + e, evenWithReason);
            }
        }
        EvenScheduling.schedule(cluster, evenWithReason.keySet());
        evenWithReason.forEach((topology, reason) -> cluster.setStatus(topology.getId(),
                STATUS + reason + "; " + evenOutcome(topology, cluster)));
    }

    @Override
    public Map<String, Object> config() {
        return Collections.emptyMap();
    }

    private void placeByPlanner(TopologyDetails topology, Cluster cluster) throws PlanFault {
        TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
        if (planner == null) {
            throw PlanFault.topologyConf(SchedulerSettings.PLANNER_URL + " is not set in Nimbus's storm.yaml");
        }
        if (wanted.profiles() == null && wanted.planId() == null) {
            throw PlanFault.topologyConf(TopologySettings.PROFILES + " is empty");
        }
        TopologyGraph graph = TopologyGraph.of(topology);
        List<Machine> machines = Machine.usableBy(cluster, topology.getId(), settings, wanted);
        if (machines.isEmpty()) {
            throw PlanFault.planDoesNotFit("no supervisor has a free worker slot");
        }
        Set<String> knownSupervisors = supervisorNames(cluster, settings.machineIdKey());
        long started = System.nanoTime();
        Plan plan = null;
        PlanPlacement.Result placement = null;
        if (wanted.planId() != null) {
            try {
                plan = ask(() -> planner.fetchPlan(wanted.planId()), true);
                placement = PlanPlacement.place(plan, graph, machines, knownSupervisors, wanted.maxExecutorsPerWorker());
            } catch (PlanFault fault) {
                if (wanted.profiles() == null || fault.countsAgainstPlanner()) {
                    throw fault;
                }
                LOG.info("hetsched: topology {}: stored plan {} not used ({}); asking for a new plan",
                        topology.getId(), wanted.planId(), fault.reason());
            }
        }
        Map<String, Double> baseLoad = Map.of();
        if (placement == null) {
            baseLoad = ask(() -> planner.fetchBaseLoad(wanted.profiles()), false);
            Map<String, Double> reserved = baseLoad;
            plan = ask(() -> planner.requestPlan(PlanRequests.build(json, graph, machines, wanted, reserved)), true);
            placement = PlanPlacement.place(plan, graph, machines, knownSupervisors, wanted.maxExecutorsPerWorker());
        }
        long plannerMillis = (System.nanoTime() - started) / 1_000_000;

        cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
        for (Map.Entry<WorkerSlot, List<ExecutorDetails>> worker : placement.workers().entrySet()) {
            cluster.assign(worker.getKey(), topology.getId(), worker.getValue());
        }

        boolean stored = wanted.planId() != null && wanted.planId().equals(plan.id());
        String planName = plan.id() == null ? "unstored plan" : (stored ? "stored plan " : "plan ") + plan.id();
        String strategy = plan.strategy() == null ? "" : ", strategy " + plan.strategy();
        String status = "placed by planner (" + planName + strategy + ") on " + placement.supervisors()
                + " supervisors in " + placement.workers().size() + " workers";
        cluster.setStatus(topology.getId(), STATUS + status);
        LOG.info("hetsched: topology {} {}; {} executors, asking the planner took {} ms{}",
                topology.getId(), status, graph.executorCount(), plannerMillis,
                baseLoad.isEmpty() ? "" : ", planned on 100% less the machine base load " + baseLoad);
    }

    /**
     * One planner call, unless the circuit breaker is open. Its failures go to the breaker; its answers
     * close the breaker only for the plan calls ({@code answerCloses}), so a planner that serves reads
     * but fails every plan still trips it.
     */
    private <T> T ask(PlannerCall<T> call, boolean answerCloses) throws PlanFault {
        if (!breaker.allowsCall()) {
            throw PlanFault.plannerSkipped(breaker.whyOpen());
        }
        try {
            T answer = call.run();
            if (answerCloses) {
                breaker.recordSuccess();
            }
            return answer;
        } catch (PlanFault fault) {
            if (fault.countsAgainstPlanner()) {
                breaker.recordFailure();
            } else if (answerCloses) {
                breaker.recordSuccess();
            }
            throw fault;
        }
    }

    @FunctionalInterface
    private interface PlannerCall<T> {
        T run() throws PlanFault;
    }

    private void fallBack(TopologyDetails topology, Cluster cluster, String reason,
                          Map<TopologyDetails, String> evenWithReason) {
        if (settings.fallback() == SchedulerSettings.Fallback.EVEN) {
            LOG.warn("hetsched: topology {} falls back to even scheduling: {}", topology.getId(), reason);
            evenWithReason.put(topology, "planner not used (" + reason + ")");
        } else {
            LOG.warn("hetsched: topology {} left unscheduled ({}: none): {}",
                    topology.getId(), SchedulerSettings.FALLBACK, reason);
            cluster.setStatus(topology.getId(), STATUS + "planner not used (" + reason + "); left unscheduled ("
                    + SchedulerSettings.FALLBACK + ": none), the next round asks again");
        }
    }

    private static String evenOutcome(TopologyDetails topology, Cluster cluster) {
        int waiting = cluster.getUnassignedExecutors(topology).size();
        String outcome = "scheduled evenly by Storm's DefaultScheduler";
        return waiting == 0 ? outcome
                : outcome + ", " + waiting + " of " + topology.getExecutors().size()
                        + " executors wait for free worker slots";
    }

    private static Set<String> supervisorNames(Cluster cluster, String machineIdKey) {
        Set<String> names = new HashSet<>();
        for (SupervisorDetails supervisor : cluster.getSupervisors().values()) {
            names.add(supervisor.getId());
            if (supervisor.getHost() != null) {
                names.add(supervisor.getHost());
            }
            if (supervisor.getSchedulerMeta() instanceof Map<?, ?> meta && meta.get(machineIdKey) != null) {
                names.add(meta.get(machineIdKey).toString().trim());
            }
        }
        return names;
    }
}
