package org.hetsched.storm.grouping;

import java.util.Arrays;
import java.util.List;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.task.WorkerTopologyContext;
import org.apache.storm.tuple.Fields;
import org.apache.storm.utils.TupleUtils;

/**
 * A fields grouping that gives each target task its share of the keys ({@link GroupingShares}), for
 * {@code customGrouping(..., new WeightedFieldsGrouping("word"))}. Without shares it is Storm's fields grouping,
 * key for key.
 *
 * <p>With shares a key goes to the task of highest weighted rendezvous score {@code w / -ln(h(key, task))}: each
 * task takes about its weight's part of the keys, and a change of weights moves only the keys that must move (those
 * whose best task changed), not the many a modulo over new counts would.
 */
public class WeightedFieldsGrouping extends WeightedGrouping {
    private static final long serialVersionUID = 1L;

    private final List<String> groupFields;
    private transient Fields outFields;
    private transient Fields keyFields;
    private transient volatile double[] weights;

    /** Group on these fields, given as one comma-separated text (streamparse and Flux pass plain strings). */
    public WeightedFieldsGrouping(String fields) {
        this(Arrays.stream(fields.split(",")).map(String::trim).filter(f -> !f.isEmpty()).toList());
    }

    public WeightedFieldsGrouping(List<String> fields) {
        if (fields == null || fields.isEmpty()) {
            throw new IllegalArgumentException("WeightedFieldsGrouping needs at least one field to group on");
        }
        this.groupFields = List.copyOf(fields);
    }

    @Override
    protected void prepareStream(WorkerTopologyContext context, GlobalStreamId stream) {
        outFields = context.getComponentOutputFields(stream);
        keyFields = new Fields(groupFields);
    }

    @Override
    protected void weightsChanged(double[] next) {
        weights = next;
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        current();
        List<Object> key = outFields.select(keyFields, values);
        double[] w = weights;
        if (w == null) {
            return choices.get(TupleUtils.chooseTaskIndex(key, choices.size()));
        }
        return choices.get(rendezvous(Arrays.deepHashCode(key.toArray()), targetTasks, w));
    }

    /** Index of the task with the highest weighted rendezvous score for a key's hash (tasks of weight 0 never win). */
    static int rendezvous(int keyHash, List<Integer> tasks, double[] weights) {
        int best = -1;
        double bestScore = -1;
        for (int i = 0; i < weights.length; i++) {
            if (weights[i] <= 0) {
                continue;
            }
            long h = mix(keyHash * 0x9E3779B97F4A7C15L ^ mix(tasks.get(i) + 0x632BE59BD9B4E019L));
            double u = ((h >>> 11) + 0.5) * 0x1.0p-53;
            double score = weights[i] / -Math.log(u);
            if (score > bestScore) {
                bestScore = score;
                best = i;
            }
        }
        return best;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
