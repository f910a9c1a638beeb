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
 * @param replaced     running topologies the planner planned again beside this one ({@code stats.tenancy.replaced}),
 *                     each bound to its new plan: the plugin re-places them drained
 * @param evicted      running topologies this one leaves without their minimum ({@code stats.tenancy.evicted}),
 *                     released from the planner's ledger: the plugin frees their slots
 * @param contingencies machine name to what to do when that machine is lost ({@code contingencies}, stored with a plan
 *                     made with {@code options.survive_loss}); empty when the plan has none
 */
public record Plan(String id, String strategy, List<InstanceAssignment> assignments, Map<String, String> machineTypes,
                   double inputRate, List<Replaced> replaced, List<Evicted> evicted,
                   Map<String, Contingency> contingencies) {

    public Plan(String id, String strategy, List<InstanceAssignment> assignments, Map<String, String> machineTypes,
                double inputRate, List<Replaced> replaced, List<Evicted> evicted) {
        this(id, strategy, assignments, machineTypes, inputRate, replaced, evicted, Map.of());
    }

    public Plan(String id, String strategy, List<InstanceAssignment> assignments, Map<String, String> machineTypes,
                double inputRate) {
        this(id, strategy, assignments, machineTypes, inputRate, List.of(), List.of());
    }

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

    /** A running topology planned again beside this plan's: its new plan and its predicted rates before and after. */
    public record Replaced(String topology, String planId, double rateBefore, double rateAfter) {
    }

    /** A running topology not admitted beside this plan's, and why. */
    public record Evicted(String topology, String reason) {
    }

    /**
     * What to do when {@code machine} is lost, computed ahead by the planner: the instances to move and where.
     *
     * @param inputRate the rate the planner predicts after the loss with the moves applied, tuples/s (NaN: not given)
     * @param moves     every instance that moves: those of the lost machine, and survivors moved for rate
     */
    public record Contingency(String machine, double inputRate, List<InstanceAssignment> moves) {
        /** The machine instance {@code index} of {@code component} moves to, or null where it stays. */
        public String targetOf(String component, int index) {
            for (InstanceAssignment a : moves) {
                if (a.component().equals(component) && a.index() == index) {
                    return a.machine();
                }
            }
            return null;
        }
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
                machineTypes(body.get("machines")), rate != null && rate.isNumber() ? rate.asDouble() : Double.NaN,
                replaced(body.path("stats").path("tenancy").path("replaced")),
                evicted(body.path("stats").path("tenancy").path("evicted")),
                contingencies(body.path("contingencies")));
    }

    /** {@code contingencies}: absent or null is none; an entry without a text machine or a list of moves is the planner's fault. */
    private static Map<String, Contingency> contingencies(JsonNode list) throws PlanFault {
        if (list.isMissingNode() || list.isNull()) {
            return Map.of();
        }
        if (!list.isArray()) {
            throw malformed("'contingencies' is not a list");
        }
        Map<String, Contingency> byMachine = new java.util.HashMap<>();
        for (int i = 0; i < list.size(); i++) {
            JsonNode c = list.get(i);
            JsonNode machine = c.get("machine");
            JsonNode moves = c.get("moves");
            if (machine == null || !machine.isTextual() || moves == null || !moves.isArray()) {
                throw malformed("contingency " + i + " lacks a text 'machine' or a 'moves' list");
            }
            List<InstanceAssignment> parsed = new ArrayList<>(moves.size());
            for (int j = 0; j < moves.size(); j++) {
                JsonNode m = moves.get(j);
                JsonNode component = m.get("component");
                JsonNode index = m.get("index");
                JsonNode target = m.get("machine");
                if (component == null || !component.isTextual() || target == null || !target.isTextual()
                        || index == null || !index.isIntegralNumber() || !index.canConvertToInt() || index.asInt() < 0) {
                    throw malformed("move " + j + " of contingency " + i + " lacks a text 'component', a text "
                            + "'machine' or an index >= 0");
                }
                parsed.add(new InstanceAssignment(component.asText(), index.asInt(), target.asText()));
            }
            JsonNode rate = c.get("input_rate");
            byMachine.put(machine.asText(), new Contingency(machine.asText(),
                    rate != null && rate.isNumber() ? rate.asDouble() : Double.NaN, List.copyOf(parsed)));
        }
        return Map.copyOf(byMachine);
    }

    /** {@code stats.tenancy.evicted}; an entry without a text topology is the planner's fault. */
    private static List<Evicted> evicted(JsonNode list) throws PlanFault {
        if (absentList(list, "evicted")) {
            return List.of();
        }
        List<Evicted> evicted = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            JsonNode topology = list.get(i).get("topology");
            if (topology == null || !topology.isTextual()) {
                throw malformed("stats.tenancy.evicted entry " + i + " lacks a text 'topology'");
            }
            evicted.add(new Evicted(topology.asText(), list.get(i).path("reason").asText("")));
        }
        return List.copyOf(evicted);
    }

    /** True where {@code stats.tenancy.<name>} is not given; anything else than a list there is the planner's fault. */
    private static boolean absentList(JsonNode list, String name) throws PlanFault {
        if (list.isMissingNode() || list.isNull()) {
            return true;
        }
        if (!list.isArray()) {
            throw malformed("stats.tenancy." + name + " is not a list");
        }
        return false;
    }

    /** {@code stats.tenancy.replaced}; an entry without a text topology and plan id is the planner's fault. */
    private static List<Replaced> replaced(JsonNode list) throws PlanFault {
        if (absentList(list, "replaced")) {
            return List.of();
        }
        List<Replaced> replaced = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            JsonNode r = list.get(i);
            JsonNode topology = r.get("topology");
            JsonNode planId = r.get("plan_id");
            if (topology == null || !topology.isTextual() || planId == null || !planId.isTextual()) {
                throw malformed("stats.tenancy.replaced entry " + i + " lacks a text 'topology' or 'plan_id'");
            }
            replaced.add(new Replaced(topology.asText(), planId.asText(), r.path("rate_before").asDouble(Double.NaN),
                    r.path("rate_after").asDouble(Double.NaN)));
        }
        return List.copyOf(replaced);
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
