package org.hetsched.storm;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The part of the planner's Plan (docs/api.md) that the plugin acts on: where every instance goes.
 *
 * @param id          the stored plan's id, or null
 * @param strategy    the strategy that made it, or null
 * @param assignments  one entry per instance
 * @param machineTypes machine name to the machine type the plan was made for ({@code machines[].type}); empty when
 *                     the plan records none
 * @param inputRate    the plan's predicted largest sustainable input rate R, tuples/s (NaN when it gives none)
 */
public record Plan(String id, String strategy, List<InstanceAssignment> assignments, Map<String, String> machineTypes,
                   double inputRate) {

    public Plan(String id, String strategy, List<InstanceAssignment> assignments) {
        this(id, strategy, assignments, Map.of());
    }

    public Plan(String id, String strategy, List<InstanceAssignment> assignments, Map<String, String> machineTypes) {
        this(id, strategy, assignments, machineTypes, Double.NaN);
    }

    /** The machine of instance {@code index} of {@code component}, or null when the plan does not place it. */
    public String machineOf(String component, int index) {
        for (InstanceAssignment a : assignments) {
            if (a.component().equals(component) && a.index() == index) {
                return a.machine();
            }
        }
        return null;
    }

    /** Instance {@code index} of {@code component} runs on supervisor (or host) {@code machine}. */
    public record InstanceAssignment(String component, int index, String machine) {
    }

    /** Reads a Plan; anything that is not one is the planner's fault. */
    public static Plan parse(JsonNode body) throws PlanFault {
        if (body == null || !body.isObject()) {
            throw malformed("the answer is not a JSON object");
        }
        JsonNode list = body.get("assignments");
        if (list == null || !list.isArray()) {
            throw malformed("the answer has no 'assignments' list");
        }
        List<InstanceAssignment> assignments = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            JsonNode a = list.get(i);
            JsonNode component = a.get("component");
            JsonNode index = a.get("index");
            JsonNode machine = a.get("machine");
            if (component == null || !component.isTextual() || machine == null || !machine.isTextual()
                    || index == null || !index.canConvertToInt() || !index.isIntegralNumber() || index.asInt() < 0) {
                throw malformed("assignment " + i + " lacks a text 'component', a text 'machine' or an index >= 0");
            }
            assignments.add(new InstanceAssignment(component.asText(), index.asInt(), machine.asText()));
        }
        JsonNode rate = body.get("input_rate");
        return new Plan(text(body.get("id")), text(body.get("strategy")), List.copyOf(assignments),
                machineTypes(body.get("machines")), rate != null && rate.isNumber() ? rate.asDouble() : Double.NaN);
    }

    /** The {@code id -> type} of each machine a plan records; entries without both are skipped (the field is informative). */
    private static Map<String, String> machineTypes(JsonNode machines) {
        Map<String, String> types = new java.util.HashMap<>();
        if (machines != null && machines.isArray()) {
            for (JsonNode m : machines) {
                JsonNode id = m.get("id");
                JsonNode type = m.get("type");
                if (id != null && id.isTextual() && type != null && type.isTextual()) {
                    types.put(id.asText(), type.asText());
                }
            }
        }
        return Map.copyOf(types);
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static PlanFault malformed(String what) {
        return PlanFault.plannerFailed("malformed plan from the planner: " + what);
    }
}
