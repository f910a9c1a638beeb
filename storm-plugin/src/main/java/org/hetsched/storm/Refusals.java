package org.hetsched.storm;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The topologies whose latest planner answer was "not admitted" (a plan request refused with
 * {@code 409 admission_refused}, or an eviction: beside a newcomer, or by a heartbeat answer after a priority change).
 * While the planner cannot be asked (down, slow, erroring, or skipped by the open breaker), such a topology stays
 * unscheduled rather than falling back to even scheduling: placed evenly it would take the CPU the admitted
 * topologies' minimums were promised. Forgotten once the planner answers it otherwise (a plan, or any answer but
 * another refusal) or the topology is gone. Kept in Nimbus's memory only: a Nimbus restart forgets it.
 */
final class Refusals {
    /** When the planner last refused the topology (plugin clock), and why. */
    record Refusal(long atMillis, String reason) {
    }

    private final Map<String, Refusal> refused = new HashMap<>();

    /** The planner refused the topology at {@code atMillis}: remembered until it answers otherwise. */
    void refused(String topologyId, long atMillis, String reason) {
        refused.put(topologyId, new Refusal(atMillis, reason));
    }

    /**
     * The planner's answer for the topology ({@code fault} null: a plan): a refusal is remembered, an unavailable
     * planner changes nothing, anything else (the planner admitted it, or answered with another fault) forgets it.
     */
    void answered(String topologyId, PlanFault fault, long atMillis) {
        if (fault != null && fault.notAdmitted()) {
            refused(topologyId, atMillis, fault.reason());
        } else if (fault == null || !fault.plannerUnavailable()) {
            refused.remove(topologyId);
        }
    }

    Refusal get(String topologyId) {
        return refused.get(topologyId);
    }

    /**
     * The status of a refused topology the planner cannot be asked about now ({@code fault}: why not): it stays
     * unscheduled. Null where the topology was not refused or the fault is not the planner's unavailability: it falls
     * back as any other.
     */
    String whileUnavailable(String topologyId, PlanFault fault) {
        Refusal refusal = refused.get(topologyId);
        if (refusal == null || !fault.plannerUnavailable()) {
            return null;
        }
        return "not admitted at " + HetschedScheduler.clockTime(refusal.atMillis()) + " (" + refusal.reason()
                + "); the planner is unavailable (" + fault.reason() + "), so it stays unscheduled until the planner "
                + "answers";
    }

    void retainOnly(Predicate<String> running) {
        refused.keySet().removeIf(id -> !running.test(id));
    }
}
