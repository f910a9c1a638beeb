package org.hetsched.storm.baselines;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * The thesis's Resource Allocator (Table 3), shared by SPS and DPS.
 *
 * <p>A topology whose node count already equals its new share, with every executor placed, is left
 * alone (lines 4-8: no needless re-placement); every other one is flushed. Then, from the most
 * important level down, each flushed topology takes its share of whole nodes that no topology uses,
 * picks its workers over them round robin and deals its executors round robin over those workers
 * (lines 12-17, as Storm's Isolation and Default schedulers do). Nodes are taken most free slots
 * first, then by supervisor id: the thesis knows no machine speeds, and neither does this.
 */
public final class ResourceAllocator {
    private ResourceAllocator() {
    }

    /**
     * Applies the shares; a topology that gets no node, or fewer than its share, says so in its
     * scheduler status (shown by Storm's UI and {@code storm list}).
     *
     * @param ordered topologies from the most important down, as their shares were computed
     * @param shares  topology id to its new number of supervisor nodes
     * @param label   the scheduler's name in statuses
     */
    public static void allocate(Cluster cluster, List<TopologyDetails> ordered, Map<String, Integer> shares,
                                String label) {
        List<TopologyDetails> flushed = new ArrayList<>();
        for (TopologyDetails topology : ordered) {
            int share = shares.getOrDefault(topology.getId(), 0);
            boolean complete = !cluster.needsScheduling(topology);
            if (share == nodesOf(cluster, topology.getId()).size() && (complete || share == 0)) {
                cluster.setStatus(topology.getId(), share > 0 ? label + ": kept on " + share + " node(s)"
                        : label + ": no supervisor node left for priority " + topology.getTopologyPriority()
                        + " (share 0)");
                continue;
            }
            cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topology.getId())));
            flushed.add(topology);
        }
        for (TopologyDetails topology : flushed) {
            int share = shares.getOrDefault(topology.getId(), 0);
            if (share == 0) {
                cluster.setStatus(topology.getId(), label + ": no supervisor node left for priority "
                        + topology.getTopologyPriority() + " (share 0)");
                continue;
            }
            List<SupervisorDetails> nodes = freeNodes(cluster).stream().limit(share).toList();
            List<WorkerSlot> slots = roundRobinSlots(cluster, nodes, topology.getNumWorkers());
            if (slots.isEmpty()) {
                cluster.setStatus(topology.getId(), label + ": share of " + share
                        + " node(s) but no free node is left");
                continue;
            }
            Map<WorkerSlot, List<ExecutorDetails>> byWorker = dealExecutors(topology.getExecutors(), slots);
            byWorker.forEach((slot, executors) -> cluster.assign(slot, topology.getId(), executors));
            cluster.setStatus(topology.getId(), label + ": " + slots.size() + " worker(s) on " + nodes.size()
                    + " node(s)" + (nodes.size() < share ? " of a share of " + share + " (no more free nodes)" : ""));
        }
    }

    /** The supervisor ids that run some worker of the topology. */
    static Set<String> nodesOf(Cluster cluster, String topologyId) {
        Set<String> nodes = new HashSet<>();
        cluster.getUsedSlotsByTopologyId(topologyId).forEach(slot -> nodes.add(slot.getNodeId()));
        return nodes;
    }

    /** Supervisors no topology uses, most assignable slots first, then by id. */
    static List<SupervisorDetails> freeNodes(Cluster cluster) {
        return cluster.getSupervisors().values().stream()
                .filter(s -> cluster.getUsedPorts(s).isEmpty() && !cluster.getAssignableSlots(s).isEmpty())
                .sorted(Comparator.<SupervisorDetails>comparingInt(s -> -cluster.getAssignableSlots(s).size())
                        .thenComparing(SupervisorDetails::getId))
                .toList();
    }

    /** Up to {@code workers} slots taken one per node in turn (line 14). */
    static List<WorkerSlot> roundRobinSlots(Cluster cluster, List<SupervisorDetails> nodes, int workers) {
        List<List<WorkerSlot>> perNode = new ArrayList<>();
        for (SupervisorDetails node : nodes) {
            List<WorkerSlot> slots = new ArrayList<>(cluster.getAssignableSlots(node));
            slots.sort(Comparator.comparingInt(WorkerSlot::getPort));
            perNode.add(slots);
        }
        List<WorkerSlot> chosen = new ArrayList<>();
        for (int round = 0; chosen.size() < Math.max(1, workers); round++) {
            boolean any = false;
            for (List<WorkerSlot> slots : perNode) {
                if (round < slots.size() && chosen.size() < Math.max(1, workers)) {
                    chosen.add(slots.get(round));
                    any = true;
                }
            }
            if (!any) {
                break;
            }
        }
        return chosen;
    }

    /** Executors in task order dealt one per worker in turn (line 15). */
    static Map<WorkerSlot, List<ExecutorDetails>> dealExecutors(Collection<ExecutorDetails> executors,
                                                                List<WorkerSlot> slots) {
        List<ExecutorDetails> sorted = new ArrayList<>(executors);
        sorted.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
        Map<WorkerSlot, List<ExecutorDetails>> byWorker = new LinkedHashMap<>();
        for (int i = 0; i < sorted.size(); i++) {
            byWorker.computeIfAbsent(slots.get(i % slots.size()), s -> new ArrayList<>()).add(sorted.get(i));
        }
        return byWorker;
    }
}
