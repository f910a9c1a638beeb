package org.hetsched.storm.baselines;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.ToIntFunction;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;

/** One scheduling round of SPS or DPS: demands, node shares, the Resource Allocator. */
final class NodeShareScheduling {
    private NodeShareScheduling() {
    }

    static void round(Topologies topologies, Cluster cluster, String label,
                      ToIntFunction<TopologyDetails> priorityOf,
                      BiFunction<TopologyDetails, Integer, NodeShares.Demand> demandOf,
                      BiFunction<Integer, List<NodeShares.Demand>, Map<String, Integer>> shares) {
        List<NodeShares.Demand> demands = new ArrayList<>();
        List<TopologyDetails> ordered = new ArrayList<>();
        for (TopologyDetails topology : topologies.getTopologies()) {
            try {
                demands.add(demandOf.apply(topology, priorityOf.applyAsInt(topology)));
                ordered.add(topology);
            } catch (IllegalArgumentException e) {
                cluster.setStatus(topology.getId(), label + " cannot schedule it: " + e.getMessage());
            }
        }
        Map<String, Integer> priority = new java.util.HashMap<>();
        demands.forEach(d -> priority.put(d.id(), d.priority()));
        demands.sort(Comparator.comparingInt(NodeShares.Demand::priority).thenComparing(NodeShares.Demand::id));
        ordered.sort(Comparator.<TopologyDetails>comparingInt(t -> priority.get(t.getId()))
                .thenComparing(TopologyDetails::getId));
        Map<String, Integer> computed = shares.apply(cluster.getSupervisors().size(), demands);
        ResourceAllocator.allocate(cluster, ordered, computed, label);
    }
}
