package org.hetsched.storm.grouping.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.storm.daemon.GrouperFactory;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.generated.Grouping;
import org.apache.storm.generated.NodeInfo;
import org.apache.storm.grouping.CustomStreamGrouping;
import org.apache.storm.grouping.LoadAwareShuffleGrouping;
import org.apache.storm.grouping.ShuffleGrouping;
import org.apache.storm.task.WorkerTopologyContext;
import org.apache.storm.tuple.Fields;
import org.apache.storm.utils.Utils;
import org.hetsched.storm.grouping.GroupingShares;
import org.hetsched.storm.grouping.WeightedFieldsGrouping;
import org.hetsched.storm.grouping.WeightedShuffleGrouping;

/**
 * The plugin's weighted groupings against Storm's own, for {@code python -m benchmarks.grouping_cost} (issue 33). Not
 * a test (surefire runs {@code *Test} only) and not in the plugin jar.
 *
 * <p>{@code java -cp ... GroupingCostBenchmark SPEC.json} prints one JSON object. SPEC names one or more parts:
 * <ul>
 *   <li>{@code cost}: CPU time per {@code chooseTasks} of each (grouping, number of target tasks), a timed loop:
 *   warm-up rounds, then measured rounds of about {@code round_ms} each, timed by the thread's CPU clock (time the
 *   thread was not running, on a busy host, is not counted), the returned task summed into a sink that is printed.
 *   The caller forks one JVM per grouping so each loop's call site sees one grouping class, as JMH forks. The
 *   65,536 tuples are reused, so each word's hash code is cached after the first pass; a worker's fresh strings
 *   would add hashing the word, the same for every fields grouping.</li>
 *   <li>{@code balance}: every key of a vocabulary, and a stream drawn from its Zipf distribution, through Storm's
 *   fields grouping and the weighted one: each task's share of tuples and of distinct keys.</li>
 *   <li>{@code moves}: which task each key goes to before and after a change of weights or of tasks.</li>
 * </ul>
 * Every grouping is the real class, prepared with a real {@link WorkerTopologyContext}: stream
 * {@code split -> rolling_count} on field {@code word} (RollingCount's), source task 1, target task {@code t} alone on
 * supervisor {@code sup-t}; the weights are written as the topology conf's {@value GroupingShares#CONF_KEY} by
 * supervisor, so a task's weight is its machine's share. Storm's fields grouping is
 * {@link GrouperFactory.FieldsGrouper}, the class a worker builds for {@code fieldsGrouping}; Storm's shuffle is
 * {@link ShuffleGrouping} and {@link LoadAwareShuffleGrouping} (what a worker builds for {@code shuffleGrouping}
 * unless {@code topology.disable.loadaware.messaging}).
 */
public final class GroupingCostBenchmark {
    static final String SOURCE = "split";
    static final String TARGET = "rolling_count";
    static final String FIELD = "word";
    static final int SOURCE_TASK = 1;
    static final int FIRST_TARGET = 10;
    static final GlobalStreamId STREAM = new GlobalStreamId(SOURCE, "default");
    static final int MODULO_SLOTS = 10_000;

    /** Where the loops' results go, so the JIT cannot drop the calls. */
    static volatile long blackhole;

    private GroupingCostBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode spec = json.readTree(new File(args[0]));
        List<String> vocabulary = new ArrayList<>();
        spec.get("vocabulary").forEach(w -> vocabulary.add(w.asText()));
        Zipf zipf = new Zipf(vocabulary.size(), spec.get("zipf_s").asDouble());
        long seed = spec.path("seed").asLong(20240601L);
        Map<String, Object> out = new LinkedHashMap<>();
        if (spec.has("cost")) {
            out.put("cost", cost(spec.get("cost"), vocabulary, zipf, seed));
        }
        if (spec.has("balance")) {
            out.put("balance", balance(spec.get("balance"), vocabulary, zipf, seed));
        }
        if (spec.has("moves")) {
            out.put("moves", moves(spec.get("moves"), vocabulary, zipf));
        }
        out.put("sink", blackhole);
        out.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        System.out.println(json.writeValueAsString(out));
    }

    // ---------------------------------------------------------------- the groupings and their context

    static List<Integer> targets(int n) {
        List<Integer> tasks = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            tasks.add(FIRST_TARGET + i);
        }
        return tasks;
    }

    /** A worker's context: task 1 of split emits word to the targets; weights (or none) by supervisor, one per task. */
    static WorkerTopologyContext context(List<Integer> targets, double[] weights) {
        Map<String, Object> conf = new HashMap<>(Utils.readDefaultConfig());
        if (weights != null) {
            Map<String, Object> byMachine = new HashMap<>();
            for (int i = 0; i < targets.size(); i++) {
                byMachine.put("sup-" + targets.get(i), weights[i]);
            }
            conf.put(GroupingShares.CONF_KEY, Map.of(TARGET, byMachine));
        }
        Map<Integer, String> taskToComponent = new HashMap<>();
        taskToComponent.put(SOURCE_TASK, SOURCE);
        Map<Integer, NodeInfo> nodes = new HashMap<>();
        nodes.put(SOURCE_TASK, new NodeInfo("sup-source", Set.of(6700L)));
        Map<String, String> hosts = new HashMap<>();
        hosts.put("sup-source", "host-source");
        for (Integer task : targets) {
            taskToComponent.put(task, TARGET);
            nodes.put(task, new NodeInfo("sup-" + task, Set.of(6700L)));
            hosts.put("sup-" + task, "host-" + task);
        }
        Map<String, List<Integer>> componentTasks = Map.of(SOURCE, List.of(SOURCE_TASK), TARGET, List.copyOf(targets));
        Map<String, Map<String, Fields>> fields = Map.of(SOURCE, Map.of("default", new Fields(FIELD)));
        return new WorkerTopologyContext(null, conf, taskToComponent, componentTasks, fields, "grouping-cost-1", null, null,
                6700, List.of(SOURCE_TASK), Map.of(), Map.of(), new AtomicReference<>(nodes), "sup-source",
                new AtomicReference<>(hosts));
    }

    /** Grouping {@code kind} prepared over {@code targets}; {@code weights} only for the weighted kinds. */
    static CustomStreamGrouping grouping(String kind, List<Integer> targets, double[] weights) {
        CustomStreamGrouping g = switch (kind) {
            case "storm_shuffle" -> new ShuffleGrouping();
            case "storm_loadaware_shuffle" -> new LoadAwareShuffleGrouping();
            case "storm_fields" -> new GrouperFactory.FieldsGrouper(new Fields(FIELD), Grouping.fields(List.of(FIELD)));
            case "weighted_shuffle", "weighted_shuffle_unweighted" -> new WeightedShuffleGrouping();
            case "weighted_fields", "weighted_fields_unweighted" -> new WeightedFieldsGrouping(FIELD);
            default -> throw new IllegalArgumentException("no grouping " + kind);
        };
        boolean weighted = kind.equals("weighted_shuffle") || kind.equals("weighted_fields");
        g.prepare(context(targets, weighted ? weights : null), STREAM, targets);
        return g;
    }

    /** Weights 1, 2, ..., n (normalised): the uneven weights of the cost part. */
    static double[] uneven(int n) {
        double[] w = new double[n];
        double total = n * (n + 1) / 2.0;
        for (int i = 0; i < n; i++) {
            w[i] = (i + 1) / total;
        }
        return w;
    }

    // ---------------------------------------------------------------- part 1: cost per tuple

    static List<Object> cost(JsonNode spec, List<String> vocabulary, Zipf zipf, long seed) {
        int warmup = spec.get("warmup_rounds").asInt();
        int rounds = spec.get("rounds").asInt();
        double roundMs = spec.get("round_ms").asDouble();
        int tupleCount = 1 << 16;
        @SuppressWarnings("unchecked")
        List<Object>[] tuples = new List[tupleCount];
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < tupleCount; i++) {
            tuples[i] = List.of(new String(vocabulary.get(zipf.draw(random) - 1)));
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        List<Object> results = new ArrayList<>();
        for (JsonNode config : spec.get("configs")) {
            String kind = config.get("grouping").asText();
            int n = config.get("tasks").asInt();
            double[] weights = uneven(n);
            CustomStreamGrouping g = grouping(kind, targets(n), weights);
            // Calibrate (and start the warm-up): double the calls until a round takes a quarter of roundMs of CPU.
            // The warm-up rounds re-size the rounds, so the measured ones take about roundMs of compiled code.
            long ops = 10_000;
            long spent;
            while (true) {
                long c0 = threads.getCurrentThreadCpuTime();
                blackhole += loop(g, tuples, ops);
                spent = threads.getCurrentThreadCpuTime() - c0;
                if (spent >= roundMs * 1e6 / 4 || ops >= (1L << 40)) {
                    break;
                }
                ops *= 2;
            }
            ops = Math.max(10_000, (long) (ops * roundMs * 1e6 / Math.max(spent, 1)));
            List<Double> cpuNs = new ArrayList<>();
            List<Double> wallNs = new ArrayList<>();
            for (int r = 0; r < warmup + rounds; r++) {
                long c0 = threads.getCurrentThreadCpuTime();
                long w0 = System.nanoTime();
                blackhole += loop(g, tuples, ops);
                long w1 = System.nanoTime();
                long c1 = threads.getCurrentThreadCpuTime();
                if (r >= warmup) {
                    cpuNs.add((c1 - c0) / (double) ops);
                    wallNs.add((w1 - w0) / (double) ops);
                } else {  // the code gets faster as the JIT compiles it: re-size the rounds until measuring starts
                    ops = Math.max(10_000, (long) (ops * roundMs * 1e6 / Math.max(c1 - c0, 1)));
                }
            }
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("grouping", kind);
            row.put("tasks", n);
            row.put("weights", kind.equals("weighted_shuffle") || kind.equals("weighted_fields") ? weights : null);
            row.put("ops_per_round", ops);
            row.put("cpu_ns", cpuNs);
            row.put("wall_ns", wallNs);
            results.add(row);
        }
        return results;
    }

    /** {@code ops} calls of the grouping over the tuples in turn; the sum of the tasks chosen. */
    static long loop(CustomStreamGrouping g, List<Object>[] tuples, long ops) {
        int mask = tuples.length - 1;
        long sink = 0;
        for (long i = 0; i < ops; i++) {
            sink += g.chooseTasks(SOURCE_TASK, tuples[(int) i & mask]).get(0);
        }
        return sink;
    }

    // ---------------------------------------------------------------- part 2: balance over skewed keys

    static List<Object> balance(JsonNode spec, List<String> vocabulary, Zipf zipf, long seed) {
        int streamTuples = spec.get("tuples").asInt();
        int uniformKeys = spec.get("uniform_keys").asInt();
        List<Object> results = new ArrayList<>();
        for (JsonNode c : spec.get("cases")) {
            double[] weights = normalised(doubles(c.get("weights")));
            List<Integer> tasks = targets(weights.length);
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", c.get("name").asText());
            row.put("target", weights);
            row.put("hottest_key_share", zipf.probability(1));
            for (String kind : List.of("storm_fields", "weighted_fields")) {
                CustomStreamGrouping g = grouping(kind, tasks, weights);
                int[] taskOf = new int[vocabulary.size()];
                double[] keys = new double[weights.length];
                double[] exact = new double[weights.length];
                for (int r = 0; r < vocabulary.size(); r++) {
                    taskOf[r] = tasks.indexOf(g.chooseTasks(SOURCE_TASK, List.of(vocabulary.get(r))).get(0));
                    keys[taskOf[r]] += 1.0 / vocabulary.size();
                    exact[taskOf[r]] += zipf.probability(r + 1);
                }
                double[] sampled = new double[weights.length];
                SplittableRandom random = new SplittableRandom(seed);
                for (int i = 0; i < streamTuples; i++) {
                    List<Object> tuple = List.of(vocabulary.get(zipf.draw(random) - 1));
                    sampled[tasks.indexOf(g.chooseTasks(SOURCE_TASK, tuple).get(0))] += 1.0 / streamTuples;
                }
                double[] uniform = new double[weights.length];
                for (int k = 0; k < uniformKeys; k++) {
                    uniform[tasks.indexOf(g.chooseTasks(SOURCE_TASK, List.of("key-" + k)).get(0))] += 1.0 / uniformKeys;
                }
                Map<String, Object> got = new LinkedHashMap<>();
                got.put("tuple_share", sampled);
                got.put("tuple_share_exact", exact);
                got.put("key_share", keys);
                got.put("uniform_key_share", uniform);
                got.put("hottest_key_task", taskOf[0]);
                row.put(kind, got);
            }
            results.add(row);
        }
        return results;
    }

    // ---------------------------------------------------------------- part 3: keys moved by a change

    static List<Object> moves(JsonNode spec, List<String> vocabulary, Zipf zipf) {
        int uniformKeys = spec.get("uniform_keys").asInt();
        List<Object> results = new ArrayList<>();
        for (JsonNode c : spec.get("cases")) {
            double[] before = c.get("before").isNull() ? null : normalised(doubles(c.get("before")));
            double[] after = normalised(doubles(c.get("after")));
            int nBefore = c.has("before_tasks") ? c.get("before_tasks").asInt() : before.length;
            List<Integer> tasksBefore = targets(nBefore);
            List<Integer> tasksAfter = targets(after.length);
            // Null weights before: the weighted grouping without shares, which is Storm's fields grouping.
            CustomStreamGrouping oursBefore = grouping(before == null ? "weighted_fields_unweighted" : "weighted_fields",
                    tasksBefore, before);
            CustomStreamGrouping oursAfter = grouping("weighted_fields", tasksAfter, after);
            CustomStreamGrouping stormBefore = grouping("storm_fields", tasksBefore, null);
            CustomStreamGrouping stormAfter = grouping("storm_fields", tasksAfter, null);
            double[] beforeShares = before != null ? before : even(nBefore);
            double[] oursV = new double[2];
            double[] stormV = new double[2];
            double[] moduloV = new double[2];
            for (int r = 0; r < vocabulary.size(); r++) {
                List<Object> tuple = List.of(vocabulary.get(r));
                double p = zipf.probability(r + 1);
                double k = 1.0 / vocabulary.size();
                if (!oursBefore.chooseTasks(SOURCE_TASK, tuple).equals(oursAfter.chooseTasks(SOURCE_TASK, tuple))) {
                    oursV[0] += k;
                    oursV[1] += p;
                }
                if (!stormBefore.chooseTasks(SOURCE_TASK, tuple).equals(stormAfter.chooseTasks(SOURCE_TASK, tuple))) {
                    stormV[0] += k;
                    stormV[1] += p;
                }
                if (weightedModulo(tuple, beforeShares) != weightedModulo(tuple, after)) {
                    moduloV[0] += k;
                    moduloV[1] += p;
                }
            }
            double oursUniform = 0;
            for (int i = 0; i < uniformKeys; i++) {
                List<Object> tuple = List.of("key-" + i);
                if (!oursBefore.chooseTasks(SOURCE_TASK, tuple).equals(oursAfter.chooseTasks(SOURCE_TASK, tuple))) {
                    oursUniform += 1.0 / uniformKeys;
                }
            }
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", c.get("name").asText());
            row.put("before", before);
            row.put("before_tasks", nBefore);
            row.put("after", after);
            row.put("least", totalVariation(beforeShares, after));
            row.put("weighted_keys", oursV[0]);
            row.put("weighted_tuples", oursV[1]);
            row.put("weighted_uniform_keys", oursUniform);
            row.put("storm_modulo_keys", stormV[0]);
            row.put("storm_modulo_tuples", stormV[1]);
            row.put("weighted_modulo_keys", moduloV[0]);
            row.put("weighted_modulo_tuples", moduloV[1]);
            results.add(row);
        }
        return results;
    }

    /**
     * A modulo over counts: the key's hash (Storm's, {@code TupleUtils.chooseTaskIndex}'s) modulo
     * {@value #MODULO_SLOTS} slots, dealt to the tasks in order, each as many slots as its weight's part.
     */
    static int weightedModulo(List<Object> key, double[] weights) {
        int slot = Math.floorMod(Arrays.deepHashCode(key.toArray()), MODULO_SLOTS);
        double edge = 0;
        for (int i = 0; i < weights.length; i++) {
            edge += weights[i] * MODULO_SLOTS;
            if (slot < Math.round(edge)) {
                return i;
            }
        }
        return weights.length - 1;
    }

    /** Half the sum of |before - after| over the tasks of either (a task absent from one has share 0 there). */
    static double totalVariation(double[] before, double[] after) {
        double sum = 0;
        for (int i = 0; i < Math.max(before.length, after.length); i++) {
            sum += Math.abs((i < before.length ? before[i] : 0) - (i < after.length ? after[i] : 0));
        }
        return sum / 2;
    }

    static double[] even(int n) {
        double[] w = new double[n];
        Arrays.fill(w, 1.0 / n);
        return w;
    }

    static double[] doubles(JsonNode array) {
        double[] d = new double[array.size()];
        for (int i = 0; i < d.length; i++) {
            d[i] = array.get(i).asDouble();
        }
        return d;
    }

    static double[] normalised(double[] w) {
        double total = Arrays.stream(w).sum();
        return Arrays.stream(w).map(x -> x / total).toArray();
    }

    /** Ranks 1..n with probability proportional to 1 / rank^s (as topologies/inputs.py's ZipfSampler). */
    static final class Zipf {
        private final double[] cumulative;

        Zipf(int n, double s) {
            cumulative = new double[n];
            double sum = 0;
            for (int r = 1; r <= n; r++) {
                sum += 1.0 / Math.pow(r, s);
                cumulative[r - 1] = sum;
            }
        }

        double probability(int rank) {
            double previous = rank > 1 ? cumulative[rank - 2] : 0;
            return (cumulative[rank - 1] - previous) / cumulative[cumulative.length - 1];
        }

        int draw(SplittableRandom random) {
            double u = random.nextDouble() * cumulative[cumulative.length - 1];
            int i = Arrays.binarySearch(cumulative, u);
            return (i >= 0 ? i : -i - 1) + 1;
        }
    }
}
