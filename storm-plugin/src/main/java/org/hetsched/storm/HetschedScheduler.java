package org.hetsched.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SchedulerAssignment;
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
 * DefaultScheduler would. A topology placed evenly because the planner was unavailable is re-placed by plan
 * once the planner answers (unless its conf sets {@code hetsched.replan.after.fallback: false}). A topology placed
 * by plan that lost executors (a machine or worker died) keeps the executors still running and has the lost ones
 * placed by a repair plan; after a supervisor joins, a topology running by plan is planned again and re-placed by
 * Nimbus's rebalance when the predicted gain reaches {@code hetsched.replan.min.gain}, at most once per
 * {@code hetsched.replan.min.interval.secs}. A plan bound to the topology ({@code /v1/assignments}) is placed first.
 *
 * <p>Nimbus holds its scheduling lock during {@code schedule()}, so the planner is never asked on
 * Nimbus's thread: each round starts a background request per topology that needs a plan (one per
 * topology, {@code hetsched.planner.concurrency} at most), waits for answers no longer than
 * {@code hetsched.round.budget.ms}, and applies the answers that have come, checked against the
 * cluster as it is then. A topology whose request is still under way waits, unassigned, for a later round.
 */
public class HetschedScheduler implements IScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);
    private static final String STATUS = "hetsched: ";
    private static final DateTimeFormatter CLOCK_TIME = DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneOffset.UTC);

    private final LongSupplier nowMillis;
    private final ObjectMapper json = new ObjectMapper();
    /** Requests under way or answered but not yet applied, by topology id; written by Nimbus's thread only. */
    private final Map<String, PlanJob> jobs = new ConcurrentHashMap<>();
    /** Topologies placed evenly because the planner was unavailable, planned again in the background. */
    private final Map<String, FellBack> fellBack = new HashMap<>();
    private Executor executor;
    private ExecutorService ownExecutor;
    private SchedulerSettings settings;
    private PlannerClient planner;
    private CircuitBreaker breaker;
    private ReplanSettings replanSettings;
    private ReturnedPorts returnedPorts;
    private Rebalancer rebalancer;
    /** Supervisor ids of the last round (null before the first): a new id is a machine that joined or returned. */
    private Map<String, String> seenSupervisors;
    /** Supervisor ids gone since they were last seen, with their machine names (for statuses). */
    private final Map<String, String> lostSupervisors = new HashMap<>();
    /** Background requests for a better plan after a machine joined, by topology id. */
    private final Map<String, UpgradeJob> upgrades = new ConcurrentHashMap<>();
    /** When each topology was last re-placed onto a better plan (plugin clock, ms). */
    private final Map<String, Long> lastReplaced = new HashMap<>();
    private AliveHeartbeat heartbeat;
    /** Topologies placed evenly because their own profiles cannot plan them, asked for again only after a change. */
    private final ProfileWaits profileWaits = new ProfileWaits();

    public HetschedScheduler() {
        this(System::currentTimeMillis, null);
    }

    /**
     * For tests: a clock in milliseconds (the breaker, the round budget, slow answers and statuses read it) and
     * where planner requests run ({@code Runnable::run} runs them within the round; null: the plugin's own threads).
     */
    HetschedScheduler(LongSupplier nowMillis, Executor executor) {
        this(nowMillis, executor, null);
    }

    /** For tests: also how Nimbus is asked to rebalance (null: Nimbus's own Thrift service). */
    HetschedScheduler(LongSupplier nowMillis, Executor executor, Rebalancer rebalancer) {
        this.nowMillis = nowMillis;
        this.executor = executor;
        this.rebalancer = rebalancer;
    }

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
        settings = SchedulerSettings.fromConf(conf);
        replanSettings = SchedulerSettings.replanSettings(conf);
        returnedPorts = new ReturnedPorts(SchedulerSettings.returnedPortsSettle(conf));
        if (rebalancer == null) {
            rebalancer = Rebalancer.nimbus(conf);
        }
        breaker = new CircuitBreaker(settings.breakerFailures(), settings.breakerBackoff(),
                settings.breakerMaxBackoff(), nowMillis);
        if (executor == null) {
            ownExecutor = plannerThreads(settings.plannerConcurrency());
            executor = ownExecutor;
        }
        if (settings.hasPlanner()) {
            planner = new PlannerClient(settings.plannerUrl(), settings.timeout(), settings.plannerToken(), json);
            heartbeat = new AliveHeartbeat(planner, nowMillis);
            LOG.info("hetsched: planner at {} (timeout {} ms, fallback {}, machine type from scheduler meta '{}', {})",
                    settings.plannerUrl(), settings.timeout().toMillis(), settings.fallback(), settings.machineTypeKey(),
                    tokenSource(settings));
            checkTokenNow(settings);
        } else {
            LOG.warn("hetsched: {} is not set in storm.yaml; every topology is scheduled evenly",
                    SchedulerSettings.PLANNER_URL);
        }
    }

    /** Daemon threads, as many as requests may be in flight; the round never queues more than that. */
    private static ExecutorService plannerThreads(int count) {
        AtomicInteger number = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(count, count, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                task -> {
                    Thread thread = new Thread(task, "hetsched-planner-" + number.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        pool.allowCoreThreadTimeOut(true);
        return pool;
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
        long deadline = nowMillis.getAsLong() + settings.roundBudget().toMillis();
        forgetGone(topologies);
        List<String> joined = noticeSupervisors(cluster);
        checkProfileWaits(topologies, cluster);
        List<TopologyDetails> waiting = new ArrayList<>(cluster.needsSchedulingTopologies());
        waiting.sort(Comparator.comparing(TopologyDetails::getId));
        Map<TopologyDetails, Fallback> evenWithReason = new LinkedHashMap<>();
        List<TopologyDetails> planned = new ArrayList<>();
        for (TopologyDetails topology : waiting) {
            if (!TopologySettings.asksForPlanner(topology.getConf())) {
                evenWithReason.put(topology, new Fallback("the topology asks for no planner (no "
                        + TopologySettings.PROFILES + " in its conf)", false, false, null));
            } else if (!cluster.getUnassignedExecutors(topology).isEmpty()) {
                ProfileWaits.Wait wait = profileWaits.get(topology.getId());
                if (wait != null && lostSomeOnly(topology, cluster, wait)) { // asking would get the same answer
                    evenWithReason.put(topology, new Fallback(wait.cause(), true, false, wait));
                } else {
                    if (wait != null) { // rebalanced (hetsched tune, replan) or given another set: asked, placed whole
                        profileWaits.forget(topology.getId());
                        fellBack.put(topology.getId(), new FellBack(wait.sinceMillis(), wait.cause()));
                    }
                    planned.add(topology);
                }
            } // else placed whole already: the plan, not topology.workers, decides its worker count
        }
        List<TopologyDetails> replanned = fellBack.keySet().stream().sorted().map(topologies::getById)
                .filter(t -> t != null && cluster.getUnassignedExecutors(t).isEmpty()).toList();

        Set<String> answered = new HashSet<>();
        applyAnswers(planned, replanned, cluster, deadline, evenWithReason, answered);
        for (TopologyDetails topology : planned) {
            if (!answered.contains(topology.getId())) {
                startPlanning(topology, cluster, deadline, evenWithReason);
            }
        }
        for (TopologyDetails topology : replanned) {
            if (!answered.contains(topology.getId())) {
                startReplanning(topology, cluster, deadline);
            }
        }
        awaitAnswers(deadline);
        applyAnswers(planned, replanned, cluster, deadline, evenWithReason, answered);

        EvenScheduling.schedule(cluster, evenWithReason.keySet());
        evenWithReason.forEach((topology, fallback) -> placedEvenly(topology, cluster, fallback));

        if (!joined.isEmpty()) {
            for (TopologyDetails topology : topologies.getTopologies()) {
                if (!answered.contains(topology.getId()) && !evenWithReason.containsKey(topology)) {
                    startUpgrade(topology, cluster, joined);
                }
            }
        }
        applyUpgrades(topologies, cluster);
        returnedPorts.seen(cluster);
        if (heartbeat != null) {
            heartbeat.send(topologies);
        }
    }

    @Override
    public Map<String, Object> config() {
        return Collections.emptyMap();
    }

    @Override
    public void cleanup() {
        if (ownExecutor != null) {
            ownExecutor.shutdownNow();
        }
        if (heartbeat != null) {
            heartbeat.stop();
        }
    }

    /**
     * Why a topology is placed evenly: {@code plannerTopology} when it asked for the planner, {@code retry} when it is
     * planned again once the planner answers.
     */
    private record Fallback(String reason, boolean plannerTopology, boolean retry, ProfileWaits.Wait profileWait) {
    }

    /** A topology placed evenly because the planner was unavailable, planned again in the background. */
    private record FellBack(long atMillis, String reason) {
    }

    /** One background request for a topology's plan, and when it was started (the plugin's clock, ms). */
    private record PlanJob(CompletableFuture<PlanAnswer> answer, long startedMillis) {
    }

    /** Where a plan came from: asked afresh (or the conf's stored plan), bound to the topology, or a repair. */
    private enum Source { PLANNED, BOUND, REPAIR }

    /** What a background request came back with: a plan, or the fault that kept it from one. */
    private record PlanAnswer(Plan plan, PlanFault fault, Map<String, Double> baseLoad, long millis, Source source) {
    }

    /**
     * The inputs of a background request: a snapshot of the topology and cluster as this round sees them;
     * {@code kept}: component, instance index, machine of the executors that still run (a repair when not empty).
     */
    private record PlanInputs(String topologyId, String topologyName, TopologySettings wanted, TopologyGraph graph,
                              List<Machine> machines, Set<String> knownSupervisors,
                              Map<String, Map<Integer, String>> kept, TenantSettings tenant) {
    }

    /** A background request for a better plan after machines joined. */
    private record UpgradeJob(CompletableFuture<UpgradeAnswer> answer, long startedMillis, List<String> joined) {
    }

    /** The new plan and the predicted input rate of the placement running now (tuples/s), or the fault. */
    private record UpgradeAnswer(Plan plan, double currentRate, PlanFault fault) {
    }

    /** Drops what is kept for topologies Nimbus no longer lists (killed); their answers are not needed. */
    private void forgetGone(Topologies topologies) {
        jobs.keySet().removeIf(id -> topologies.getById(id) == null);
        fellBack.keySet().removeIf(id -> topologies.getById(id) == null);
        upgrades.keySet().removeIf(id -> topologies.getById(id) == null);
        lastReplaced.keySet().removeIf(id -> topologies.getById(id) == null);
        profileWaits.retainOnly(id -> topologies.getById(id) != null);
    }

    /**
     * For each topology waiting for profiles: asks again (as after a fallback: in the background, re-placed by plan
     * when one comes) once its profile set has a new version or the machine types changed; otherwise reads the set's
     * version in the background, at most every {@link ProfileWaits#VERSION_CHECK_MS}.
     */
    private void checkProfileWaits(Topologies topologies, Cluster cluster) {
        if (planner == null) {
            return;
        }
        Set<String> types = Machine.typesOf(cluster, settings);
        for (String id : profileWaits.topologyIds()) {
            TopologyDetails topology = topologies.getById(id);
            if (topology == null || !cluster.getUnassignedExecutors(topology).isEmpty() || jobs.containsKey(id)
                    || !replanAllowed(topology)) {
                continue;
            }
            ProfileWaits.Wait wait = profileWaits.get(id);
            String change = profileWaits.changed(id, types);
            if (change != null) {
                LOG.info("hetsched: topology {} is planned again: {}", id, change);
                profileWaits.forget(id);
                fellBack.put(id, new FellBack(wait.sinceMillis(), wait.cause()));
                continue;
            }
            long now = nowMillis.getAsLong();
            if (profileWaits.versionReadDue(id, now) && breaker.allowsCall()) {
                try {
                    profileWaits.versionReadStarted(id, CompletableFuture.supplyAsync(() -> {
                        try {
                            return ask(() -> planner.fetchProfileSet(wait.profileSet()), false).version();
                        } catch (PlanFault fault) {
                            LOG.debug("hetsched: reading profile set {} failed: {}", wait.profileSet(), fault.reason());
                            throw new java.util.concurrent.CompletionException(fault);
                        }
                    }, executor), now);
                } catch (RejectedExecutionException e) {
                    LOG.debug("hetsched: the planner threads refused reading profile set {}", wait.profileSet());
                }
            }
        }
    }

    /** Starts a request for a topology that needs placing, unless one is under way; falls back where none can be. */
    private void startPlanning(TopologyDetails topology, Cluster cluster, long deadline,
                               Map<TopologyDetails, Fallback> evenWithReason) {
        if (jobs.containsKey(topology.getId())) {
            return;
        }
        try {
            if (planner == null) {
                throw PlanFault.topologyConf(SchedulerSettings.PLANNER_URL + " is not set in Nimbus's storm.yaml");
            }
            TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
            if (wanted.profiles() == null && wanted.planId() == null) {
                throw PlanFault.topologyConf(TopologySettings.PROFILES + " is empty");
            }
            if (!breaker.allowsCall()) {
                throw PlanFault.plannerSkipped(breaker.whyOpen());
            }
            if (nowMillis.getAsLong() > deadline) {
                leaveWaiting(topology, cluster, "this round's " + SchedulerSettings.ROUND_BUDGET_MS + " ("
                        + settings.roundBudget().toMillis() + " ms) is used up; the next round asks the planner");
                return;
            }
            if (inFlight() >= settings.plannerConcurrency()) {
                leaveWaiting(topology, cluster, inFlight() + " planner requests in flight (" + SchedulerSettings.PLANNER_CONCURRENCY
                        + "); a later round asks the planner");
                return;
            }
            // a topology running evenly after a fallback is placed whole by plan; one placed by plan is repaired
            start(topology, cluster, wanted, !fellBack.containsKey(topology.getId()));
        } catch (PlanFault fault) {
            fallBack(topology, cluster, fault, evenWithReason);
        }
    }

    /** Asks again for a topology placed evenly after a planner fault, when the breaker lets a call through. */
    private void startReplanning(TopologyDetails topology, Cluster cluster, long deadline) {
        if (jobs.containsKey(topology.getId()) || !breaker.allowsCall() || inFlight() >= settings.plannerConcurrency()
                || nowMillis.getAsLong() > deadline) {
            return;
        }
        try {
            start(topology, cluster, TopologySettings.fromConf(topology.getConf()), false);
        } catch (PlanFault fault) {
            fellBack.remove(topology.getId());
        }
    }

    /** {@code repair}: executors that still run stay where they are; only the others are placed. */
    private void start(TopologyDetails topology, Cluster cluster, TopologySettings wanted, boolean repair)
            throws PlanFault {
        List<Machine> machines = usableMachines(cluster, topology.getId(), wanted);
        if (machines.isEmpty()) {
            throw PlanFault.planDoesNotFit("no supervisor has a free worker slot");
        }
        TopologyGraph graph = TopologyGraph.of(topology);
        Map<String, Map<Integer, String>> kept = new TreeMap<>();
        if (repair) {
            machinesByInstance(cluster, topology.getId(), graph, machines).forEach((component, names) -> {
                for (int i = 0; i < names.size(); i++) {
                    if (names.get(i) != null) {
                        kept.computeIfAbsent(component, k -> new TreeMap<>()).put(i, names.get(i));
                    }
                }
            });
        }
        PlanInputs inputs = new PlanInputs(topology.getId(), topology.getName(), wanted, graph, machines,
                supervisorNames(cluster, settings.machineIdKey()), kept,
                TenantSettings.fromConf(topology.getConf()));
        CompletableFuture<PlanAnswer> answer;
        try {
            answer = CompletableFuture.supplyAsync(() -> plan(inputs), executor);
        } catch (RejectedExecutionException e) {
            throw PlanFault.plannerFailed("the plugin's planner threads refused the request: " + e.getMessage());
        }
        jobs.put(topology.getId(), new PlanJob(answer, nowMillis.getAsLong()));
    }

    private int inFlight() {
        return (int) jobs.values().stream().filter(job -> !job.answer().isDone()).count();
    }

    /** Waits, at most until the round's deadline, for the requests under way (fast answers are applied this round). */
    private void awaitAnswers(long deadline) {
        CompletableFuture<?>[] pending = jobs.values().stream().map(PlanJob::answer)
                .filter(answer -> !answer.isDone()).toArray(CompletableFuture[]::new);
        long left = deadline - nowMillis.getAsLong();
        if (pending.length == 0 || left <= 0) {
            return;
        }
        try {
            CompletableFuture.allOf(pending).get(left, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            // the rest is applied in a later round
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Applies the answers that have come (before new requests are started, so earlier answers are not crowded out). */
    private void applyAnswers(List<TopologyDetails> planned, List<TopologyDetails> replanned, Cluster cluster,
                              long deadline, Map<TopologyDetails, Fallback> evenWithReason, Set<String> answered) {
        for (TopologyDetails topology : planned) {
            if (!evenWithReason.containsKey(topology) && applyAnswer(topology, cluster, deadline, evenWithReason)) {
                answered.add(topology.getId());
            }
        }
        for (TopologyDetails topology : replanned) {
            if (applyReplan(topology, cluster, deadline)) {
                answered.add(topology.getId());
            }
        }
    }

    /** The answer for a topology that needs placing, once there is one: placed by plan, or fallen back. */
    private boolean applyAnswer(TopologyDetails topology, Cluster cluster, long deadline,
                                Map<TopologyDetails, Fallback> evenWithReason) {
        PlanJob job = jobs.get(topology.getId());
        if (job == null) {
            return false;
        }
        if (!job.answer().isDone() || nowMillis.getAsLong() > deadline && job.answer().join().plan() != null) {
            leaveWaiting(topology, cluster, "asked the planner at " + clockTime(job.startedMillis())
                    + "; placed when the plan arrives");
            return false;
        }
        jobs.remove(topology.getId());
        PlanAnswer answer = job.answer().join();
        try {
            if (answer.fault() != null) {
                throw answer.fault();
            }
            String status = answer.source() == Source.REPAIR ? placeRepair(topology, cluster, answer)
                    : placeByPlan(topology, cluster, answer);
            fellBack.remove(topology.getId());
            cluster.setStatus(topology.getId(), STATUS + status);
        } catch (PlanFault fault) {
            fallBack(topology, cluster, fault, evenWithReason);
        } catch (RuntimeException e) {
            LOG.warn("hetsched: placing topology {} by plan failed unexpectedly", topology.getId(), e);
            cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
            fallBack(topology, cluster, PlanFault.planDoesNotFit("placing the plan failed: " + e), evenWithReason);
        }
        return true;
    }

    /** The answer for a topology running evenly after a planner fault: re-placed by plan, or left as it runs. */
    private boolean applyReplan(TopologyDetails topology, Cluster cluster, long deadline) {
        PlanJob job = jobs.get(topology.getId());
        FellBack fell = fellBack.get(topology.getId());
        if (job == null || fell == null || !job.answer().isDone() || nowMillis.getAsLong() > deadline) {
            return false;
        }
        jobs.remove(topology.getId());
        PlanAnswer answer = job.answer().join();
        String evenly = "placed evenly at " + clockTime(fell.atMillis()) + ": " + fell.reason();
        if (answer.fault() != null && answer.fault().plannerUnavailable()) {
            LOG.debug("hetsched: topology {} still runs evenly; asking the planner again failed: {}",
                    topology.getId(), answer.fault().reason());
            return true;
        }
        Map<WorkerSlot, List<ExecutorDetails>> before = workersOf(cluster, topology.getId());
        try {
            if (answer.fault() != null) {
                throw answer.fault();
            }
            String placed = placeByPlan(topology, cluster, answer);
            fellBack.remove(topology.getId());
            String status = evenly + "; planned at " + clockTime(nowMillis.getAsLong()) + " "
                    + placed.substring("placed by planner ".length());
            cluster.setStatus(topology.getId(), STATUS + status);
            LOG.info("hetsched: topology {} re-placed by plan after running evenly (its workers restart)", topology.getId());
        } catch (PlanFault | RuntimeException e) {
            String reason = e instanceof PlanFault fault ? fault.reason() : e.toString();
            cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
            before.forEach((slot, executors) -> cluster.assign(slot, topology.getId(), executors));
            fellBack.remove(topology.getId());
            if (e instanceof PlanFault fault && fault.profileGap() != null) {
                ProfileWaits.Wait wait = profileWait(topology, cluster, fault.profileGap());
                wait = new ProfileWaits.Wait(wait.profileSet(), wait.version(), wait.machineTypes(), wait.cause(),
                        fell.atMillis());
                profileWaits.waitFor(topology.getId(), wait);
                cluster.setStatus(topology.getId(), STATUS + waitingStatus(topology, cluster, wait));
                LOG.info("hetsched: topology {} keeps its even placement: {}", topology.getId(), wait.cause());
                return true;
            }
            cluster.setStatus(topology.getId(), STATUS + evenly + "; not planned again: " + reason);
            LOG.warn("hetsched: topology {} keeps its even placement; its plan cannot be used: {}", topology.getId(), reason);
        }
        return true;
    }

    /** Frees the topology's slots and assigns it by plan if the plan fits the cluster as it is now; returns its status. */
    private String placeByPlan(TopologyDetails topology, Cluster cluster, PlanAnswer answer) throws PlanFault {
        TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
        TopologyGraph graph = TopologyGraph.of(topology);
        List<Machine> machines = usableMachines(cluster, topology.getId(), wanted);
        Plan plan = answer.plan();
        PlanPlacement.Result placement = PlanPlacement.place(plan, graph, machines,
                supervisorNames(cluster, settings.machineIdKey()), wanted.maxExecutorsPerWorker());

        cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
        for (Map.Entry<WorkerSlot, List<ExecutorDetails>> worker : placement.workers().entrySet()) {
            cluster.assign(worker.getKey(), topology.getId(), worker.getValue());
        }

        boolean stored = wanted.planId() != null && wanted.planId().equals(plan.id());
        String planName = plan.id() == null ? "unstored plan"
                : (answer.source() == Source.BOUND ? "bound plan " : stored ? "stored plan " : "plan ") + plan.id();
        String strategy = plan.strategy() == null ? "" : ", strategy " + plan.strategy();
        String status = "placed by planner (" + planName + strategy + ") on " + placement.supervisors()
                + " supervisors in " + placement.workers().size() + " workers";
        LOG.info("hetsched: topology {} {}; {} executors, asking the planner took {} ms{}",
                topology.getId(), status, graph.executorCount(), answer.millis(),
                answer.baseLoad().isEmpty() ? "" : ", planned on 100% less the machine base load " + answer.baseLoad());
        if (answer.source() == Source.PLANNED && !plan.replaced().isEmpty()) {
            status += replaceBeside(topology.getName(), plan.replaced(), cluster);
        }
        if (answer.source() == Source.PLANNED && !plan.evicted().isEmpty()) {
            status += evictBeside(topology.getName(), plan.evicted(), cluster);
        }
        return status;
    }

    /**
     * The running topologies the newcomer leaves without their minimum (released from the planner's ledger): their
     * slots are freed in this round, as Storm's RAS evicts; each later round asks the planner to admit them again.
     */
    private String evictBeside(String newcomer, List<Plan.Evicted> evicted, Cluster cluster) {
        List<String> said = new ArrayList<>();
        for (Plan.Evicted e : evicted) {
            TopologyDetails running = cluster.getTopologies().getByName(e.topology());
            if (running == null) {
                continue;
            }
            cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(running.getId())));
            String outcome = "not admitted beside " + newcomer + " at " + clockTime(nowMillis.getAsLong()) + " ("
                    + e.reason() + "): evicted, its slots freed; the next round asks again";
            cluster.setStatus(running.getId(), STATUS + outcome);
            LOG.info("hetsched: topology {}: {}", running.getId(), outcome);
            said.add(e.topology());
        }
        return said.isEmpty() ? "" : "; evicted " + String.join(", ", said) + " (not admitted beside it)";
    }

    /**
     * The running topologies the planner planned again beside a newcomer (bound to their new plans): each re-placed
     * drained by Nimbus's rebalance, on a plugin thread; returns what the newcomer's status says of them.
     */
    private String replaceBeside(String newcomer, List<Plan.Replaced> replaced, Cluster cluster) {
        List<String> said = new ArrayList<>();
        for (Plan.Replaced r : replaced) {
            TopologyDetails running = cluster.getTopologies().getByName(r.topology());
            String figures = String.format(java.util.Locale.ROOT, "plan %s, %.2f -> %.2f tuples/s", r.planId(),
                    r.rateBefore(), r.rateAfter());
            if (running == null) {
                LOG.info("hetsched: the planner planned {} again beside {} ({}), but it does not run here", r.topology(),
                        newcomer, figures);
                continue;
            }
            int wait = messageTimeoutSecs(running.getConf());
            String outcome = "planned again beside " + newcomer + " at " + clockTime(nowMillis.getAsLong()) + " (" + figures
                    + "): re-placing it drained (rebalanced after " + wait + " s)";
            lastReplaced.put(running.getId(), nowMillis.getAsLong());
            rebalanceLater(r.topology(), r.planId(), wait, "planned again beside " + newcomer + ": " + figures);
            cluster.setStatus(running.getId(), STATUS + outcome);
            LOG.info("hetsched: topology {}: {}", running.getId(), outcome);
            said.add(r.topology() + " (" + figures + ")");
        }
        return said.isEmpty() ? "" : "; re-placing " + String.join(", ", said) + " beside it";
    }

    /**
     * The background request (a planner thread, never Nimbus's): the stored plan where it fits the snapshot, else
     * a new plan. Never throws: every failure is the answer's fault.
     */
    private PlanAnswer plan(PlanInputs in) {
        long started = nowMillis.getAsLong();
        TopologySettings wanted = in.wanted();
        try {
            if (!in.kept().isEmpty()) {
                if (wanted.profiles() == null) {
                    throw PlanFault.topologyConf("a repair needs " + TopologySettings.PROFILES + " in the topology's conf");
                }
                Map<String, Double> baseLoad = ask(() -> planner.fetchBaseLoad(wanted.profiles()), false);
                Plan repair = ask(() -> planner.requestRepair(
                        PlanRequests.repair(json, in.graph(), in.machines(), wanted, baseLoad, in.kept())), true);
                return new PlanAnswer(repair, null, baseLoad, nowMillis.getAsLong() - started, Source.REPAIR);
            }
            String bound = boundPlanId(in.topologyName());
            if (bound != null) {
                try {
                    Plan plan = ask(() -> planner.fetchPlan(bound), true);
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
                    Plan stored = ask(() -> planner.fetchPlan(wanted.planId()), true);
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
            PlannerClient.ProfileSetInfo set = ask(() -> planner.fetchProfileSet(wanted.profiles()), false);
            Map<String, Double> baseLoad = set.baseLoad();
            Plan plan;
            try {
                plan = ask(() -> planner.requestPlan(
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
     * The plan bound to the topology ({@code PUT /v1/assignments/{name}}, e.g. by {@code hetsched replan}), or null.
     * A failure here is not the planner's last word: the plan calls that follow say what is wrong.
     */
    private String boundPlanId(String topologyName) {
        if (topologyName == null || !breaker.allowsCall()) {
            return null;
        }
        try {
            return planner.fetchBoundPlanId(topologyName);
        } catch (PlanFault fault) {
            LOG.debug("hetsched: reading the plan bound to {} failed: {}", topologyName, fault.reason());
            return null;
        }
    }

    /**
     * Places the executors a topology lost where the repair plan says, each executor still running left in its
     * worker; returns the status.
     */
    private String placeRepair(TopologyDetails topology, Cluster cluster, PlanAnswer answer) throws PlanFault {
        TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
        List<Machine> machines = usableMachines(cluster, topology.getId(), wanted);
        SchedulerAssignment assignment = cluster.getAssignmentById(topology.getId());
        Set<ExecutorDetails> running = assignment == null ? Set.of() : new HashSet<>(assignment.getExecutors());
        Map<String, List<Integer>> freePorts = new HashMap<>();
        for (SupervisorDetails supervisor : cluster.getSupervisors().values()) {
            freePorts.put(supervisor.getId(), cluster.getAvailablePorts(supervisor).stream().sorted().toList());
        }
        RepairPlacement.Result result = RepairPlacement.place(answer.plan(), TopologyGraph.of(topology), running,
                machines, freePorts);
        result.workers().forEach((slot, executors) -> cluster.assign(slot, topology.getId(), executors));
        String gone = lostSupervisors.isEmpty() ? "" : " (gone: " + String.join(", ", new TreeSet<>(lostSupervisors.values())) + ")";
        String status = "repaired at " + clockTime(nowMillis.getAsLong()) + " after losing executors" + gone + ": kept "
                + result.kept() + " executors where they run, placed " + result.placed() + " by repair plan "
                + answer.plan().id() + " on " + String.join(", ", result.machines());
        LOG.info("hetsched: topology {} {}; asking the planner took {} ms", topology.getId(), status, answer.millis());
        return status;
    }

    /** Component -> the machine name of each instance (executors in task order); null where not assigned. */
    private static Map<String, List<String>> machinesByInstance(Cluster cluster, String topologyId, TopologyGraph graph,
                                                                List<Machine> machines) {
        Map<String, String> nameOf = new HashMap<>();
        machines.forEach(m -> nameOf.put(m.id(), m.name()));
        SchedulerAssignment assignment = cluster.getAssignmentById(topologyId);
        Map<ExecutorDetails, WorkerSlot> slots = assignment == null ? Map.of() : assignment.getExecutorToSlot();
        Map<String, List<String>> found = new TreeMap<>();
        for (TopologyGraph.Component component : graph.components()) {
            List<String> names = new ArrayList<>();
            for (ExecutorDetails executor : component.executors()) {
                WorkerSlot slot = slots.get(executor);
                names.add(slot == null ? null : nameOf.getOrDefault(slot.getNodeId(), slot.getNodeId()));
            }
            found.put(component.id(), names);
        }
        return found;
    }

    /**
     * The supervisors that joined (or returned) since the last round, by machine name; none in the first round.
     * A supervisor Nimbus blacklists (Storm wraps every scheduler in its BlacklistScheduler, which keeps a
     * supervisor that missed heartbeats out for {@code blacklist.scheduler.resume.time.secs}) counts as gone
     * until Nimbus offers it again: only then can a plan use it.
     */
    private List<String> noticeSupervisors(Cluster cluster) {
        Map<String, String> now = new TreeMap<>();
        cluster.getSupervisors().values().stream()
                .filter(s -> !cluster.isBlackListed(s.getId()))
                .forEach(s -> now.put(s.getId(), machineName(s)));
        List<String> joined = new ArrayList<>();
        if (seenSupervisors != null) {
            seenSupervisors.forEach((id, name) -> {
                if (!now.containsKey(id) && !lostSupervisors.containsKey(id)) {
                    LOG.warn("hetsched: supervisor {} ({}) is gone (or blacklisted by Nimbus); executors that ran "
                            + "there are placed again, the others stay where they run", id, name);
                    lostSupervisors.put(id, name);
                    returnedPorts.lost(id);
                }
            });
            now.forEach((id, name) -> {
                if (!seenSupervisors.containsKey(id)) {
                    LOG.info("hetsched: supervisor {} ({}) joined; topologies running by plan are planned again on "
                            + "the larger cluster", id, name);
                    joined.add(name);
                    returnedPorts.returned(id, nowMillis.getAsLong());
                }
            });
        }
        lostSupervisors.keySet().removeAll(now.keySet());
        seenSupervisors = now;
        return joined;
    }

    /** The machines a topology may use, a returned supervisor's ports of the time it was lost last. */
    private List<Machine> usableMachines(Cluster cluster, String topologyId, TopologySettings wanted) {
        return returnedPorts.lastIn(Machine.usableBy(cluster, topologyId, settings, wanted), nowMillis.getAsLong());
    }

    private String machineName(SupervisorDetails supervisor) {
        if (supervisor.getSchedulerMeta() instanceof Map<?, ?> meta && meta.get(settings.machineIdKey()) != null) {
            return meta.get(settings.machineIdKey()).toString().trim();
        }
        return supervisor.getId();
    }

    /** Asks, in the background, for a plan on the larger cluster and the predicted rate of the placement running now. */
    private void startUpgrade(TopologyDetails topology, Cluster cluster, List<String> joined) {
        String id = topology.getId();
        SchedulerAssignment assignment = cluster.getAssignmentById(id);
        if (planner == null || !TopologySettings.asksForPlanner(topology.getConf()) || assignment == null
                || !cluster.getUnassignedExecutors(topology).isEmpty() || fellBack.containsKey(id)
                || profileWaits.isWaiting(id) || jobs.containsKey(id) || upgrades.containsKey(id) || !breaker.allowsCall()) {
            return;
        }
        try {
            TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
            if (wanted.profiles() == null) {
                return;
            }
            List<Machine> machines = usableMachines(cluster, id, wanted);
            TopologyGraph graph = TopologyGraph.of(topology);
            Map<String, List<String>> running = machinesByInstance(cluster, id, graph, machines);
            TenantSettings tenant = TenantSettings.fromConf(topology.getConf());
            CompletableFuture<UpgradeAnswer> answer = CompletableFuture.supplyAsync(
                    () -> upgrade(graph, machines, wanted, running, tenant), executor);
            upgrades.put(id, new UpgradeJob(answer, nowMillis.getAsLong(), List.copyOf(joined)));
        } catch (PlanFault | RejectedExecutionException e) {
            LOG.info("hetsched: topology {} is not planned again after supervisors joined: {}", id, e.getMessage());
        }
    }

    private UpgradeAnswer upgrade(TopologyGraph graph, List<Machine> machines, TopologySettings wanted,
                                  Map<String, List<String>> running, TenantSettings tenant) {
        try {
            Map<String, Double> baseLoad = ask(() -> planner.fetchBaseLoad(wanted.profiles()), false);
            double now = ask(() -> planner.evaluate(
                    PlanRequests.evaluation(json, graph, machines, wanted, baseLoad, running)), false);
            com.fasterxml.jackson.databind.node.ObjectNode request = PlanRequests.build(json, graph, machines, wanted, baseLoad, tenant);
            request.remove("plan_id");
            Plan plan = ask(() -> planner.requestPlan(request), true);
            return new UpgradeAnswer(plan, now, null);
        } catch (PlanFault fault) {
            return new UpgradeAnswer(null, Double.NaN, fault);
        } catch (RuntimeException e) {
            return new UpgradeAnswer(null, Double.NaN, PlanFault.plannerFailed("asking the planner failed unexpectedly: " + e));
        }
    }

    /**
     * Applies the answers about joined machines: a re-placement onto the new plan when its predicted gain reaches
     * {@code hetsched.replan.min.gain} and the topology was not re-placed within {@code hetsched.replan.min.interval.secs}.
     */
    private void applyUpgrades(Topologies topologies, Cluster cluster) {
        for (String id : new ArrayList<>(upgrades.keySet())) {
            UpgradeJob job = upgrades.get(id);
            TopologyDetails topology = topologies.getById(id);
            if (job == null || !job.answer().isDone() || topology == null) {
                continue;
            }
            upgrades.remove(id);
            UpgradeAnswer answer = job.answer().join();
            String joined = "supervisor" + (job.joined().size() > 1 ? "s " : " ") + String.join(", ", job.joined())
                    + " joined at " + clockTime(job.startedMillis()) + ": ";
            if (answer.fault() != null) {
                LOG.warn("hetsched: topology {} keeps its placement; no plan for the larger cluster: {}", id,
                        answer.fault().reason());
                cluster.setStatus(id, STATUS + joined + "no plan for the larger cluster (" + answer.fault().reason()
                        + "); kept as it runs");
                continue;
            }
            Plan plan = answer.plan();
            double gain = answer.currentRate() > 0 ? plan.inputRate() / answer.currentRate() - 1
                    : (plan.inputRate() > 0 ? Double.POSITIVE_INFINITY : 0);
            String figures = String.format(java.util.Locale.ROOT, "plan %s predicts %.2f tuples/s against %.2f now (%+.1f%%)",
                    plan.id(), plan.inputRate(), answer.currentRate(), gain * 100);
            long now = nowMillis.getAsLong();
            Long last = lastReplaced.get(id);
            String outcome;
            if (!(gain >= replanSettings.minGain())) {
                outcome = figures + ", below " + SchedulerSettings.REPLAN_MIN_GAIN + " ("
                        + Math.round(replanSettings.minGain() * 100) + "%): kept as it runs";
            } else if (last != null && now - last < replanSettings.minInterval().toMillis()) {
                outcome = figures + ", but it was re-placed at " + clockTime(last) + ", within "
                        + SchedulerSettings.REPLAN_MIN_INTERVAL_SECS + " (" + replanSettings.minInterval().toSeconds()
                        + " s): kept as it runs";
            } else if (plan.id() == null) {
                outcome = figures + ", but the plan is not stored, so it cannot be bound: kept as it runs";
            } else {
                int wait = messageTimeoutSecs(topology.getConf());
                outcome = figures + ": re-placing it drained (plan bound, rebalanced after " + wait + " s)";
                lastReplaced.put(id, now);
                rebalanceLater(topology.getName(), plan.id(), wait, "machine joined: " + figures);
            }
            LOG.info("hetsched: topology {}: {}{}", id, joined, outcome);
            cluster.setStatus(id, STATUS + joined + outcome);
        }
    }

    /** Binds the plan and asks Nimbus to rebalance, on a plugin thread: Nimbus's rebalance needs its scheduling lock. */
    private void rebalanceLater(String topologyName, String planId, int waitSecs, String reason) {
        Runnable rebalance = () -> {
            try {
                planner.bind(topologyName, planId, "hetsched plugin, " + reason);
                rebalancer.rebalance(topologyName, waitSecs);
            } catch (Exception e) {
                LOG.warn("hetsched: re-placing topology {} onto plan {} failed: {}", topologyName, planId, e.toString());
            }
        };
        try {
            CompletableFuture.runAsync(rebalance, executor);
        } catch (RejectedExecutionException e) {
            LOG.warn("hetsched: re-placing topology {} was refused by the plugin's threads: {}", topologyName, e.getMessage());
        }
    }

    /** {@code topology.message.timeout.secs}: how long the rebalance keeps the topology deactivated to drain. */
    private static int messageTimeoutSecs(Map<String, Object> conf) {
        Object value = conf.get("topology.message.timeout.secs");
        try {
            return value == null ? 30 : Math.max(0, value instanceof Number n ? n.intValue()
                    : (int) Double.parseDouble(value.toString().trim()));
        } catch (NumberFormatException e) {
            return 30;
        }
    }

    /**
     * One planner call, unless the circuit breaker is open. Its failures, and answers slower than
     * {@code hetsched.planner.slow.ms}, go to the breaker as failures; other answers close the breaker only for the
     * plan calls ({@code answerCloses}), so a planner that serves reads but fails every plan still trips it.
     */
    private <T> T ask(PlannerCall<T> call, boolean answerCloses) throws PlanFault {
        if (!breaker.allowsCall()) {
            throw PlanFault.plannerSkipped(breaker.whyOpen());
        }
        long started = nowMillis.getAsLong();
        try {
            T answer = call.run();
            recordAnswer(nowMillis.getAsLong() - started, answerCloses);
            return answer;
        } catch (PlanFault fault) {
            if (fault.countsAgainstPlanner()) {
                breaker.recordFailure();
            } else {
                recordAnswer(nowMillis.getAsLong() - started, answerCloses);
            }
            throw fault;
        }
    }

    private void recordAnswer(long millis, boolean answerCloses) {
        if (millis > settings.slowAnswer().toMillis()) {
            LOG.warn("hetsched: the planner took {} ms to answer, over {} ({} ms): counted as a failure",
                    millis, SchedulerSettings.PLANNER_SLOW_MS, settings.slowAnswer().toMillis());
            breaker.recordFailure();
        } else if (answerCloses) {
            breaker.recordSuccess();
        }
    }

    @FunctionalInterface
    private interface PlannerCall<T> {
        T run() throws PlanFault;
    }

    private void leaveWaiting(TopologyDetails topology, Cluster cluster, String why) {
        cluster.setStatus(topology.getId(), STATUS + "waiting for its plan: " + why);
    }

    private void fallBack(TopologyDetails topology, Cluster cluster, PlanFault fault,
                          Map<TopologyDetails, Fallback> evenWithReason) {
        String reason = fault.reason();
        if (fault.profileGap() != null) { // whatever hetsched.fallback says: no later round can plan it as it is
            ProfileWaits.Wait wait = profileWait(topology, cluster, fault.profileGap());
            LOG.warn("hetsched: topology {} is placed evenly: {} ({}); it is planned again once its profile set or "
                    + "the machine types change", topology.getId(), wait.cause(), reason);
            evenWithReason.put(topology, new Fallback(wait.cause(), true, false, wait));
            return;
        }
        if (fault.notAdmitted()) {
            LOG.warn("hetsched: topology {} left unscheduled: {}", topology.getId(), reason);
            cluster.setStatus(topology.getId(), STATUS + "not admitted (" + reason + "); left unscheduled, the next "
                    + "round asks again");
            return;
        }
        if (settings.fallback() == SchedulerSettings.Fallback.EVEN) {
            LOG.warn("hetsched: topology {} falls back to even scheduling: {}", topology.getId(), reason);
            boolean retry = fault.plannerUnavailable() && replanAllowed(topology);
            evenWithReason.put(topology, new Fallback(reason, true, retry, null));
        } else {
            LOG.warn("hetsched: topology {} left unscheduled ({}: none): {}",
                    topology.getId(), SchedulerSettings.FALLBACK, reason);
            cluster.setStatus(topology.getId(), STATUS + "planner not used (" + reason + "); left unscheduled ("
                    + SchedulerSettings.FALLBACK + ": none), the next round asks again");
        }
    }

    private static boolean replanAllowed(TopologyDetails topology) {
        try {
            return TopologySettings.fromConf(topology.getConf()).replanAfterFallback();
        } catch (PlanFault fault) {
            return false;
        }
    }

    /**
     * A topology waiting for profiles that lost some executors (a worker or machine died) with its set unchanged: placed
     * evenly again without asking. One whose every executor waits (Nimbus's rebalance, e.g. by {@code hetsched tune},
     * which may have bound a plan) or whose conf names another set is asked for.
     */
    private static boolean lostSomeOnly(TopologyDetails topology, Cluster cluster, ProfileWaits.Wait wait) {
        SchedulerAssignment assignment = cluster.getAssignmentById(topology.getId());
        Object set = topology.getConf().get(TopologySettings.PROFILES);
        return assignment != null && !assignment.getExecutors().isEmpty()
                && set != null && wait.profileSet().equals(set.toString().trim());
    }

    /** What a topology refused for its own profiles waits for, and the sentence that says why. */
    private ProfileWaits.Wait profileWait(TopologyDetails topology, Cluster cluster, ProfileGap gap) {
        Map<String, String> keys = new TreeMap<>();
        String set = "?";
        try {
            TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
            set = wanted.profiles();
            for (TopologyGraph.Component component : TopologyGraph.of(topology).components()) {
                if (!component.id().startsWith(TopologyGraph.SYSTEM_PREFIX)) {
                    keys.put(component.id(), wanted.componentProfiles().getOrDefault(component.id(), component.id()));
                }
            }
        } catch (PlanFault fault) {
            // the planner read the same conf to answer; the cause is named without the components then
        }
        return new ProfileWaits.Wait(set, gap.version(), Machine.typesOf(cluster, settings),
                gap.cause(set, settings.plannerUrl().toString(), keys), nowMillis.getAsLong());
    }

    /** The status of a topology placed evenly for its own profiles: the cause, since when, and what to do. */
    private String waitingStatus(TopologyDetails topology, Cluster cluster, ProfileWaits.Wait wait) {
        String status = wait.cause() + "; " + evenOutcome(topology, cluster) + " at " + clockTime(wait.sinceMillis())
                + ". To plan it, profile it live: hetsched tune " + topology.getName() + " --store DIR --explore (its "
                + "workers' records flow from this placement), or store the missing profiles in set " + wait.profileSet();
        return status + (replanAllowed(topology)
                ? "; planned again once profile set " + wait.profileSet() + " or the machine types change"
                : "; kept evenly (" + TopologySettings.REPLAN_AFTER_FALLBACK + ": false)");
    }

    private void placedEvenly(TopologyDetails topology, Cluster cluster, Fallback fallback) {
        if (fallback.profileWait() != null) {
            if (profileWaits.get(topology.getId()) != fallback.profileWait()) {
                profileWaits.waitFor(topology.getId(), fallback.profileWait());
            }
            fellBack.remove(topology.getId());
            cluster.setStatus(topology.getId(), STATUS + waitingStatus(topology, cluster, fallback.profileWait()));
            return;
        }
        String status = fallback.plannerTopology() ? "planner not used (" + fallback.reason() + "); " : fallback.reason() + "; ";
        status += evenOutcome(topology, cluster);
        if (!fallback.retry()) {
            fellBack.remove(topology.getId());
        } else {
            long now = nowMillis.getAsLong();
            fellBack.putIfAbsent(topology.getId(), new FellBack(now, fallback.reason()));
            status += " at " + clockTime(now) + "; planned again once the planner answers ("
                    + TopologySettings.REPLAN_AFTER_FALLBACK + ")";
        }
        cluster.setStatus(topology.getId(), STATUS + status);
    }

    private static Map<WorkerSlot, List<ExecutorDetails>> workersOf(Cluster cluster, String topologyId) {
        Map<WorkerSlot, List<ExecutorDetails>> workers = new HashMap<>();
        SchedulerAssignment assignment = cluster.getAssignmentById(topologyId);
        if (assignment != null) {
            assignment.getExecutorToSlot().forEach((executor, slot) ->
                    workers.computeIfAbsent(slot, k -> new ArrayList<>()).add(executor));
        }
        return workers;
    }

    /** A time of the plugin's clock as the statuses show it: HH:mm:ss UTC. */
    static String clockTime(long millis) {
        return CLOCK_TIME.format(Instant.ofEpochMilli(millis)) + " UTC";
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
