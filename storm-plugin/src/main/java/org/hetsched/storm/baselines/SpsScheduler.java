package org.hetsched.storm.baselines;

import java.util.Map;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.Topologies;

/**
 * The thesis's Static Priority Scheduler as a Nimbus scheduler ({@code storm.scheduler:
 * org.hetsched.storm.baselines.SpsScheduler}): whole supervisor nodes shared by priority level in
 * proportion to what each topology wants, each topology's minimum kept where the minimums fit,
 * workers and executors round robin within its nodes. Priorities are {@code topology.priority} as
 * submitted; SPS ignores changes (it is static by design).
 *
 * <p>Topology conf: {@code hetsched.sps.nodes} (desired nodes, default {@code topology.workers}),
 * {@code hetsched.sps.nodes.min} (minimum nodes, default 1).
 */
public class SpsScheduler implements IScheduler {
    static final String LABEL = "SPS";

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        NodeShareScheduling.round(topologies, cluster, LABEL, NodeDemands::priority, NodeDemands::sps,
                NodeShares::sps);
    }

    @Override
    public Map<String, Object> config() {
        return Map.of();
    }
}
