package org.hetsched.storm;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.TopologyDetails;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a newcomer's plan does to the topologies already sharing the cluster: those the planner planned again beside
 * it ({@code stats.tenancy.replaced}, each bound to its new plan) are re-placed drained by Nimbus's rebalance; those
 * it leaves without their minimum ({@code stats.tenancy.evicted}) lose their slots in this round, as Storm's RAS
 * evicts, and each later round asks the planner to admit them again. Only topologies Nimbus runs are acted on.
 */
final class Tenancy {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);

    /** A running topology re-placed onto {@code planId}, drained for {@code waitSecs}; {@code status} is its new one. */
    record Replacement(String topologyId, String topologyName, String planId, int waitSecs, String reason,
                       String status) {
    }

    /** A running topology whose slots are freed, not admitted for {@code reason}; {@code status} is its new one. */
    record Eviction(String topologyId, String reason, String status) {
    }

    /** Everything to do beside the newcomer, and what its own status adds. */
    record Actions(List<Replacement> replacements, List<Eviction> evictions, String newcomerStatus) {
    }

    private Tenancy() {
    }

    /**
     * The running topologies the ledger refused at a heartbeat asked at {@code askedMillis} (a priority change made
     * them less important than others' minimums): each loses its slots, unless it asks for no planner, is being
     * planned, or was placed by plan since that heartbeat was asked (its new plan admitted it).
     */
    static List<Eviction> refused(List<Plan.Evicted> refused, long askedMillis, Cluster cluster,
                                  java.util.Map<String, Long> placedAtMillis, java.util.Set<String> planning,
                                  long nowMillis) {
        List<Eviction> evictions = new ArrayList<>();
        for (Plan.Evicted e : refused) {
            TopologyDetails running = cluster.getTopologies().getByName(e.topology());
            if (running == null || !TopologySettings.asksForPlanner(running.getConf())
                    || cluster.getAssignmentById(running.getId()) == null
                    || cluster.getAssignmentById(running.getId()).getExecutors().isEmpty() || planning.contains(running.getId())
                    || placedAtMillis.getOrDefault(running.getId(), Long.MIN_VALUE) >= askedMillis) {
                continue;
            }
            evictions.add(new Eviction(running.getId(), e.reason(), "not admitted at " + HetschedScheduler.clockTime(nowMillis)
                    + " (" + e.reason() + "): evicted, its slots freed; the next round asks again"));
        }
        return evictions;
    }

    static Actions beside(String newcomer, Plan plan, Cluster cluster, long nowMillis) {
        List<Replacement> replacements = new ArrayList<>();
        List<String> replacedSaid = new ArrayList<>();
        String at = HetschedScheduler.clockTime(nowMillis);
        for (Plan.Replaced r : plan.replaced()) {
            TopologyDetails running = cluster.getTopologies().getByName(r.topology());
            String figures = String.format(Locale.ROOT, "plan %s, %.2f -> %.2f tuples/s", r.planId(), r.rateBefore(),
                    r.rateAfter());
            if (running == null) {
                LOG.info("hetsched: the planner planned {} again beside {} ({}), but it does not run here", r.topology(),
                        newcomer, figures);
                continue;
            }
            int wait = TopologySettings.messageTimeoutSecs(running.getConf());
            String status = "planned again beside " + newcomer + " at " + at + " (" + figures
                    + "): re-placing it drained (rebalanced after " + wait + " s)";
            replacements.add(new Replacement(running.getId(), r.topology(), r.planId(), wait,
                    "planned again beside " + newcomer + ": " + figures, status));
            replacedSaid.add(r.topology() + " (" + figures + ")");
        }
        List<Eviction> evictions = new ArrayList<>();
        List<String> evictedSaid = new ArrayList<>();
        for (Plan.Evicted e : plan.evicted()) {
            TopologyDetails running = cluster.getTopologies().getByName(e.topology());
            if (running == null) {
                continue;
            }
            evictions.add(new Eviction(running.getId(), e.reason(), "not admitted beside " + newcomer + " at " + at + " ("
                    + e.reason() + "): evicted, its slots freed; the next round asks again"));
            evictedSaid.add(e.topology());
        }
        String said = (replacedSaid.isEmpty() ? "" : "; re-placing " + String.join(", ", replacedSaid) + " beside it")
                + (evictedSaid.isEmpty() ? "" : "; evicted " + String.join(", ", evictedSaid) + " (not admitted beside it)");
        return new Actions(replacements, evictions, said);
    }
}
