package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Map;
import org.apache.storm.scheduler.TopologyDetails;
import org.junit.jupiter.api.Test;

/**
 * The body of {@code POST /v1/repairs}: the topology's own {@code hetsched.options} go with it as they are, so a
 * {@code survive_loss} there has its way (the service keeps the rule of the plan the topology ran by only where the
 * request names none: planner/repair.py, repair_options); strategy and plan id do not.
 */
class RepairRequestTest {

    @Test
    void theRepairCarriesTheTopologysOptionsAsTheyAreAndTheInstancesKept() throws PlanFault {
        Map<String, Object> options = Map.of("survive_loss", Map.of("objective", "nominal", "move_min_gain", 0.1),
                "max_utilization", 0.9);
        TopologyDetails linear = topology("linear-1", linear(2, 3), 1, 2, Map.of(TopologySettings.PROFILES, "lab",
                TopologySettings.STRATEGY, "paper", TopologySettings.PLAN_ID, "p-1", TopologySettings.OPTIONS, options));
        List<Machine> machines = List.of(new Machine("sup-a", "m-a", "host-a", "small", null, 4, List.of(6700)),
                new Machine("sup-b", "m-b", "host-b", "fast", 2.0, 4, List.of(6700)));

        ObjectNode body = PlanRequests.repair(FakePlanner.JSON, TopologyGraph.of(linear), machines,
                TopologySettings.fromConf(linear.getConf()), Map.of(), Map.of("high", Map.of(1, "m-b", 0, "m-a")));

        assertEquals(FakePlanner.JSON.valueToTree(options), body.get("options"));
        assertFalse(body.has("strategy"));
        assertFalse(body.has("plan_id"));
        JsonNode keep = body.get("keep");
        assertEquals(2, keep.size());
        assertEquals("high/0@m-a high/1@m-b", keep.get(0).get("component").asText() + "/" + keep.get(0).get("index")
                + "@" + keep.get(0).get("machine").asText() + " " + keep.get(1).get("component").asText() + "/"
                + keep.get(1).get("index") + "@" + keep.get(1).get("machine").asText());
    }
}
