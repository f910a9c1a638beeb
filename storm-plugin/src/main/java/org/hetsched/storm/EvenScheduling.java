package org.hetsched.storm;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.DefaultScheduler;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;

/**
 * Storm's own even scheduling ({@link DefaultScheduler}) for a chosen set of topologies only.
 *
 * <p>{@code DefaultScheduler.defaultSchedule} schedules every topology the cluster says needs
 * scheduling, whatever topologies it is handed. So it runs on a view of the cluster that shows only
 * the chosen topologies, and only their assignments are copied back: the others, including planner
 * topologies placed earlier in the same round, are never touched.
 */
public final class EvenScheduling {
    private EvenScheduling() {
    }

    public static void schedule(Cluster cluster, Collection<TopologyDetails> topologies) {
        if (topologies.isEmpty()) {
            return;
        }
        Map<String, TopologyDetails> chosen = new HashMap<>();
        topologies.forEach(t -> chosen.put(t.getId(), t));
        Topologies only = new Topologies(chosen);
        ChosenTopologiesView view = new ChosenTopologiesView(cluster, only);
        DefaultScheduler.defaultSchedule(only, view);

        for (String topologyId : chosen.keySet()) {
            SchedulerAssignment after = view.getAssignmentById(topologyId);
            cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(topologyId)));
            if (after != null && !after.getExecutors().isEmpty()) {
                cluster.assign(after, false);
            }
        }
    }

    /** A copy of the cluster whose scheduler sees, and may change, only the chosen topologies. */
    private static final class ChosenTopologiesView extends Cluster {
        private final Topologies chosen;
        private final Set<String> chosenIds;

        ChosenTopologiesView(Cluster cluster, Topologies chosen) {
            super(cluster);
            this.chosen = chosen;
            this.chosenIds = chosen.getTopologies().stream().map(TopologyDetails::getId).collect(Collectors.toSet());
        }

        @Override
        public Topologies getTopologies() {
            return chosen == null ? super.getTopologies() : chosen;
        }

        @Override
        protected void assertValidTopologyForModification(String topologyId) {
            // chosenIds is null while the copy constructor copies every assignment in
            if (chosenIds != null && !chosenIds.contains(topologyId)) {
                throw new IllegalArgumentException("even scheduling may change only " + chosenIds
                        + ", not " + topologyId);
            }
        }
    }
}
