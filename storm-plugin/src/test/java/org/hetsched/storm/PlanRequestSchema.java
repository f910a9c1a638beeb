package org.hetsched.storm;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Set;

/**
 * The basic rules of the service's PlanRequest (planner/model.py and planner/validation.py) that
 * {@link FakePlanner} enforces, so that a JUnit test whose plugin sends a body the service would
 * refuse gets the service's 422 instead of a plan.
 *
 * <p>Basic on purpose: field names (the service forbids unknown ones), required fields, types, ranges
 * and references between components, streams and machine types. The whole schema and the planner's
 * own validation are applied to the plugin's real requests by tests/test_plugin_contract.py, from the
 * files {@link PlanRequestContractTest} writes.
 */
final class PlanRequestSchema {
    private static final Set<String> REQUEST = Set.of("topology", "cluster", "profiles", "strategy", "options", "plan_id", "tenant");
    private static final Set<String> TOPOLOGY = Set.of("name", "components", "streams", "worker_memory_mb", "max_workers");
    private static final Set<String> COMPONENT = Set.of("id", "kind", "profile", "parallelism", "weight", "memory_mb");
    private static final Set<String> STREAM = Set.of("from", "to", "grouping");
    private static final Set<String> GROUPINGS = Set.of(
            "shuffle", "local_or_shuffle", "fields", "partial_key", "all", "global", "none", "direct");
    private static final Set<String> CLUSTER = Set.of("machine_types", "machines");
    private static final Set<String> MACHINE_TYPE = Set.of("name", "capacity", "cores", "slots", "memory_mb");
    private static final Set<String> MACHINE = Set.of("id", "type");
    private static final Set<String> PROFILES = Set.of("name", "entries");
    private static final Set<String> OPTIONS = Set.of(
            "initial_rate", "max_utilization", "tolerance", "max_iterations", "reference_machine_type", "time_limit_s");

    private PlanRequestSchema() {
    }

    /** The first fault of a PlanRequest body as one sentence, or null where it has none of the basic faults. */
    static String fault(JsonNode request) {
        try {
            check(request);
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    private static void check(JsonNode request) {
        fields(request, "the request", REQUEST, Set.of("topology", "cluster", "profiles"));
        optionalName(request, "strategy", "the request");
        optionalName(request, "plan_id", "the request");

        JsonNode topology = request.get("topology");
        fields(topology, "topology", TOPOLOGY, Set.of("name", "components"));
        name(topology, "name", "topology");
        if (topology.has("max_workers")) {
            require(topology.get("max_workers").isIntegralNumber() && topology.get("max_workers").asLong() >= 1,
                    "topology has max_workers " + topology.get("max_workers") + ", not a whole number of at least 1");
        }
        Set<String> components = new HashSet<>();
        for (JsonNode c : nonEmptyArray(topology, "components", "topology")) {
            fields(c, "a component", COMPONENT, Set.of("id", "kind"));
            String id = name(c, "id", "a component");
            String kind = name(c, "kind", "component " + id);
            require(kind.equals("spout") || kind.equals("bolt"), "component " + id + " has kind " + kind + ", not spout or bolt");
            optionalName(c, "profile", "component " + id);
            require(c.has("profile") || id.startsWith(TopologyGraph.SYSTEM_PREFIX), "component " + id + " has no profile key");
            if (c.has("parallelism")) {
                require(c.get("parallelism").isIntegralNumber() && c.get("parallelism").asLong() >= 1,
                        "component " + id + " has parallelism " + c.get("parallelism") + ", not a whole number of at least 1");
            }
            if (c.has("weight")) {
                positive(c, "weight", "component " + id);
            }
            require(components.add(id), "the topology declares component " + id + " twice");
        }
        for (JsonNode s : array(topology, "streams", "topology")) {
            fields(s, "a stream", STREAM, Set.of("from", "to"));
            String from = name(s, "from", "a stream");
            String to = name(s, "to", "a stream");
            require(components.contains(from) && components.contains(to), "the stream " + from + " -> " + to + " names an unknown component");
            if (s.has("grouping")) {
                require(GROUPINGS.contains(s.get("grouping").asText()), "the stream " + from + " -> " + to
                        + " has grouping " + s.get("grouping") + ", not one of " + GROUPINGS);
            }
        }

        JsonNode cluster = request.get("cluster");
        fields(cluster, "cluster", CLUSTER, CLUSTER);
        Set<String> types = new HashSet<>();
        for (JsonNode t : nonEmptyArray(cluster, "machine_types", "cluster")) {
            fields(t, "a machine type", MACHINE_TYPE, Set.of("name"));
            String type = name(t, "name", "a machine type");
            if (t.has("capacity")) {
                positive(t, "capacity", "machine type " + type);
            }
            if (t.has("cores")) {
                positive(t, "cores", "machine type " + type);
            }
            if (t.has("slots")) {
                require(t.get("slots").isIntegralNumber() && t.get("slots").asLong() >= 1,
                        "machine type " + type + " has slots " + t.get("slots") + ", not a whole number of at least 1");
            }
            require(types.add(type), "the cluster declares machine type " + type + " twice");
        }
        Set<String> machines = new HashSet<>();
        for (JsonNode m : nonEmptyArray(cluster, "machines", "cluster")) {
            fields(m, "a machine", MACHINE, MACHINE);
            String id = name(m, "id", "a machine");
            String type = name(m, "type", "machine " + id);
            require(types.contains(type), "machine " + id + " is of unknown machine type " + type);
            require(machines.add(id), "the cluster declares machine " + id + " twice");
        }

        JsonNode profiles = request.get("profiles");
        fields(profiles, "profiles", PROFILES, Set.of());
        require(profiles.has("name") != profiles.has("entries"),
                "profiles must give exactly one of 'name' (a stored profile set) or 'entries' (inline)");
        optionalName(profiles, "name", "profiles");

        if (request.has("options")) {
            fields(request.get("options"), "options", OPTIONS, Set.of());
        }
    }

    private static void fields(JsonNode node, String what, Set<String> allowed, Set<String> required) {
        require(node != null && node.isObject(), what + " is not a JSON object");
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String field = names.next();
            require(allowed.contains(field), what + " has the unknown field '" + field + "'");
        }
        for (String field : required) {
            require(node.has(field) && !node.get(field).isNull(), what + " lacks the field '" + field + "'");
        }
    }

    private static String name(JsonNode node, String field, String what) {
        JsonNode value = node.get(field);
        require(value != null && value.isTextual() && !value.asText().isEmpty() && value.asText().length() <= 200,
                what + " has " + field + " " + value + ", not a name of 1 to 200 characters");
        return value.asText();
    }

    private static void optionalName(JsonNode node, String field, String what) {
        if (node.has(field) && !node.get(field).isNull()) {
            name(node, field, what);
        }
    }

    private static void positive(JsonNode node, String field, String what) {
        JsonNode value = node.get(field);
        require(value.isNumber() && value.asDouble() > 0 && Double.isFinite(value.asDouble()),
                what + " has " + field + " " + value + ", not a positive number");
    }

    private static JsonNode array(JsonNode node, String field, String what) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            return FakePlanner.JSON.createArrayNode();
        }
        require(value.isArray(), what + " has " + field + " that is not a list");
        return value;
    }

    private static JsonNode nonEmptyArray(JsonNode node, String field, String what) {
        JsonNode value = array(node, field, what);
        require(!value.isEmpty(), what + " has no " + field);
        return value;
    }

    private static void require(boolean holds, String fault) {
        if (!holds) {
            throw new IllegalArgumentException(fault);
        }
    }
}
