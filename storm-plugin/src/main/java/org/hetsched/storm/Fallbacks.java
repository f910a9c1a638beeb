package org.hetsched.storm;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Fallback and re-planning after a fallback: what a topology the planner could not place gets (even scheduling, or
 * left unscheduled), and the topologies placed evenly because the planner was unavailable, which are asked for again
 * in the background until a plan comes.
 */
final class Fallbacks {
    /**
     * Why a topology is placed evenly: {@code plannerTopology} when it asked for the planner, {@code retry} when it is
     * planned again once the planner answers, {@code profileWait} when its own profiles cannot plan it.
     */
    record Even(String reason, boolean plannerTopology, boolean retry, ProfileWaits.Wait profileWait) {
    }

    /** A topology placed evenly because the planner was unavailable, planned again in the background. */
    record FellBack(long atMillis, String reason) {
    }

    /** What a fault comes to: placed evenly ({@code even}), or left unscheduled with {@code status}. */
    record Decision(Even even, String status) {
    }

    private final SchedulerSettings.Fallback mode;
    private final Map<String, FellBack> fellBack = new HashMap<>();

    Fallbacks(SchedulerSettings.Fallback mode) {
        this.mode = mode;
    }

    /**
     * The decision for a fault of the planner: a topology its own profiles cannot plan ({@code profileWait}) is placed
     * evenly whatever {@code hetsched.fallback} says; one not admitted is left unscheduled (placed evenly it would take
     * the CPU the admitted ones were promised); any other follows {@code hetsched.fallback}.
     */
    Decision decide(PlanFault fault, boolean replanAllowed, ProfileWaits.Wait profileWait) {
        String reason = fault.reason();
        if (profileWait != null) {
            return new Decision(new Even(profileWait.cause(), true, false, profileWait), null);
        }
        if (fault.notAdmitted()) {
            return new Decision(null, "not admitted (" + reason + "); left unscheduled, the next round asks again");
        }
        if (mode == SchedulerSettings.Fallback.EVEN) {
            return new Decision(new Even(reason, true, fault.plannerUnavailable() && replanAllowed, null), null);
        }
        return new Decision(null, "planner not used (" + reason + "); left unscheduled (" + SchedulerSettings.FALLBACK
                + ": none), the next round asks again");
    }

    /**
     * The status of a topology placed evenly ({@code outcome}: what Storm's even scheduling did); one to be planned
     * again is remembered from now on, any other forgotten.
     */
    String placedEvenly(String topologyId, Even even, String outcome, long nowMillis) {
        String status = (even.plannerTopology() ? "planner not used (" + even.reason() + "); " : even.reason() + "; ")
                + outcome;
        if (!even.retry()) {
            fellBack.remove(topologyId);
            return status;
        }
        fellBack.putIfAbsent(topologyId, new FellBack(nowMillis, even.reason()));
        return status + " at " + HetschedScheduler.clockTime(nowMillis) + "; planned again once the planner answers ("
                + TopologySettings.REPLAN_AFTER_FALLBACK + ")";
    }

    /** Plans a topology running evenly again from now on (placed evenly at {@code atMillis} for {@code reason}). */
    void planAgain(String topologyId, long atMillis, String reason) {
        fellBack.put(topologyId, new FellBack(atMillis, reason));
    }

    boolean contains(String topologyId) {
        return fellBack.containsKey(topologyId);
    }

    FellBack get(String topologyId) {
        return fellBack.get(topologyId);
    }

    /** Placed by plan at last, or not to be asked again. */
    void forget(String topologyId) {
        fellBack.remove(topologyId);
    }

    /** The topologies to ask for again, sorted by id. */
    List<String> ids() {
        return fellBack.keySet().stream().sorted().toList();
    }

    void retainOnly(Predicate<String> running) {
        fellBack.keySet().removeIf(id -> !running.test(id));
    }
}
