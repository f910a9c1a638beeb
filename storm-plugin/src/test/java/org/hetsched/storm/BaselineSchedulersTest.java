package org.hetsched.storm;

import static org.hetsched.storm.StormFixtures.byId;
import static org.hetsched.storm.StormFixtures.cluster;
import static org.hetsched.storm.StormFixtures.linear;
import static org.hetsched.storm.StormFixtures.placement;
import static org.hetsched.storm.StormFixtures.slotsBySupervisor;
import static org.hetsched.storm.StormFixtures.supervisor;
import static org.hetsched.storm.StormFixtures.topology;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.storm.Config;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.hetsched.storm.baselines.DpsScheduler;
import org.hetsched.storm.baselines.NodeDemands;
import org.hetsched.storm.baselines.NodeShares;
import org.hetsched.storm.baselines.NodeShares.Demand;
import org.hetsched.storm.baselines.SpsScheduler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** SPS and DPS (the thesis's Tables 2-4) on Storm's own scheduler objects. */
class BaselineSchedulersTest {
    @TempDir
    Path folder;

    private final Map<String, SupervisorDetails> supervisors = byId(
            supervisor("sup-a", "host-a", "large", 4, 2),
            supervisor("sup-b", "host-b", "medium", 2, 2),
            supervisor("sup-c", "host-c", "small", 1, 2));

    private static TopologyDetails tenant(String id, int priority, Map<String, Object> extra) {
        Map<String, Object> conf = new java.util.HashMap<>(extra);
        conf.put(Config.TOPOLOGY_PRIORITY, priority);
        return topology(id, linear(2, 2), 1, 2, conf);
    }

    @Test
    void spsSharesLevelsInProportionToWhatTheyWant() {
        // Table 2 by hand: C=6, ST=10; level 0: PF=min(6, round(6*4/10)=2)=2; level 1: PF=min(4, round(3.6)=4)=4,
        // b=min(4, round(4*4/6)=3)=3, c=min(1, round(4*2/6)=1)=1.
        Map<String, Integer> shares = NodeShares.sps(6, List.of(
                new Demand("a", 0, 4, 1), new Demand("b", 1, 4, 1), new Demand("c", 1, 2, 1)));
        assertEquals(Map.of("a", 2, "b", 3, "c", 1), shares);
    }

    @Test
    void spsGivesEveryMinimumWhenTheClusterHoldsExactlyTheMinimums() {
        Map<String, Integer> shares = NodeShares.sps(3, List.of(
                new Demand("a", 0, 2, 1), new Demand("b", 1, 2, 1), new Demand("c", 2, 3, 1)));
        assertEquals(Map.of("a", 1, "b", 1, "c", 1), shares);
    }

    @Test
    void spsRaisesATopologyRoundedBelowItsMinimumWithANodeOfTheLeastImportantAboveIts() {
        // Table 2 alone: a=min(4, round(4*6/8)=3)=3, b=min(1, round(0.5)=1)=1, c=min(0, ...)=0: c would starve.
        Map<String, Integer> shares = NodeShares.sps(4, List.of(
                new Demand("a", 0, 6, 1), new Demand("b", 1, 1, 1), new Demand("c", 2, 1, 1)));
        assertEquals(Map.of("a", 2, "b", 1, "c", 1), shares);
    }

    @Test
    void dpsLetsHigherLevelsTakeWhatTheyWantFirst() {
        List<Demand> before = List.of(new Demand("linear", 0, 2, 1), new Demand("diamond", 1, 2, 1),
                new Demand("star", 2, 2, 1));
        assertEquals(Map.of("linear", 2, "diamond", 1, "star", 0), NodeShares.dps(3, before));
        // Star at level 0 with Linear: P=min(3, 4)=3, linear=round(1.5)=2, star=min(1, 2)=1; Diamond starves.
        List<Demand> after = List.of(new Demand("linear", 0, 2, 1), new Demand("star", 0, 2, 1),
                new Demand("diamond", 1, 2, 1));
        assertEquals(Map.of("linear", 2, "star", 1, "diamond", 0), NodeShares.dps(3, after));
    }

    @Test
    void spsGivesEachTopologyItsOwnNodesAndDealsItsExecutorsOverItsWorkers() {
        TopologyDetails[] tenants = {
            tenant("linear-1", 0, Map.of(NodeDemands.SPS_NODES, 2)),
            tenant("diamond-2", 1, Map.of(NodeDemands.SPS_NODES, 2)),
            tenant("star-3", 2, Map.of(NodeDemands.SPS_NODES, 2))};
        Cluster cluster = cluster(supervisors, tenants);
        scheduler(new SpsScheduler(), Map.of()).schedule(new Topologies(tenants), cluster);

        Set<String> nodesSeen = new HashSet<>();
        for (TopologyDetails t : tenants) {
            Map<String, ?> nodes = slotsBySupervisor(cluster, t.getId());
            assertEquals(1, nodes.size(), t.getId() + " gets its minimum of one whole node: " + nodes);
            assertTrue(nodesSeen.addAll(nodes.keySet()), "no node is shared: " + nodes);
            assertEquals(2, cluster.getUsedSlotsByTopologyId(t.getId()).size(), "two workers on its node");
            assertEquals(t.getExecutors(), placement(cluster, t.getId()).keySet(), "every executor placed");
        }
        // Most free slots first, then by id: the most important topology gets sup-a, whatever its speed.
        assertEquals(Set.of("sup-a"), slotsBySupervisor(cluster, "linear-1").keySet());
    }

    @Test
    void spsLeavesATopologyAloneWhoseShareDidNotChange() {
        TopologyDetails linear = tenant("linear-1", 0, Map.of(NodeDemands.SPS_NODES, 3));
        Cluster first = cluster(supervisors, linear);
        SpsScheduler sps = scheduler(new SpsScheduler(), Map.of());
        sps.schedule(new Topologies(linear), first);
        var before = placement(first, "linear-1");
        assertEquals(2, slotsBySupervisor(first, "linear-1").size(), "two workers, round robin over two nodes");

        Cluster second = cluster(supervisors, new Topologies(linear), first.getAssignments());
        sps.schedule(new Topologies(linear), second);
        assertEquals(before, placement(second, "linear-1"));
    }

    @Test
    void dpsRePlacesWhenThePriorityFileChanges() throws IOException {
        Path file = folder.resolve("priorities.json");
        TopologyDetails[] tenants = {
            tenant("linear-1", 0, Map.of(NodeDemands.DPS_NODES, 2)),
            tenant("diamond-2", 1, Map.of(NodeDemands.DPS_NODES, 2)),
            tenant("star-3", 2, Map.of(NodeDemands.DPS_NODES, 2))};
        Topologies all = new Topologies(tenants);
        DpsScheduler dps = scheduler(new DpsScheduler(), Map.of(DpsScheduler.PRIORITIES_FILE, file.toString()));
        Cluster first = cluster(supervisors, all, Map.of());
        dps.schedule(all, first);
        assertEquals(2, slotsBySupervisor(first, "linear-1").size());
        assertEquals(1, slotsBySupervisor(first, "diamond-2").size());
        assertTrue(placement(first, "star-3").isEmpty(), "the least important level gets what is left: nothing");
        assertTrue(first.getStatusMap().get("star-3").contains("share 0"), first.getStatusMap().get("star-3"));
        var linearBefore = placement(first, "linear-1");

        Files.writeString(file, "{\"star\": 0}");
        Cluster second = cluster(supervisors, all, first.getAssignments());
        dps.schedule(all, second);
        assertEquals(linearBefore, placement(second, "linear-1"), "Linear's share is still 2: left alone");
        assertEquals(1, slotsBySupervisor(second, "star-3").size());
        assertEquals(tenants[2].getExecutors(), placement(second, "star-3").keySet());
        assertTrue(placement(second, "diamond-2").isEmpty(), "Diamond gave its node up to Star");
    }

    @Test
    void dpsKeepsTheLastPrioritiesWhenTheFileIsMalformed() throws IOException {
        Path file = folder.resolve("priorities.json");
        Files.writeString(file, "{\"star\": 0, \"linear\": 1}");
        TopologyDetails[] tenants = {
            tenant("linear-1", 0, Map.of(NodeDemands.DPS_NODES, 2)),
            tenant("star-3", 2, Map.of(NodeDemands.DPS_NODES, 2))};
        Topologies all = new Topologies(tenants);
        DpsScheduler dps = scheduler(new DpsScheduler(), Map.of(DpsScheduler.PRIORITIES_FILE, file.toString()));
        Cluster first = cluster(supervisors, all, Map.of());
        dps.schedule(all, first);
        var starBefore = placement(first, "star-3");
        assertEquals(2, slotsBySupervisor(first, "star-3").size(), "the file puts star (0) before linear (1)");

        Files.writeString(file, "{\"star\": \"high\"}");
        Cluster second = cluster(supervisors, all, first.getAssignments());
        dps.schedule(all, second);
        assertEquals(starBefore, placement(second, "star-3"));
    }

    @Test
    void aBadSettingLeavesThatTopologyUnscheduledWithAStatusNamingTheKey() {
        TopologyDetails bad = tenant("bad-1", 0, Map.of(NodeDemands.SPS_NODES, 1, NodeDemands.SPS_MIN_NODES, 2));
        TopologyDetails good = tenant("good-2", 1, Map.of());
        Cluster cluster = cluster(supervisors, bad, good);
        scheduler(new SpsScheduler(), Map.of()).schedule(new Topologies(bad, good), cluster);
        assertTrue(placement(cluster, "bad-1").isEmpty());
        assertEquals("SPS cannot schedule it: hetsched.sps.nodes.min (2) must be at most hetsched.sps.nodes (1)",
                cluster.getStatusMap().get("bad-1"));
        assertEquals(good.getExecutors(), placement(cluster, "good-2").keySet());
    }

    @Test
    void settingsRefuseWhatTheyCannotUseInOneSentence() {
        TopologyDetails fraction = tenant("f-1", 0, Map.of(NodeDemands.DPS_NODES, 1.5));
        assertEquals("hetsched.dps.nodes must be a whole number, got '1.5'",
                assertThrows(IllegalArgumentException.class, () -> NodeDemands.dps(fraction, 0)).getMessage());
        TopologyDetails zero = tenant("z-1", 0, Map.of(NodeDemands.SPS_NODES, "0"));
        assertEquals("hetsched.sps.nodes must be between 1 and 10000, got 0",
                assertThrows(IllegalArgumentException.class, () -> NodeDemands.sps(zero, 0)).getMessage());
        IllegalArgumentException relative = assertThrows(IllegalArgumentException.class,
                () -> new DpsScheduler().prepare(Map.of(DpsScheduler.PRIORITIES_FILE, "prio.json"),
                        new StormMetricsRegistry()));
        assertEquals("hetsched.dps.priorities.file must be an absolute path, got 'prio.json'", relative.getMessage());
    }

    private static <S extends org.apache.storm.scheduler.IScheduler> S scheduler(S scheduler, Map<String, Object> conf) {
        scheduler.prepare(conf, new StormMetricsRegistry());
        return scheduler;
    }
}
