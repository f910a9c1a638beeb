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
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.apache.storm.metric.StormMetricsRegistry;
import org.hetsched.storm.PlanAsker.PlanAnswer;
import org.hetsched.storm.PlanAsker.PlanInputs;
import org.hetsched.storm.PlanAsker.Source;
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
 * A topology whose own profile set is missing or lacks its pairs is placed evenly at once and asked for again only
 * when the set or the machine types change. A topology placed by a plan that stores contingencies
 * ({@code options.survive_loss}) is re-placed by the lost machine's contingency without asking the planner, and moved
 * back when that machine returns, as its plan placed it, without a rebalance ({@link ContingencyReturn}). What the
 * plugin does without asking (a contingency applied, a repair placed) it tells the planner afterwards, on a thread of
 * its own, by binding the plan the topology then runs by ({@link PlannerCalls#tell}); a failure there is one line in
 * the log and changes nothing else.
 *
 * <p>The work is done by collaborators that return what to do, each tested on its own: {@link PlannerCalls} (every
 * call through the circuit breaker), {@link PlanAsker} (one topology's request: repair, bound, stored or new plan),
 * {@link PlanJobs} (requests in flight), {@link Fallbacks} (fallback and re-planning after it), {@link ProfileWaits}
 * (topologies waiting for profiles), {@link MachineChanges} (machines joining and leaving), {@link Upgrades}
 * (re-planning after joins), {@link Tenancy} (topologies re-placed or evicted beside a newcomer), {@link Refusals}
 * (topologies not admitted, left unscheduled while the planner is unavailable) and {@link AliveHeartbeat}.
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
    /**
     * How the reason of every plan the plugin binds starts; the service tells the plugin's binds apart by it
     * (planner/events.py, {@code PLUGIN_REASON}): a change here must change both.
     */
    static final String PLUGIN_REASON = "hetsched plugin, ";
    /** Binds that tell the planner what the plugin did, queued at most (more are dropped, each with a line in the log). */
    private static final int NOTICES_QUEUED = 100;
    private static final DateTimeFormatter CLOCK_TIME = DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneOffset.UTC);

    private final LongSupplier nowMillis;
    private final ObjectMapper json = new ObjectMapper();
    /** Requests under way or answered but not yet applied, by topology id; written by Nimbus's thread only. */
    private final PlanJobs<PlanAnswer> jobs;
    /** Fallback, and topologies placed evenly because the planner was unavailable, planned again in the background. */
    private Fallbacks fallbacks;
    private Executor executor;
    private ExecutorService ownExecutor;
    /** Where the binds that tell the planner what the plugin did run: a thread of their own, never before plan requests. */
    private Executor noticeExecutor;
    private ExecutorService ownNoticeExecutor;
    private SchedulerSettings settings;
    private PlannerClient planner;
    /** The planner's calls through the circuit breaker; null without a planner. */
    private PlannerCalls calls;
    /** One topology's request to the planner, run on a plugin thread; null without a planner. */
    private PlanAsker asker;
    private CircuitBreaker breaker;
    private ReplanSettings replanSettings;
    private ReturnedPorts returnedPorts;
    private Rebalancer rebalancer;
    /** Machines joining and leaving since the last round. */
    private MachineChanges machineChanges;
    /** Re-planning, in the background, of topologies running by plan after machines joined. */
    private Upgrades upgrades;
    private AliveHeartbeat heartbeat;
    /** Topologies placed evenly because their own profiles cannot plan them, asked for again only after a change. */
    private final ProfileWaits profileWaits = new ProfileWaits();
    /** The plan each topology runs by, where it stores contingencies: applied in the round a machine is lost. */
    private final Map<String, Plan> contingencyPlans = new HashMap<>();
    /** The contingency each topology runs in, kept until its machine returns: then undone ({@link ContingencyReturn}). */
    private final Map<String, ContingencyReturn.Applied> contingenciesApplied = new HashMap<>();
    /** When each topology was last placed by plan (plugin clock): a ledger refusal asked before that is stale. */
    private final Map<String, Long> placedAtMillis = new HashMap<>();
    /** Topologies the planner last answered "not admitted": left unscheduled, not placed evenly, while it is unavailable. */
    private final Refusals refusals = new Refusals();

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
        this.jobs = new PlanJobs<>(nowMillis);
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
            ownNoticeExecutor = noticeThread();
            noticeExecutor = ownNoticeExecutor;
        } else {
            noticeExecutor = executor; // tests: as the planner requests run
        }
        machineChanges = new MachineChanges(settings.machineIdKey());
        fallbacks = new Fallbacks(settings.fallback());
        if (settings.hasPlanner()) {
            planner = new PlannerClient(settings.plannerUrl(), settings.timeout(), settings.plannerToken(), json);
            calls = new PlannerCalls(planner, breaker, settings.slowAnswer().toMillis(), nowMillis);
            asker = new PlanAsker(calls, json, nowMillis);
            heartbeat = new AliveHeartbeat(planner, nowMillis);
            LOG.info("hetsched: planner at {} (timeout {} ms, fallback {}, machine type from scheduler meta '{}', {})",
                    settings.plannerUrl(), settings.timeout().toMillis(), settings.fallback(), settings.machineTypeKey(),
                    tokenSource(settings));
            checkTokenNow(settings);
        } else {
            LOG.warn("hetsched: {} is not set in storm.yaml; every topology is scheduled evenly",
                    SchedulerSettings.PLANNER_URL);
        }
        upgrades = new Upgrades(calls, json, replanSettings, nowMillis);
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

    /** One daemon thread for the binds that tell the planner what the plugin did; a full queue refuses more. */
    private static ExecutorService noticeThread() {
        ThreadPoolExecutor thread = new ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(NOTICES_QUEUED), task -> {
                    Thread t = new Thread(task, "hetsched-notices");
                    t.setDaemon(true);
                    return t;
                });
        thread.allowCoreThreadTimeOut(true);
        return thread;
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

    /**
     * One Nimbus round: notice machines that came and went, place the answers that have come, ask the planner for
     * what needs placing (in the background), place the answers that come within the round's budget, place evenly
     * what the planner will not, re-plan onto joined machines, and tell the planner which topologies run.
     */
    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        Round round = new Round(nowMillis.getAsLong() + settings.roundBudget().toMillis());
        forgetGone(topologies);
        MachineChanges.Changes changes = noticeMachines(cluster);
        List<String> joined = changes.joinedNames();
        checkProfileWaits(topologies, cluster);
        sortOut(topologies, cluster, round);
        placeAnswered(cluster, round);
        askPlanner(cluster, round);
        jobs.await(round.deadline);
        placeAnswered(cluster, round);
        placeEvenly(cluster, round);
        moveBackAfterReturns(topologies, cluster, changes.joined(), round);
        replanAfterJoins(topologies, cluster, joined, round);
        returnedPorts.seen(cluster);
        if (heartbeat != null) {
            evictRefused(cluster);
            heartbeat.send(topologies);
        }
    }

    /** Frees the slots of the running topologies the last heartbeat's answer says the ledger refuses. */
    private void evictRefused(Cluster cluster) {
        AliveHeartbeat.Refused refused = heartbeat.takeRefused();
        if (refused == null) {
            return;
        }
        Set<String> planning = new HashSet<>();
        cluster.getTopologies().getTopologies().forEach(t -> {
            if (jobs.has(t.getId())) {
                planning.add(t.getId());
            }
        });
        for (Tenancy.Eviction e : Tenancy.refused(refused.topologies(), refused.askedMillis(), cluster, placedAtMillis,
                planning, nowMillis.getAsLong())) {
            evict(e, cluster);
        }
    }

    /** What one round found and decided, topology by topology. */
    private static final class Round {
        final long deadline;
        /** Topologies placed evenly this round, with why. */
        final Map<TopologyDetails, Fallbacks.Even> even = new LinkedHashMap<>();
        /** Planner topologies with executors to place. */
        final List<TopologyDetails> planned = new ArrayList<>();
        /** Topologies running evenly after a planner fault, planned again in the background. */
        List<TopologyDetails> replanned = List.of();
        /** Topologies whose answer was applied this round. */
        final Set<String> answered = new HashSet<>();
        /** Topologies moved back onto a returned machine this round, as their plan placed them: not re-planned. */
        final Set<String> movedBack = new HashSet<>();

        Round(long deadline) {
            this.deadline = deadline;
        }
    }

    /** The supervisors that joined since the last round, by machine name; a lost one's ports are remembered. */
    private MachineChanges.Changes noticeMachines(Cluster cluster) {
        MachineChanges.Changes changes = machineChanges.notice(cluster);
        changes.lost().forEach(supervisor -> returnedPorts.lost(supervisor.id()));
        changes.joined().forEach(supervisor -> returnedPorts.returned(supervisor.id(), nowMillis.getAsLong()));
        return changes;
    }

    /** Sorts the topologies Nimbus wants placed: evenly at once, or by plan; and those to plan again after a fallback. */
    private void sortOut(Topologies topologies, Cluster cluster, Round round) {
        List<TopologyDetails> waiting = new ArrayList<>(cluster.needsSchedulingTopologies());
        waiting.sort(Comparator.comparing(TopologyDetails::getId));
        for (TopologyDetails topology : waiting) {
            if (!TopologySettings.asksForPlanner(topology.getConf())) {
                round.even.put(topology, new Fallbacks.Even("the topology asks for no planner (no "
                        + TopologySettings.PROFILES + " in its conf)", false, false, null));
            } else if (!cluster.getUnassignedExecutors(topology).isEmpty()) {
                ProfileWaits.Wait wait = profileWaits.get(topology.getId());
                if (wait != null && lostSomeOnly(topology, cluster, wait)) { // asking would get the same answer
                    round.even.put(topology, new Fallbacks.Even(wait.cause(), true, false, wait));
                } else if (wait == null && applyContingency(topology, cluster)) {
                    continue; // placed at once by the contingency its plan stores for the lost machine
                } else {
                    if (wait != null) { // rebalanced (hetsched tune, replan) or given another set: asked, placed whole
                        profileWaits.forget(topology.getId());
                        fallbacks.planAgain(topology.getId(), wait.sinceMillis(), wait.cause());
                    }
                    round.planned.add(topology);
                }
            } // else placed whole already: the plan, not topology.workers, decides its worker count
        }
        round.replanned = fallbacks.ids().stream().map(topologies::getById)
                .filter(t -> t != null && cluster.getUnassignedExecutors(t).isEmpty()).toList();
    }

    /**
     * Places a topology that lost one machine's executors by the contingency its plan stores for that machine
     * ({@link ContingencyPlacement}), without asking the planner; false (and the plan forgotten) where none applies,
     * and the planner is asked for a repair as before. Once applied, the planner is told in the background (the plan
     * bound with the reason {@link ContingencyPlacement#reason}), so the loss and the contingency are in its events.
     */
    private boolean applyContingency(TopologyDetails topology, Cluster cluster) {
        String id = topology.getId();
        Plan plan = contingencyPlans.get(id);
        if (plan == null || fallbacks.contains(id) || jobs.has(id)) {
            return false;
        }
        try {
            TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
            SchedulerAssignment assignment = cluster.getAssignmentById(id);
            Map<ExecutorDetails, WorkerSlot> running = assignment == null ? Map.of() : assignment.getExecutorToSlot();
            Map<String, String> names = new HashMap<>();
            Map<String, List<Integer>> freePorts = new HashMap<>();
            for (SupervisorDetails supervisor : cluster.getSupervisors().values()) {
                if (!cluster.isBlackListed(supervisor.getId())) {
                    names.put(supervisor.getId(), machineChanges.machineName(supervisor));
                    freePorts.put(supervisor.getId(), cluster.getAvailablePorts(supervisor).stream().sorted().toList());
                }
            }
            ContingencyPlacement.Result result = ContingencyPlacement.place(plan, TopologyGraph.of(topology),
                    new HashMap<>(running), names, usableMachines(cluster, id, wanted), freePorts);
            result.shrunk().forEach((slot, staying) -> {
                cluster.freeSlot(slot);
                if (!staying.isEmpty()) {
                    cluster.assign(slot, id, staying);
                }
            });
            result.workers().forEach((slot, executors) -> cluster.assign(slot, id, executors));
            contingencyPlans.remove(id);
            SchedulerAssignment now = cluster.getAssignmentById(id);
            contingenciesApplied.put(id, ContingencyReturn.applied(plan, result,
                    now == null ? Map.of() : new HashMap<>(now.getExecutorToSlot())));
            String rate = Double.isNaN(result.inputRate()) ? "" : String.format(java.util.Locale.ROOT,
                    ", predicted %.2f tuples/s", result.inputRate());
            String status = "placed by contingency at " + clockTime(nowMillis.getAsLong()) + " after losing "
                    + result.machine() + " (plan " + plan.id() + rate + "): kept " + result.kept()
                    + " executors where they run, moved " + result.moved() + " without asking the planner"
                    + (result.shrunk().isEmpty() ? "" : "; " + result.shrunk().size() + " surviving workers restart");
            cluster.setStatus(id, STATUS + status);
            LOG.info("hetsched: topology {} {}", id, status);
            tellPlanner(topology.getName(), plan.id(), ContingencyPlacement.reason(result));
            return true;
        } catch (PlanFault fault) {
            contingencyPlans.remove(id);
            LOG.info("hetsched: topology {}: the contingencies of plan {} do not apply ({}); asking the planner for "
                    + "a repair", id, plan.id(), fault.reason());
            return false;
        }
    }

    /**
     * After supervisors joined: a topology running in the contingency the plugin applied for a machine that is back is
     * moved back as its plan placed it, without asking the planner ({@link ContingencyReturn}); the plan's
     * contingencies then apply to the next loss again. Where that cannot be done, the log says why in one line and the
     * topology is planned again on the larger cluster as after any join ({@link #replanAfterJoins}).
     */
    private void moveBackAfterReturns(Topologies topologies, Cluster cluster, List<MachineChanges.Supervisor> joined,
                                      Round round) {
        if (joined.isEmpty() || contingenciesApplied.isEmpty()) {
            return;
        }
        String joinedNames = String.join(", ", joined.stream().map(MachineChanges.Supervisor::name).toList());
        for (String id : new ArrayList<>(new TreeSet<>(contingenciesApplied.keySet()))) {
            TopologyDetails topology = topologies.getById(id);
            ContingencyReturn.Applied applied = contingenciesApplied.get(id);
            if (topology == null) {
                continue;
            }
            MachineChanges.Supervisor back = ContingencyReturn.returned(applied, joined).orElse(null);
            if (back == null) {
                LOG.info("hetsched: topology {} stays in plan {}'s contingency for {}: {} joined, not {}; planned "
                        + "again on the larger cluster as after any join", id, applied.plan().id(), applied.machine(),
                        joinedNames, applied.machine());
                continue;
            }
            contingenciesApplied.remove(id); // undone now, or never: what runs is no longer the contingency alone
            try {
                if (round.answered.contains(id) || round.even.containsKey(topology) || fallbacks.contains(id)
                        || jobs.has(id)) {
                    throw PlanFault.planDoesNotFit("it is being placed otherwise this round");
                }
                moveBack(topology, cluster, applied, back);
                round.movedBack.add(id);
            } catch (PlanFault fault) {
                LOG.info("hetsched: topology {}: {} returned, but plan {}'s contingency for it is not undone ({}); "
                        + "planned again on the larger cluster as after any join", id, back.name(), applied.plan().id(),
                        fault.reason());
            }
        }
    }

    /** Frees the contingency's workers and puts their executors into one new worker on the returned supervisor. */
    private void moveBack(TopologyDetails topology, Cluster cluster, ContingencyReturn.Applied applied,
                          MachineChanges.Supervisor back) throws PlanFault {
        String id = topology.getId();
        TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
        SchedulerAssignment assignment = cluster.getAssignmentById(id);
        Map<ExecutorDetails, WorkerSlot> running = assignment == null ? Map.of() : assignment.getExecutorToSlot();
        Set<String> offered = new HashSet<>();
        for (SupervisorDetails supervisor : cluster.getSupervisors().values()) {
            if (!cluster.isBlackListed(supervisor.getId())) {
                offered.add(supervisor.getId());
                offered.add(machineChanges.machineName(supervisor));
                if (supervisor.getHost() != null) {
                    offered.add(supervisor.getHost());
                }
            }
        }
        long now = nowMillis.getAsLong();
        ContingencyReturn.Result result = ContingencyReturn.undo(applied, back.id(),
                new HashSet<>(topology.getExecutors()), new HashMap<>(running), offered,
                usableMachines(cluster, id, wanted), returnedPorts.settlingPorts(back.id(), now),
                wanted.maxExecutorsPerWorker());
        result.freed().forEach(cluster::freeSlot);
        cluster.assign(result.worker(), id, result.executors());
        contingencyPlans.put(id, result.plan()); // it runs as its plan placed it: the plan's contingencies again
        String status = "moved back to " + result.machine() + " at " + clockTime(now) + " by plan "
                + result.plan().id() + ": " + result.executors().size() + " executors into one new worker, the "
                + "contingency's " + result.freed().size() + " workers freed, no other worker restarts";
        cluster.setStatus(id, STATUS + status);
        LOG.info("hetsched: topology {} {} (port {}{}); without asking the planner", id, status,
                result.worker().getPort(), result.settling() ? ", one it ran workers on when lost: no other was free" : "");
        tellPlanner(topology.getName(), result.plan().id(), ContingencyReturn.reason(result));
    }

    /** Starts a request for every topology of the round that has no answer yet. */
    private void askPlanner(Cluster cluster, Round round) {
        for (TopologyDetails topology : round.planned) {
            if (!round.answered.contains(topology.getId())) {
                startPlanning(topology, cluster, round.deadline, round.even);
            }
        }
        for (TopologyDetails topology : round.replanned) {
            if (!round.answered.contains(topology.getId())) {
                startReplanning(topology, cluster, round.deadline);
            }
        }
    }

    /** Storm's even scheduling for the round's even topologies, each with its status. */
    private void placeEvenly(Cluster cluster, Round round) {
        EvenScheduling.schedule(cluster, round.even.keySet());
        round.even.forEach((topology, fallback) -> placedEvenly(topology, cluster, fallback));
    }

    /** After machines joined: asks for better plans of the topologies running by plan; applies answers that came. */
    private void replanAfterJoins(Topologies topologies, Cluster cluster, List<String> joined, Round round) {
        if (!joined.isEmpty()) {
            for (TopologyDetails topology : topologies.getTopologies()) {
                if (!round.answered.contains(topology.getId()) && !round.even.containsKey(topology)
                        && !round.movedBack.contains(topology.getId())) {
                    startUpgrade(topology, cluster, joined);
                }
            }
        }
        for (Upgrades.Outcome outcome : upgrades.answered(topologies)) {
            if (outcome.rebalance() != null) {
                Upgrades.Rebalance r = outcome.rebalance();
                rebalanceLater(r.topologyName(), r.planId(), r.waitSecs(), r.reason());
            }
            cluster.setStatus(outcome.topologyId(), STATUS + outcome.status());
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
        if (ownNoticeExecutor != null) {
            ownNoticeExecutor.shutdownNow();
        }
        if (heartbeat != null) {
            heartbeat.stop();
        }
    }

    /** Drops what is kept for topologies Nimbus no longer lists (killed); their answers are not needed. */
    private void forgetGone(Topologies topologies) {
        jobs.retainOnly(id -> topologies.getById(id) != null);
        fallbacks.retainOnly(id -> topologies.getById(id) != null);
        upgrades.retainOnly(id -> topologies.getById(id) != null);
        profileWaits.retainOnly(id -> topologies.getById(id) != null);
        contingencyPlans.keySet().removeIf(id -> topologies.getById(id) == null);
        contingenciesApplied.keySet().removeIf(id -> topologies.getById(id) == null);
        placedAtMillis.keySet().removeIf(id -> topologies.getById(id) == null);
        refusals.retainOnly(id -> topologies.getById(id) != null);
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
            if (topology == null || !cluster.getUnassignedExecutors(topology).isEmpty() || jobs.has(id)
                    || !replanAllowed(topology)) {
                continue;
            }
            ProfileWaits.Wait wait = profileWaits.get(id);
            String change = profileWaits.changed(id, types);
            if (change != null) {
                LOG.info("hetsched: topology {} is planned again: {}", id, change);
                profileWaits.forget(id);
                fallbacks.planAgain(id, wait.sinceMillis(), wait.cause());
                continue;
            }
            long now = nowMillis.getAsLong();
            if (profileWaits.versionReadDue(id, now) && breaker.allowsCall()) {
                try {
                    profileWaits.versionReadStarted(id, CompletableFuture.supplyAsync(() -> {
                        try {
                            return calls.ask(() -> planner.fetchProfileSet(wait.profileSet()), false).version();
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
                               Map<TopologyDetails, Fallbacks.Even> evenWithReason) {
        if (jobs.has(topology.getId())) {
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
            if (jobs.inFlight() >= settings.plannerConcurrency()) {
                leaveWaiting(topology, cluster, jobs.inFlight() + " planner requests in flight (" + SchedulerSettings.PLANNER_CONCURRENCY
                        + "); a later round asks the planner");
                return;
            }
            // a topology running evenly after a fallback is placed whole by plan; one placed by plan is repaired
            start(topology, cluster, wanted, !fallbacks.contains(topology.getId()));
        } catch (PlanFault fault) {
            fallBack(topology, cluster, fault, evenWithReason);
        }
    }

    /** Asks again for a topology placed evenly after a planner fault, when the breaker lets a call through. */
    private void startReplanning(TopologyDetails topology, Cluster cluster, long deadline) {
        if (jobs.has(topology.getId()) || !breaker.allowsCall() || jobs.inFlight() >= settings.plannerConcurrency()
                || nowMillis.getAsLong() > deadline) {
            return;
        }
        try {
            start(topology, cluster, TopologySettings.fromConf(topology.getConf()), false);
        } catch (PlanFault fault) {
            fallbacks.forget(topology.getId());
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
            answer = CompletableFuture.supplyAsync(() -> asker.ask(inputs), executor);
        } catch (RejectedExecutionException e) {
            throw PlanFault.plannerFailed("the plugin's planner threads refused the request: " + e.getMessage());
        }
        jobs.start(topology.getId(), answer);
    }

    /** Applies the answers that have come (before new requests are started, so earlier answers are not crowded out). */
    private void placeAnswered(Cluster cluster, Round round) {
        for (TopologyDetails topology : round.planned) {
            if (!round.even.containsKey(topology) && applyAnswer(topology, cluster, round.deadline, round.even)) {
                round.answered.add(topology.getId());
            }
        }
        for (TopologyDetails topology : round.replanned) {
            if (applyReplan(topology, cluster, round.deadline)) {
                round.answered.add(topology.getId());
            }
        }
    }

    /** The answer for a topology that needs placing, once there is one: placed by plan, or fallen back. */
    private boolean applyAnswer(TopologyDetails topology, Cluster cluster, long deadline,
                                Map<TopologyDetails, Fallbacks.Even> evenWithReason) {
        PlanJobs.Job<PlanAnswer> job = jobs.get(topology.getId());
        if (job == null) {
            return false;
        }
        if (!job.done() || nowMillis.getAsLong() > deadline && job.answer().join().plan() != null) {
            leaveWaiting(topology, cluster, "asked the planner at " + clockTime(job.startedMillis())
                    + "; placed when the plan arrives");
            return false;
        }
        PlanAnswer answer = jobs.take(topology.getId());
        refusals.answered(topology.getId(), answer.fault(), nowMillis.getAsLong());
        try {
            if (answer.fault() != null) {
                throw answer.fault();
            }
            String status = answer.source() == Source.REPAIR ? placeRepair(topology, cluster, answer)
                    : placeByPlan(topology, cluster, answer);
            fallbacks.forget(topology.getId());
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
        PlanJobs.Job<PlanAnswer> job = jobs.get(topology.getId());
        Fallbacks.FellBack fell = fallbacks.get(topology.getId());
        if (job == null || fell == null || !job.done() || nowMillis.getAsLong() > deadline) {
            return false;
        }
        PlanAnswer answer = jobs.take(topology.getId());
        refusals.answered(topology.getId(), answer.fault(), nowMillis.getAsLong());
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
            fallbacks.forget(topology.getId());
            String status = evenly + "; planned at " + clockTime(nowMillis.getAsLong()) + " "
                    + placed.substring("placed by planner ".length());
            cluster.setStatus(topology.getId(), STATUS + status);
            LOG.info("hetsched: topology {} re-placed by plan after running evenly (its workers restart)", topology.getId());
        } catch (PlanFault | RuntimeException e) {
            String reason = e instanceof PlanFault fault ? fault.reason() : e.toString();
            cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
            before.forEach((slot, executors) -> cluster.assign(slot, topology.getId(), executors));
            fallbacks.forget(topology.getId());
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
        contingenciesApplied.remove(topology.getId());
        for (Map.Entry<WorkerSlot, List<ExecutorDetails>> worker : placement.workers().entrySet()) {
            cluster.assign(worker.getKey(), topology.getId(), worker.getValue());
        }
        if (plan.contingencies().isEmpty()) {
            contingencyPlans.remove(topology.getId());
        } else {
            contingencyPlans.put(topology.getId(), plan);
        }
        placedAtMillis.put(topology.getId(), nowMillis.getAsLong());

        boolean stored = wanted.planId() != null && wanted.planId().equals(plan.id());
        String planName = plan.id() == null ? "unstored plan"
                : (answer.source() == Source.BOUND ? "bound plan " : stored ? "stored plan " : "plan ") + plan.id();
        String strategy = plan.strategy() == null ? "" : ", strategy " + plan.strategy();
        String status = "placed by planner (" + planName + strategy + ") on " + placement.supervisors()
                + " supervisors in " + placement.workers().size() + " workers";
        LOG.info("hetsched: topology {} {}; {} executors, asking the planner took {} ms{}",
                topology.getId(), status, graph.executorCount(), answer.millis(),
                answer.baseLoad().isEmpty() ? "" : ", planned on 100% less the machine base load " + answer.baseLoad());
        if (answer.source() == Source.PLANNED) {
            status += actBeside(topology.getName(), plan, cluster);
        }
        return status;
    }

    /** Re-places the running topologies the newcomer's plan planned again and evicts those it leaves without room. */
    private String actBeside(String newcomer, Plan plan, Cluster cluster) {
        long now = nowMillis.getAsLong();
        Tenancy.Actions actions = Tenancy.beside(newcomer, plan, cluster, now);
        for (Tenancy.Replacement r : actions.replacements()) {
            upgrades.replaced(r.topologyId(), now);
            rebalanceLater(r.topologyName(), r.planId(), r.waitSecs(), r.reason());
            cluster.setStatus(r.topologyId(), STATUS + r.status());
            LOG.info("hetsched: topology {}: {}", r.topologyId(), r.status());
        }
        for (Tenancy.Eviction e : actions.evictions()) {
            evict(e, cluster);
        }
        return actions.newcomerStatus();
    }

    /** Frees an evicted topology's slots; the refusal is remembered, as the planner's latest answer for it. */
    private void evict(Tenancy.Eviction e, Cluster cluster) {
        cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(e.topologyId())));
        refusals.refused(e.topologyId(), nowMillis.getAsLong(), e.reason());
        cluster.setStatus(e.topologyId(), STATUS + e.status());
        LOG.info("hetsched: topology {}: {}", e.topologyId(), e.status());
    }

    /**
     * Places the executors a topology lost where the repair plan says, each executor still running left in its
     * worker; returns the status. The repair plan is then bound in the background ({@link RepairPlacement#reason}):
     * the plan the topology runs by from now on, the one it is placed by whole next and the one shown to the operator.
     * Its contingencies, where it stores them (the service keeps the topology's {@code survive_loss}), are kept for
     * the next loss, as a plan placed whole keeps its own.
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
        contingenciesApplied.remove(topology.getId());
        if (answer.plan().contingencies().isEmpty()) {
            contingencyPlans.remove(topology.getId()); // it no longer runs as its plan placed it
        } else {
            contingencyPlans.put(topology.getId(), answer.plan()); // the repair's, for what runs now: the next loss
        }
        List<String> goneNames = machineChanges.goneNames();
        String gone = goneNames.isEmpty() ? "" : " (gone: " + String.join(", ", goneNames) + ")";
        String status = "repaired at " + clockTime(nowMillis.getAsLong()) + " after losing executors" + gone + ": kept "
                + result.kept() + " executors where they run, placed " + result.placed() + " by repair plan "
                + answer.plan().id() + " on " + String.join(", ", result.machines());
        LOG.info("hetsched: topology {} {}; asking the planner took {} ms", topology.getId(), status, answer.millis());
        tellPlanner(topology.getName(), answer.plan().id(), RepairPlacement.reason(result, goneNames));
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

    /** The machines a topology may use, a returned supervisor's ports of the time it was lost last. */
    private List<Machine> usableMachines(Cluster cluster, String topologyId, TopologySettings wanted) {
        return returnedPorts.lastIn(Machine.usableBy(cluster, topologyId, settings, wanted), nowMillis.getAsLong());
    }

    /** Asks, in the background, for a plan on the larger cluster and the predicted rate of the placement running now. */
    private void startUpgrade(TopologyDetails topology, Cluster cluster, List<String> joined) {
        String id = topology.getId();
        SchedulerAssignment assignment = cluster.getAssignmentById(id);
        if (planner == null || !TopologySettings.asksForPlanner(topology.getConf()) || assignment == null
                || !cluster.getUnassignedExecutors(topology).isEmpty() || fallbacks.contains(id)
                || profileWaits.isWaiting(id) || jobs.has(id) || upgrades.has(id) || !breaker.allowsCall()) {
            return;
        }
        try {
            TopologySettings wanted = TopologySettings.fromConf(topology.getConf());
            if (wanted.profiles() == null) {
                return;
            }
            List<Machine> usable = usableMachines(cluster, id, wanted);
            TopologyGraph graph = TopologyGraph.of(topology);
            Map<String, List<String>> running = machinesByInstance(cluster, id, graph, usable);
            upgrades.start(id, graph, usable, wanted, running, TenantSettings.fromConf(topology.getConf()), joined,
                    executor);
        } catch (PlanFault | RejectedExecutionException e) {
            LOG.info("hetsched: topology {} is not planned again after supervisors joined: {}", id, e.getMessage());
        }
    }

    /** Binds the plan and asks Nimbus to rebalance, on a plugin thread: Nimbus's rebalance needs its scheduling lock. */
    private void rebalanceLater(String topologyName, String planId, int waitSecs, String reason) {
        Runnable rebalance = () -> {
            try {
                planner.bind(topologyName, planId, PLUGIN_REASON + reason);
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

    /**
     * Tells the planner, off Nimbus's thread, the plan a topology now runs by and why ({@link PlannerCalls#tell});
     * nothing it does can fail the round.
     */
    private void tellPlanner(String topologyName, String planId, String reason) {
        if (calls == null || topologyName == null || planId == null) {
            return;
        }
        try {
            calls.tell(topologyName, planId, PLUGIN_REASON + reason, noticeExecutor);
        } catch (RuntimeException e) { // PlannerCalls.tell catches its own; a round must not fail for a notice
            LOG.warn("hetsched: topology {}: telling the planner '{}' failed: {}", topologyName, reason, e.toString());
        }
    }

    private void leaveWaiting(TopologyDetails topology, Cluster cluster, String why) {
        cluster.setStatus(topology.getId(), STATUS + "waiting for its plan: " + why);
    }

    /**
     * A fault of the planner for this topology: placed evenly this round, or left unscheduled; said once in the log.
     * One the planner last refused stays unscheduled while the planner is unavailable ({@link Refusals}).
     */
    private void fallBack(TopologyDetails topology, Cluster cluster, PlanFault fault,
                          Map<TopologyDetails, Fallbacks.Even> evenWithReason) {
        String stillRefused = refusals.whileUnavailable(topology.getId(), fault);
        if (stillRefused != null) {
            LOG.warn("hetsched: topology {} left unscheduled: {}", topology.getId(), stillRefused);
            cluster.setStatus(topology.getId(), STATUS + stillRefused);
            return;
        }
        ProfileWaits.Wait wait = fault.profileGap() == null ? null : profileWait(topology, cluster, fault.profileGap());
        Fallbacks.Decision decision = fallbacks.decide(fault, replanAllowed(topology), wait);
        if (wait != null) {
            LOG.warn("hetsched: topology {} is placed evenly: {} ({}); it is planned again once its profile set or "
                    + "the machine types change", topology.getId(), wait.cause(), fault.reason());
        } else if (fault.notAdmitted()) {
            LOG.warn("hetsched: topology {} left unscheduled: {}", topology.getId(), fault.reason());
        } else if (decision.even() != null) {
            LOG.warn("hetsched: topology {} falls back to even scheduling: {}", topology.getId(), fault.reason());
        } else {
            LOG.warn("hetsched: topology {} left unscheduled ({}: none): {}",
                    topology.getId(), SchedulerSettings.FALLBACK, fault.reason());
        }
        if (decision.even() != null) {
            evenWithReason.put(topology, decision.even());
        } else {
            cluster.setStatus(topology.getId(), STATUS + decision.status());
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

    private void placedEvenly(TopologyDetails topology, Cluster cluster, Fallbacks.Even even) {
        if (even.profileWait() != null) {
            if (profileWaits.get(topology.getId()) != even.profileWait()) {
                profileWaits.waitFor(topology.getId(), even.profileWait());
            }
            fallbacks.forget(topology.getId());
            cluster.setStatus(topology.getId(), STATUS + waitingStatus(topology, cluster, even.profileWait()));
            return;
        }
        cluster.setStatus(topology.getId(), STATUS + fallbacks.placedEvenly(topology.getId(), even,
                evenOutcome(topology, cluster), nowMillis.getAsLong()));
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
