package org.hetsched.storm.grouping;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.generated.NodeInfo;
import org.apache.storm.grouping.CustomStreamGrouping;
import org.apache.storm.task.WorkerTopologyContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the weighted groupings share: the stream's target tasks and their weights, read from the topology conf
 * ({@link GroupingShares}) and read again whenever the worker's map of tasks to machines changes, so the weights
 * follow tasks Storm moves. A change of the conf itself ({@code storm rebalance -t}) restarts the worker, which
 * prepares the grouping anew.
 */
abstract class WeightedGrouping implements CustomStreamGrouping {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(WeightedGrouping.class);

    private transient Object confValue;
    private transient String source;
    private transient String target;
    private transient AtomicReference<Map<Integer, NodeInfo>> taskToNodePort;
    private transient AtomicReference<Map<String, String>> nodeToHost;
    private transient volatile Map<Integer, NodeInfo> seen;
    private transient volatile GroupingShares shares;
    protected transient List<Integer> targetTasks;
    protected transient List<List<Integer>> choices;

    @Override
    public void prepare(WorkerTopologyContext context, GlobalStreamId stream, List<Integer> targetTasks) {
        this.targetTasks = List.copyOf(targetTasks);
        this.choices = new ArrayList<>(targetTasks.size());
        for (Integer task : targetTasks) {
            choices.add(Collections.singletonList(task));
        }
        this.source = stream.get_componentId();
        this.target = targetTasks.isEmpty() ? "" : context.getComponentId(targetTasks.get(0));
        this.confValue = context.getConf() == null ? null : context.getConf().get(GroupingShares.CONF_KEY);
        this.taskToNodePort = context.getTaskToNodePort();
        this.nodeToHost = context.getNodeToHost();
        prepareStream(context, stream);
        refresh();
    }

    /** What the grouping needs of the stream besides its targets (the fields grouping: its output fields). */
    protected void prepareStream(WorkerTopologyContext context, GlobalStreamId stream) {
    }

    /** Called with the new weights (null: none named, behave as Storm's) whenever they change. */
    protected abstract void weightsChanged(double[] weights);

    /** The weights as one short line for the log, three decimals each. */
    static String weightsText(double[] weights) {
        StringBuilder text = new StringBuilder("[");
        for (int i = 0; i < weights.length; i++) {
            text.append(i == 0 ? "" : ", ").append(String.format(java.util.Locale.ROOT, "%.3f", weights[i]));
        }
        return text.append(']').toString();
    }

    /** The current weights, re-read first where the worker's map of tasks to machines is new. */
    protected final GroupingShares current() {
        if (taskToNodePort != null && taskToNodePort.get() != seen) {
            refresh();
        }
        return shares;
    }

    private synchronized void refresh() {
        Map<Integer, NodeInfo> nodes = taskToNodePort == null ? null : taskToNodePort.get();
        if (nodes == seen && shares != null) {
            return;
        }
        GroupingShares next = GroupingShares.resolve(confValue, source, target, targetTasks, nodes,
                nodeToHost == null ? null : nodeToHost.get());
        seen = nodes;
        if (next.sameAs(shares)) {
            return;
        }
        if (next.fallback() != null && (shares == null || !next.fallback().equals(shares.fallback()))) {
            LOG.warn("{} on {}->{}: an even split, because {}", getClass().getSimpleName(), source, target, next.fallback());
        } else if (next.fallback() == null && next.weights() != null) {
            LOG.info("{} on {}->{}: tasks {} weighted {}", getClass().getSimpleName(), source, target, targetTasks,
                    weightsText(next.weights()));
        }
        weightsChanged(next.weights());
        shares = next;
    }
}
