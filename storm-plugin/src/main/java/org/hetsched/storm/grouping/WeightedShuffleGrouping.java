package org.hetsched.storm.grouping;

import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.storm.grouping.ShuffleGrouping;
import org.apache.storm.task.WorkerTopologyContext;
import org.apache.storm.generated.GlobalStreamId;

/**
 * A shuffle grouping that gives each target task its share of the stream ({@link GroupingShares}), for
 * {@code customGrouping(..., new WeightedShuffleGrouping())}. Without shares it is Storm's {@link ShuffleGrouping}.
 *
 * <p>Like Storm's shuffle it walks a fixed cycle of targets with one atomic counter, so a tuple costs the same; the
 * cycle holds each task about {@code weight * length} times, spread by smooth weighted round robin, so any run of
 * tuples is within one cycle's rounding of the shares.
 */
public class WeightedShuffleGrouping extends WeightedGrouping {
    private static final long serialVersionUID = 1L;
    static final int MIN_CYCLE = 1000;

    private transient ShuffleGrouping storms;
    private transient volatile int[] cycle;
    private transient AtomicInteger position;

    @Override
    public void prepare(WorkerTopologyContext context, GlobalStreamId stream, List<Integer> targetTasks) {
        storms = new ShuffleGrouping();
        storms.prepare(context, stream, targetTasks);
        position = new AtomicInteger(0);
        super.prepare(context, stream, targetTasks);
    }

    @Override
    protected void weightsChanged(double[] weights) {
        if (weights == null) {
            cycle = null;
            return;
        }
        int[] next = cycleOf(weights, Math.max(MIN_CYCLE, 50 * weights.length));
        position.set(ThreadLocalRandom.current().nextInt(next.length));
        cycle = next;
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        current();
        int[] order = cycle;
        if (order == null) {
            return storms.chooseTasks(taskId, values);
        }
        int at = Math.floorMod(position.getAndIncrement(), order.length);
        return choices.get(order[at]);
    }

    /** {@code length} picks of indexes into {@code weights}, each about in proportion to its weight. */
    static int[] cycleOf(double[] weights, int length) {
        double total = 0;
        for (double w : weights) {
            total += w;
        }
        double[] credit = new double[weights.length];
        int[] order = new int[length];
        for (int n = 0; n < length; n++) {
            int best = -1;
            for (int i = 0; i < weights.length; i++) {
                if (weights[i] > 0) {
                    credit[i] += weights[i];
                    if (best < 0 || credit[i] > credit[best]) {
                        best = i;
                    }
                }
            }
            credit[best] -= total;
            order[n] = best;
        }
        return order;
    }
}
