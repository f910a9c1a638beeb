package org.hetsched.storm;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Builds the PlanRequest body of {@code POST /v1/plans} (docs/api.md) for one topology.
 *
 * <p>Every component is sent with its executor count as a fixed parallelism: the plugin cannot
 * change executor counts, so for Nimbus a plan is a placement. A topology's stored plan id goes
 * along as {@code plan_id}: the planner reuses that plan where it still fits. Each machine type's
 * capacity is the whole machine less the profile set's machine base load for that type, its memory the least
 * {@code supervisor.memory.capacity.mb} of its supervisors. Components' memory and the worker's go along only where
 * the topology sets {@code hetsched.worker.memory.mb} (TopologySettings.plansMemory); its worker budget
 * ({@code hetsched.max.workers}) where set, as {@code topology.max_workers}.
 */
public final class PlanRequests {
    /** Every machine is its whole self: the API's CPU unit is percent of one machine. */
    static final double MACHINE_CAPACITY = 100.0;

    private PlanRequests() {
    }

    public static ObjectNode build(ObjectMapper json, TopologyGraph graph, List<Machine> machines,
                                   TopologySettings settings, Map<String, Double> baseLoad) {
        return build(json, graph, machines, settings, baseLoad, null);
    }

    /** The request, with {@code tenant} where given: the topology is planned on what the other topologies leave. */
    public static ObjectNode build(ObjectMapper json, TopologyGraph graph, List<Machine> machines,
                                   TopologySettings settings, Map<String, Double> baseLoad, TenantSettings tenant) {
        ObjectNode request = json.createObjectNode();

        ObjectNode topology = request.putObject("topology");
        topology.put("name", graph.name());
        ArrayNode components = topology.putArray("components");
        for (TopologyGraph.Component c : graph.components()) {
            ObjectNode component = components.addObject();
            component.put("id", c.id());
            component.put("kind", c.kind());
            if (!c.isSystem() || settings.componentProfiles().containsKey(c.id())) {
                component.put("profile", settings.profileOf(c.id()));
            }
            component.put("parallelism", c.executors().size());
            if (settings.plansMemory() && c.memoryMb() != null) {
                component.put("memory_mb", c.memoryMb());
            }
        }
        if (settings.plansMemory()) {
            topology.put("worker_memory_mb", settings.workerMemoryMb());
        }
        if (settings.maxWorkers() != null) {
            topology.put("max_workers", settings.maxWorkers());
        }
        ArrayNode streams = topology.putArray("streams");
        for (TopologyGraph.Stream s : graph.streams()) {
            streams.addObject().put("from", s.from()).put("to", s.to()).put("grouping", s.grouping());
        }

        ObjectNode cluster = request.putObject("cluster");
        ArrayNode types = cluster.putArray("machine_types");
        for (MachineTypeSummary type : summarize(machines).values()) {
            ObjectNode t = types.addObject();
            t.put("name", type.name);
            t.put("capacity", MACHINE_CAPACITY - baseLoad.getOrDefault(type.name, 0.0));
            if (type.cores != null) {
                t.put("cores", type.cores);
            }
            t.put("slots", Math.max(1, type.slots));
            if (type.memoryMb != null) {
                t.put("memory_mb", type.memoryMb);
            }
        }
        ArrayNode machineList = cluster.putArray("machines");
        for (Machine m : machines) {
            machineList.addObject().put("id", m.name()).put("type", m.type());
        }

        request.putObject("profiles").put("name", settings.profiles());
        if (settings.strategy() != null) {
            request.put("strategy", settings.strategy());
        }
        if (settings.planId() != null) {
            request.put("plan_id", settings.planId());
        }
        if (!settings.options().isEmpty()) {
            request.set("options", json.valueToTree(settings.options()));
        }
        if (tenant != null) {
            tenant.writeTo(request.putObject("tenant"));
        }
        return request;
    }

    /**
     * The body of {@code POST /v1/repairs}: the topology with its executor counts, the cluster, and the instances that
     * keep running where they are ({@code keep}: component, index, machine).
     */
    public static ObjectNode repair(ObjectMapper json, TopologyGraph graph, List<Machine> machines,
                                    TopologySettings settings, Map<String, Double> baseLoad,
                                    Map<String, Map<Integer, String>> kept) {
        ObjectNode request = build(json, graph, machines, settings, baseLoad);
        request.remove("strategy");
        request.remove("plan_id");
        ArrayNode keep = request.putArray("keep");
        kept.forEach((component, instances) -> new TreeMap<>(instances).forEach((index, machine) ->
                keep.addObject().put("component", component).put("index", index).put("machine", machine)));
        return request;
    }

    /**
     * The body of {@code POST /v1/evaluations} for the placement a topology runs in: {@code machineOf} gives each
     * component's instance 0, 1, ... (its executors in task order).
     */
    public static ObjectNode evaluation(ObjectMapper json, TopologyGraph graph, List<Machine> machines,
                                        TopologySettings settings, Map<String, Double> baseLoad,
                                        Map<String, List<String>> machineOf) {
        ObjectNode request = build(json, graph, machines, settings, baseLoad);
        request.remove("strategy");
        request.remove("plan_id");
        ArrayNode assignments = request.putArray("assignments");
        for (TopologyGraph.Component c : graph.components()) {
            for (String machine : machineOf.getOrDefault(c.id(), List.of())) {
                assignments.addObject().put("component", c.id()).put("machine", machine);
            }
        }
        return request;
    }

    /** Machine types seen among the supervisors: slots is the most ports a supervisor of the type has. */
    private static Map<String, MachineTypeSummary> summarize(List<Machine> machines) {
        Map<String, MachineTypeSummary> types = new TreeMap<>();
        for (Machine m : machines) {
            MachineTypeSummary type = types.computeIfAbsent(m.type(), MachineTypeSummary::new);
            type.slots = Math.max(type.slots, m.totalSlots());
            if (type.cores == null) {
                type.cores = m.cores();
            }
            if (m.memoryMb() != null) {
                type.memoryMb = type.memoryMb == null ? m.memoryMb() : Math.min(type.memoryMb, m.memoryMb());
            }
        }
        return types;
    }

    private static final class MachineTypeSummary {
        final String name;
        int slots;
        Double cores;
        /** The least supervisor.memory.capacity.mb of the type's supervisors: a type's memory must fit every one. */
        Double memoryMb;

        MachineTypeSummary(String name) {
            this.name = name;
        }
    }
}
