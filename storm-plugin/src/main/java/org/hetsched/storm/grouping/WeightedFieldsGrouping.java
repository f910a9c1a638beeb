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
 * <p>With shares a key's hash picks one of {@link #SLOTS} slots, and each slot goes to the task of highest weighted
 * rendezvous score {@code w / -ln(h(slot, task))}: each task takes about its weight's part of the keys, and a change
 * of weights moves only the slots that must move (those whose best task changed), not the many a modulo over new
 * counts would. The slots' tasks are worked out once per change of weights, so a tuple costs one hash and one
 * lookup, as Storm's fields grouping does, instead of a score per task.
 */
public class WeightedFieldsGrouping extends WeightedGrouping {
    private static final long serialVersionUID = 1L;

    private final List<String> groupFields;
    private transient Fields outFields;
    private transient Fields keyFields;
    /** Slots the key hashes are dealt over: a task's share is its slots' count over this, within 1/SLOTS. */
    static final int SLOTS = 1 << 14;

    private transient volatile short[] slotTask;

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
        slotTask = next == null ? null : slotTasks(targetTasks, next);
    }

    @Override
    public List<Integer> chooseTasks(int taskId, List<Object> values) {
        current();
        List<Object> key = outFields.select(keyFields, values);
        short[] slots = slotTask;
        if (slots == null) {
            return choices.get(TupleUtils.chooseTaskIndex(key, choices.size()));
        }
        return choices.get(slots[slotOf(Arrays.deepHashCode(key.toArray()))]);
    }

    /** The slot of a key's hash. */
    static int slotOf(int keyHash) {
        return (int) (mix(keyHash + 0x2545F4914F6CDD1DL) & (SLOTS - 1));
    }

    /** Each slot's task index, by {@link #rendezvous} over the slot number. */
    static short[] slotTasks(List<Integer> tasks, double[] weights) {
        if (tasks.size() > Short.MAX_VALUE) {
            throw new IllegalArgumentException("a weighted fields grouping takes at most " + Short.MAX_VALUE + " tasks");
        }
        short[] table = new short[SLOTS];
        for (int slot = 0; slot < SLOTS; slot++) {
            table[slot] = (short) rendezvous(slot, tasks, weights);
        }
        return table;
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
