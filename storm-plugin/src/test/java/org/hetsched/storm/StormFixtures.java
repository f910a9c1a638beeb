package org.hetsched.storm;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.storm.Config;
import org.apache.storm.generated.Bolt;
import org.apache.storm.generated.SpoutSpec;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.INimbus;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SchedulerAssignmentImpl;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.apache.storm.scheduler.resource.normalization.ResourceMetrics;
import org.apache.storm.testing.TestGlobalCount;
import org.apache.storm.testing.TestWordCounter;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;
import org.apache.storm.utils.Utils;

/** Real Storm scheduler objects for tests, built the way Nimbus builds them. */
final class StormFixtures {

    /** The assignments Nimbus keeps once a supervisor is gone: every executor that ran there dropped. */
    static Map<String, SchedulerAssignment> withoutSupervisor(Map<String, SchedulerAssignment> assignments,
                                                              String supervisorId) {
        Map<String, SchedulerAssignment> left = new HashMap<>();
        assignments.forEach((id, assignment) -> {
            Map<ExecutorDetails, WorkerSlot> kept = new HashMap<>(assignment.getExecutorToSlot());
            kept.values().removeIf(slot -> slot.getNodeId().equals(supervisorId));
            left.put(id, new SchedulerAssignmentImpl(id, kept, null, null));
        });
        return left;
    }

    static final int FIRST_PORT = 6700;

    private StormFixtures() {
    }

    /** A supervisor whose {@code supervisor.scheduler.meta} names its machine type (and cores, where given). */
    static SupervisorDetails supervisor(String id, String host, String type, Integer cores, int ports) {
        return supervisor(id, null, host, type, cores, ports);
    }

    /** A supervisor that also declares its machine id (as the local cluster's supervisors do). */
    static SupervisorDetails supervisor(String id, String machineId, String host, String type, Integer cores, int ports) {
        return supervisor(id, machineId, host, type, cores, ports, 8192.0);
    }

    /** A supervisor declaring {@code supervisor.memory.capacity.mb} of {@code memoryMb}. */
    static SupervisorDetails supervisor(String id, String machineId, String host, String type, Integer cores, int ports,
                                        double memoryMb) {
        Map<String, String> meta = new HashMap<>();
        if (machineId != null) {
            meta.put("machine-id", machineId);
        }
        if (type != null) {
            meta.put("machine-type", type);
        }
        if (cores != null) {
            meta.put("cores", cores.toString());
        }
        List<Number> allPorts = new ArrayList<>();
        for (int i = 0; i < ports; i++) {
            allPorts.add(FIRST_PORT + i);
        }
        Map<String, Double> resources = Map.of(
                Config.SUPERVISOR_CPU_CAPACITY, 400.0,
                Config.SUPERVISOR_MEMORY_CAPACITY_MB, memoryMb);
        return new SupervisorDetails(id, host, meta, allPorts, resources);
    }

    static Map<String, SupervisorDetails> byId(SupervisorDetails... supervisors) {
        Map<String, SupervisorDetails> map = new LinkedHashMap<>();
        for (SupervisorDetails s : supervisors) {
            map.put(s.getId(), s);
        }
        return map;
    }

    /** The Linear micro-benchmark: spout -> low -> high -> sink, with three kinds of grouping. */
    static StormTopology linear(int low, int high) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout", new TestWordSpout(), 1);
        builder.setBolt("low", new TestWordCounter(), low).shuffleGrouping("spout");
        builder.setBolt("high", new TestWordCounter(), high).fieldsGrouping("low", new Fields("word"));
        builder.setBolt("sink", new TestGlobalCount(), 1).globalGrouping("high");
        return builder.createTopology();
    }

    /**
     * A topology as Nimbus hands it to a scheduler: one task per executor, task ids from 1 over the
     * components in id order, plus {@code ackers} executors of Storm's {@code __acker}.
     */
    static TopologyDetails topology(String id, StormTopology topology, int ackers, int numWorkers,
                                    Map<String, Object> conf) {
        Map<String, Object> topoConf = new HashMap<>(Utils.readDefaultConfig());
        topoConf.put(Config.TOPOLOGY_NAME, id.replaceAll("-\\d+$", ""));
        topoConf.putAll(conf);
        Map<String, Integer> parallelism = new TreeMap<>();
        for (Map.Entry<String, SpoutSpec> s : topology.get_spouts().entrySet()) {
            parallelism.put(s.getKey(), s.getValue().get_common().get_parallelism_hint());
        }
        for (Map.Entry<String, Bolt> b : topology.get_bolts().entrySet()) {
            parallelism.put(b.getKey(), b.getValue().get_common().get_parallelism_hint());
        }
        if (ackers > 0) {
            parallelism.put("__acker", ackers);
        }
        Map<ExecutorDetails, String> executors = new HashMap<>();
        int task = 1;
        for (Map.Entry<String, Integer> component : parallelism.entrySet()) {
            for (int i = 0; i < component.getValue(); i++, task++) {
                executors.put(new ExecutorDetails(task, task), component.getKey());
            }
        }
        return new TopologyDetails(id, topoConf, topology, numWorkers, executors, 0, "tester");
    }

    static Cluster cluster(Map<String, SupervisorDetails> supervisors, Topologies topologies,
                           Map<String, ? extends SchedulerAssignment> assignments) {
        return new Cluster(new TestNimbus(), new ResourceMetrics(new StormMetricsRegistry()), supervisors,
                assignments, topologies, new HashMap<>(Utils.readDefaultConfig()));
    }

    static Cluster cluster(Map<String, SupervisorDetails> supervisors, TopologyDetails... topologies) {
        return cluster(supervisors, new Topologies(topologies), Map.of());
    }

    /** The scheduler prepared with the given storm.yaml entries, asking the planner within the round (step by step). */
    static HetschedScheduler scheduler(Map<String, Object> stormYaml, java.util.function.LongSupplier clock) {
        return scheduler(stormYaml, clock, Runnable::run);
    }

    /** The scheduler prepared with the given storm.yaml entries; a null executor gives it its own planner threads. */
    static HetschedScheduler scheduler(Map<String, Object> stormYaml, java.util.function.LongSupplier clock,
                                       java.util.concurrent.Executor executor) {
        HetschedScheduler scheduler = new HetschedScheduler(clock, executor);
        scheduler.prepare(stormYaml, new StormMetricsRegistry());
        return scheduler;
    }

    /**
     * The scheduler prepared with the planner at {@code plannerUrl} (60 s timeout) and the given storm.yaml entries,
     * asking the planner within the round, with {@code rebalancer} in place of Nimbus's rebalance.
     */
    static HetschedScheduler scheduler(java.net.URI plannerUrl, Map<String, Object> extra,
                                       java.util.function.LongSupplier clock, Rebalancer rebalancer) {
        Map<String, Object> yaml = new HashMap<>();
        yaml.put(SchedulerSettings.PLANNER_URL, plannerUrl.toString());
        yaml.put(SchedulerSettings.PLANNER_TIMEOUT_MS, 60_000);
        yaml.putAll(extra);
        HetschedScheduler scheduler = new HetschedScheduler(clock, Runnable::run, rebalancer);
        scheduler.prepare(yaml, new StormMetricsRegistry());
        return scheduler;
    }

    /** Where every executor of a topology runs, or an empty map. */
    static Map<ExecutorDetails, WorkerSlot> placement(Cluster cluster, String topologyId) {
        SchedulerAssignment assignment = cluster.getAssignmentById(topologyId);
        return assignment == null ? Map.of() : new HashMap<>(assignment.getExecutorToSlot());
    }

    /** The placement Storm's own scheduler would make of the same topologies on the same cluster. */
    static Map<ExecutorDetails, WorkerSlot> placementBy(IScheduler storm, Map<String, SupervisorDetails> supervisors,
                                                        Topologies topologies,
                                                        Map<String, ? extends SchedulerAssignment> assignments,
                                                        String topologyId) {
        Cluster twin = cluster(supervisors, topologies, assignments);
        storm.schedule(topologies, twin);
        return placement(twin, topologyId);
    }

    /** Executors of one component, in task order. */
    static List<ExecutorDetails> executorsOf(TopologyDetails topology, String component) {
        List<ExecutorDetails> executors = new ArrayList<>(topology.getComponentToExecutors().get(component));
        executors.sort((a, b) -> Integer.compare(a.getStartTask(), b.getStartTask()));
        return executors;
    }

    /** The worker slots a topology uses on each supervisor. */
    static Map<String, Set<WorkerSlot>> slotsBySupervisor(Cluster cluster, String topologyId) {
        Map<String, Set<WorkerSlot>> slots = new TreeMap<>();
        Collection<WorkerSlot> used = cluster.getUsedSlotsByTopologyId(topologyId);
        for (WorkerSlot slot : used) {
            slots.computeIfAbsent(slot.getNodeId(), k -> new java.util.HashSet<>()).add(slot);
        }
        return slots;
    }

    /** The little of INimbus a Cluster needs. */
    static final class TestNimbus implements INimbus {
        @Override
        public void prepare(Map<String, Object> topoConf, String schedulerLocalDir) {
        }

        @Override
        public Collection<WorkerSlot> allSlotsAvailableForScheduling(Collection<SupervisorDetails> existingSupervisors,
                                                                     Topologies topologies,
                                                                     Set<String> topologiesMissingAssignments) {
            return List.of();
        }

        @Override
        public void assignSlots(Topologies topologies, Map<String, Collection<WorkerSlot>> newSlotsByTopologyId) {
        }

        @Override
        public String getHostName(Map<String, SupervisorDetails> existingSupervisors, String nodeId) {
            SupervisorDetails supervisor = existingSupervisors.get(nodeId);
            return supervisor == null ? null : supervisor.getHost();
        }

        @Override
        public IScheduler getForcedScheduler() {
            return null;
        }
    }
}
