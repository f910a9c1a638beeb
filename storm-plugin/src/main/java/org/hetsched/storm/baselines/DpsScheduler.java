package org.hetsched.storm.baselines;

import java.util.Map;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thesis's Dynamic Priority Scheduler as a Nimbus scheduler ({@code storm.scheduler:
 * org.hetsched.storm.baselines.DpsScheduler}): higher priority levels take the whole nodes they want
 * first, topologies of one level share in proportion, lower levels get what is left (possibly none).
 *
 * <p>The trigger: a priority file named by {@code hetsched.dps.priorities.file} in Nimbus's storm.yaml
 * (a JSON object, topology name to priority), re-read every round when it changed; a topology the file
 * does not name has its {@code topology.priority}. This stands for the thesis's Priority Manager:
 * whoever writes the file (a topology's trigger logic, an operator, the bench) changes priorities at
 * run time, and the next round re-places what the new shares change. As in the thesis, the scheduler
 * does not drain a topology first; deactivate it before the change to avoid lost tuples (section 3.3).
 *
 * <p>Topology conf: {@code hetsched.dps.nodes} (desired nodes, default {@code topology.workers}).
 */
public class DpsScheduler implements IScheduler {
    public static final String PRIORITIES_FILE = "hetsched.dps.priorities.file";
    static final String LABEL = "DPS";
    private static final Logger LOG = LoggerFactory.getLogger(DpsScheduler.class);

    private PriorityFile priorities = PriorityFile.NONE;

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
        priorities = PriorityFile.fromConf(conf.get(PRIORITIES_FILE), PRIORITIES_FILE);
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        Map<String, Integer> overrides = priorities.read(LOG);
        NodeShareScheduling.round(topologies, cluster, LABEL, t -> priorityOf(t, overrides), NodeDemands::dps,
                NodeShares::dps);
    }

    static int priorityOf(TopologyDetails topology, Map<String, Integer> overrides) {
        Integer override = overrides.get(topology.getName());
        return override != null ? override : NodeDemands.priority(topology);
    }

    @Override
    public Map<String, Object> config() {
        return Map.of();
    }
}
