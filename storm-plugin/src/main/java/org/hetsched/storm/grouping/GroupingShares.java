package org.hetsched.storm.grouping;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.storm.generated.NodeInfo;
import org.apache.storm.utils.Utils;

/**
 * The weight of every target task of one stream, from the topology conf's {@value #CONF_KEY}. Pure.
 *
 * <p>The conf value maps a stream to the share of it each machine's tasks take:
 * {@code {"low": {"127.0.0.2": 0.6, "127.0.0.3": 0.4}, "spout->mid": {...}}}. A stream is named by its target
 * component ({@code low}, every weighted stream into it) or by {@code source->target}, which wins. A machine is
 * named by its host or its supervisor id, as the worker sees them in its assignment. Weights are by machine, not by
 * task, so they follow a task that Storm or the plugin moves: a task's weight is its machine's share split evenly
 * over the stream's target tasks on that machine, and a task on a machine the shares do not name gets the mean
 * weight of the others (an even share, never zero).
 *
 * @param weights  one weight per target task (in the order given), or null where the conf names no shares for the
 *                 stream: the grouping then behaves exactly as Storm's
 * @param fallback why the shares named for the stream cannot be used and the split is even, or null
 */
public record GroupingShares(double[] weights, String fallback) {

    /** Topology conf key: per stream, per machine, the share of the stream its tasks take. */
    public static final String CONF_KEY = "hetsched.grouping.shares";

    private static final GroupingShares NONE = new GroupingShares(null, null);

    /** The shares named for {@code source -> target}, resolved over its target tasks where they run now. */
    public static GroupingShares resolve(Object confValue, String source, String target, List<Integer> targetTasks,
                                         Map<Integer, NodeInfo> taskToNodePort, Map<String, String> nodeToHost) {
        if (confValue == null) {
            return NONE;
        }
        Map<?, ?> all;
        try {
            all = confValue instanceof String text ? Utils.parseJson(text) : (Map<?, ?>) confValue;
        } catch (RuntimeException e) {
            return even(targetTasks, CONF_KEY + " is not a map of streams to machine shares");
        }
        if (all == null) {
            return NONE;
        }
        String stream = source + "->" + target;
        Object named = all.containsKey(stream) ? all.get(stream) : all.get(target);
        if (named == null) {
            return NONE;
        }
        if (!(named instanceof Map<?, ?> byMachine) || byMachine.isEmpty()) {
            return even(targetTasks, CONF_KEY + " for " + stream + " is not a map of machines to shares");
        }
        Map<String, Double> share = new HashMap<>();
        for (Map.Entry<?, ?> e : byMachine.entrySet()) {
            Double value = number(e.getValue());
            if (value == null || value < 0) {
                return even(targetTasks, CONF_KEY + " for " + stream + " gives machine " + e.getKey()
                        + " the share " + e.getValue() + ", not a number of at least 0");
            }
            share.put(String.valueOf(e.getKey()), value);
        }
        String[] keyOf = new String[targetTasks.size()];
        Map<String, Integer> tasksOn = new HashMap<>();
        Map<Integer, NodeInfo> nodes = taskToNodePort == null ? Map.of() : taskToNodePort;
        Map<String, String> hosts = nodeToHost == null ? Map.of() : nodeToHost;
        for (int i = 0; i < keyOf.length; i++) {
            NodeInfo node = nodes.get(targetTasks.get(i));
            String supervisor = node == null ? null : node.get_node();
            String host = supervisor == null ? null : hosts.get(supervisor);
            keyOf[i] = supervisor != null && share.containsKey(supervisor) ? supervisor
                    : host != null && share.containsKey(host) ? host : null;
            if (keyOf[i] != null) {
                tasksOn.merge(keyOf[i], 1, Integer::sum);
            }
        }
        double[] weights = new double[keyOf.length];
        double total = 0;
        int matched = 0;
        for (int i = 0; i < keyOf.length; i++) {
            if (keyOf[i] != null) {
                weights[i] = share.get(keyOf[i]) / tasksOn.get(keyOf[i]);
                total += weights[i];
                matched++;
            }
        }
        if (matched == 0) {
            return even(targetTasks, CONF_KEY + " for " + stream + " names none of the machines its "
                    + keyOf.length + " target tasks run on");
        }
        if (total <= 0 || !Double.isFinite(total)) {
            return even(targetTasks, CONF_KEY + " for " + stream + " gives the machines of its target tasks no share");
        }
        double mean = total / matched;
        for (int i = 0; i < keyOf.length; i++) {
            if (keyOf[i] == null) {
                weights[i] = mean;
            }
        }
        return new GroupingShares(weights, null);
    }

    /** True where shares are named for the stream (even when they fell back to an even split). */
    public boolean weighted() {
        return weights != null;
    }

    private static GroupingShares even(List<Integer> targetTasks, String why) {
        double[] weights = new double[targetTasks.size()];
        Arrays.fill(weights, 1.0);
        return new GroupingShares(weights, why);
    }

    private static Double number(Object value) {
        if (value instanceof Number n) {
            double d = n.doubleValue();
            return Double.isFinite(d) ? d : null;
        }
        return null;
    }

    /** Same weights, for not re-building a grouping's state when a refresh changes nothing. */
    public boolean sameAs(GroupingShares other) {
        return other != null && Arrays.equals(weights, other.weights) && java.util.Objects.equals(fallback, other.fallback);
    }
}
