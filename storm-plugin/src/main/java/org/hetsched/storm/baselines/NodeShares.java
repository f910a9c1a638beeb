package org.hetsched.storm.baselines;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * How many whole supervisor nodes each topology gets: the SPS algorithm (Table 2 of the thesis) and
 * the DPS algorithm (Table 4). Pure; the Resource Allocator (Table 3) turns the counts into slots.
 *
 * <p>Priority levels are visited from the most important (lowest number) down; topologies within a
 * level in the order given (the schedulers pass them by topology id, so rounds agree).
 */
public final class NodeShares {
    private NodeShares() {
    }

    /**
     * What one topology wants, in supervisor nodes.
     *
     * @param id           Storm's topology id
     * @param priority     0 most important (Storm's {@code topology.priority})
     * @param desiredNodes sd: nodes it would like
     * @param minNodes     sm: nodes it needs to run at all (SPS only)
     */
    public record Demand(String id, int priority, int desiredNodes, int minNodes) {
        public Demand {
            if (desiredNodes < 1 || minNodes < 1 || minNodes > desiredNodes) {
                throw new IllegalArgumentException(id + ": need 1 <= minimum nodes <= desired nodes, got "
                        + minNodes + " and " + desiredNodes);
            }
        }
    }

    /**
     * SPS (Table 2): each priority level gets nodes in proportion to what its topologies want
     * (PF_j = min(X, round(C * SP_j / ST))), each topology a proportional part of its level's; when
     * the cluster holds exactly the sum of minimums, every topology gets its minimum.
     *
     * <p>One addition states the thesis's guarantee ("SPS can prevent starvation of the topologies if the
     * cluster can satisfy the minimum ... of all the topologies") outright: when the minimums fit, a
     * topology left below its minimum by rounding is raised to it with nodes taken from the least
     * important topology above its own minimum.
     */
    public static Map<String, Integer> sps(int clusterNodes, List<Demand> demands) {
        Map<String, Integer> shares = new LinkedHashMap<>();
        int minimums = demands.stream().mapToInt(Demand::minNodes).sum();
        if (clusterNodes == minimums) {
            byLevel(demands).values().forEach(level -> level.forEach(d -> shares.put(d.id(), d.minNodes())));
            return shares;
        }
        int wanted = demands.stream().mapToInt(Demand::desiredNodes).sum();
        int left = Math.min(clusterNodes, wanted);
        for (List<Demand> level : byLevel(demands).values()) {
            int levelWants = level.stream().mapToInt(Demand::desiredNodes).sum();
            int levelShare = (int) Math.min(left, Math.round(clusterNodes * (double) levelWants / wanted));
            int levelLeft = levelShare;
            for (Demand d : level) {
                int share = (int) Math.min(levelLeft, Math.round(levelShare * (double) d.desiredNodes() / levelWants));
                shares.put(d.id(), share);
                levelLeft -= share;
            }
            left -= levelShare;
        }
        if (minimums <= clusterNodes) {
            raiseToMinimums(clusterNodes, demands, shares);
        }
        return shares;
    }

    /**
     * DPS (Table 4): levels from the most important take what they want (P = min(X, SP_j)), shared
     * within the level in proportion to what each wants; lower levels get what is left, possibly nothing.
     */
    public static Map<String, Integer> dps(int clusterNodes, List<Demand> demands) {
        Map<String, Integer> shares = new LinkedHashMap<>();
        int wanted = demands.stream().mapToInt(Demand::desiredNodes).sum();
        int left = Math.min(clusterNodes, wanted);
        for (List<Demand> level : byLevel(demands).values()) {
            int levelWants = level.stream().mapToInt(Demand::desiredNodes).sum();
            int levelShare = Math.min(left, levelWants);
            for (Demand d : level) {
                int share = (int) Math.min(left, Math.round(levelShare * (double) d.desiredNodes() / levelWants));
                shares.put(d.id(), share);
                left -= share;
            }
        }
        return shares;
    }

    private static Map<Integer, List<Demand>> byLevel(List<Demand> demands) {
        Map<Integer, List<Demand>> levels = new TreeMap<>();
        demands.forEach(d -> levels.computeIfAbsent(d.priority(), p -> new ArrayList<>()).add(d));
        return levels;
    }

    private static void raiseToMinimums(int clusterNodes, List<Demand> demands, Map<String, Integer> shares) {
        int free = clusterNodes - shares.values().stream().mapToInt(Integer::intValue).sum();
        List<Demand> donors = new ArrayList<>(demands);
        donors.sort(Comparator.comparingInt(Demand::priority).reversed());
        for (Demand needy : demands.stream().sorted(Comparator.comparingInt(Demand::priority)).toList()) {
            while (shares.get(needy.id()) < needy.minNodes()) {
                if (free > 0) {
                    free--;
                } else {
                    Demand donor = donors.stream()
                            .filter(d -> !d.id().equals(needy.id()) && shares.get(d.id()) > d.minNodes())
                            .findFirst().orElse(null);
                    if (donor == null) {
                        break;
                    }
                    shares.merge(donor.id(), -1, Integer::sum);
                }
                shares.merge(needy.id(), 1, Integer::sum);
            }
        }
    }
}
