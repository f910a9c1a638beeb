package org.hetsched.storm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.storm.generated.Bolt;
import org.apache.storm.generated.GlobalStreamId;
import org.apache.storm.generated.Grouping;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.TopologyDetails;

/**
 * A topology as the planner needs it: components with their executors in task order, and the
 * streams between them with the planner's grouping names.
 *
 * @param name       the topology's name
 * @param components every component with executors, system components ({@code __acker}, ...) included,
 *                   ordered by id
 * @param streams    one stream per (from, to) pair of the user topology
 */
public record TopologyGraph(String name, List<Component> components, List<Stream> streams) {

    /** Components whose id starts with this are Storm's own (acker, metrics consumers, event logger). */
    public static final String SYSTEM_PREFIX = "__";

    private static final String PARTIAL_KEY_GROUPING = "org.apache.storm.grouping.PartialKeyGrouping";

    /**
     * A spout or bolt and its executors.
     *
     * @param executors ordered by start task: the plan's instance i runs on {@code executors.get(i)}
     * @param memoryMb  memory one executor asks for, MB: Storm's on-heap plus off-heap request
     *                  (TopologyDetails.getTotalMemReqTask, what RAS schedules by), or null where unknown
     */
    public record Component(String id, String kind, List<ExecutorDetails> executors, Double memoryMb) {

        public Component(String id, String kind, List<ExecutorDetails> executors) {
            this(id, kind, executors, null);
        }

        public boolean isSystem() {
            return id.startsWith(SYSTEM_PREFIX);
        }
    }

    /** A stream from one component to another; grouping is one of the planner's names. */
    public record Stream(String from, String to, String grouping) {
    }

    public static TopologyGraph of(TopologyDetails topology) throws PlanFault {
        StormTopology storm = topology.getTopology();
        if (storm == null) {
            throw PlanFault.topologyConf("Nimbus gave no topology structure for " + topology.getId());
        }
        Map<String, List<ExecutorDetails>> byComponent = new TreeMap<>();
        topology.getExecutorToComponent().forEach(
                (executor, component) -> byComponent.computeIfAbsent(component, k -> new ArrayList<>()).add(executor));
        List<Component> components = new ArrayList<>();
        byComponent.forEach((id, executors) -> {
            executors.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
            String kind = storm.get_spouts() != null && storm.get_spouts().containsKey(id) ? "spout" : "bolt";
            components.add(new Component(id, kind, List.copyOf(executors), memoryOf(topology, executors)));
        });

        Map<List<String>, Stream> streams = new LinkedHashMap<>();
        Map<String, Bolt> bolts = storm.get_bolts() == null ? Map.of() : new TreeMap<>(storm.get_bolts());
        for (Map.Entry<String, Bolt> bolt : bolts.entrySet()) {
            if (!byComponent.containsKey(bolt.getKey())) {
                continue;
            }
            Map<GlobalStreamId, Grouping> inputs = bolt.getValue().get_common().get_inputs();
            List<Map.Entry<GlobalStreamId, Grouping>> ordered = new ArrayList<>(inputs.entrySet());
            ordered.sort(Comparator.comparing((Map.Entry<GlobalStreamId, Grouping> e) -> e.getKey().get_componentId())
                    .thenComparing(e -> e.getKey().get_streamId()));
            for (Map.Entry<GlobalStreamId, Grouping> input : ordered) {
                String from = input.getKey().get_componentId();
                if (byComponent.containsKey(from)) {
                    streams.putIfAbsent(List.of(from, bolt.getKey()),
                            new Stream(from, bolt.getKey(), groupingName(input.getValue())));
                }
            }
        }
        return new TopologyGraph(topology.getName(), List.copyOf(components), List.copyOf(streams.values()));
    }

    /** Storm's memory request of one executor of a component, MB: the most of its executors (null where unknown). */
    private static Double memoryOf(TopologyDetails topology, List<ExecutorDetails> executors) {
        Double most = null;
        for (ExecutorDetails executor : executors) {
            Double mb;
            try {
                mb = topology.getTotalMemReqTask(executor);
            } catch (RuntimeException e) {
                return null; // a topology without resource information: memory unknown
            }
            if (mb == null || !Double.isFinite(mb) || mb < 0) {
                return null;
            }
            most = most == null ? mb : Math.max(most, mb);
        }
        return most;
    }

    /**
     * The planner's name for a Storm grouping.
     *
     * <p>A custom grouping is unknown to the planner and split evenly like shuffle, except Storm's own
     * partial key grouping, recognised by its class name in the serialized form (never deserialized
     * here: Nimbus must not run code from a topology jar).
     */
    static String groupingName(Grouping grouping) {
        if (grouping == null || grouping.getSetField() == null) {
            return "shuffle";
        }
        return switch (grouping.getSetField()) {
            case FIELDS -> grouping.get_fields().isEmpty() ? "global" : "fields";
            case SHUFFLE -> "shuffle";
            case ALL -> "all";
            case NONE -> "none";
            case DIRECT -> "direct";
            case LOCAL_OR_SHUFFLE -> "local_or_shuffle";
            case CUSTOM_SERIALIZED -> new String(grouping.get_custom_serialized(), StandardCharsets.ISO_8859_1)
                    .contains(PARTIAL_KEY_GROUPING) ? "partial_key" : "shuffle";
            case CUSTOM_OBJECT -> "shuffle";
        };
    }

    public Component component(String id) {
        for (Component c : components) {
            if (c.id().equals(id)) {
                return c;
            }
        }
        return null;
    }

    public int executorCount() {
        return components.stream().mapToInt(c -> c.executors().size()).sum();
    }

    public Set<String> componentIds() {
        Set<String> ids = new LinkedHashSet<>();
        components.forEach(c -> ids.add(c.id()));
        return ids;
    }
}
