package org.hetsched.storm;

/**
 * Why a topology could not be placed by the planner: the one reason that goes into the log line
 * and the topology's status.
 *
 * <p>{@link #countsAgainstPlanner()} tells the circuit breaker whether the planner itself is
 * failing (down, slow, erroring, answering nonsense), as opposed to a fault of this one topology
 * or cluster (a missing profile set, a plan that no longer fits).
 */
public final class PlanFault extends Exception {
    private final boolean countsAgainstPlanner;
    private final boolean plannerUnavailable;
    private boolean notAdmitted;
    private ProfileGap profileGap;

    private PlanFault(String reason, boolean countsAgainstPlanner) {
        this(reason, countsAgainstPlanner, countsAgainstPlanner);
    }

    private PlanFault(String reason, boolean countsAgainstPlanner, boolean plannerUnavailable) {
        super(reason);
        this.countsAgainstPlanner = countsAgainstPlanner;
        this.plannerUnavailable = plannerUnavailable;
    }

    /** The planner is down, too slow, erroring or answering nonsense. */
    public static PlanFault plannerFailed(String reason) {
        return new PlanFault(reason, true);
    }

    /** The planner is up but refused this request (unknown profile set or plan, a request it finds wrong). */
    public static PlanFault plannerRefused(String reason) {
        return new PlanFault(reason, false);
    }

    /** The planner was not asked, because the circuit breaker is open. */
    public static PlanFault plannerSkipped(String reason) {
        return new PlanFault(reason, false, true);
    }

    /** The stored profile set is unusable for planning on this cluster (a bad machine base load). */
    public static PlanFault badProfileSet(String reason) {
        return new PlanFault(reason, false);
    }

    /** The plan cannot be carried out on this cluster as it is now. */
    public static PlanFault planDoesNotFit(String reason) {
        return new PlanFault(reason, false);
    }

    /** The planner token cannot be used (its file is missing, empty or readable by others); the planner is not asked. */
    public static PlanFault badToken(String reason) {
        return new PlanFault(reason, false);
    }

    /** The planner does not admit the topology: its minimum rate does not fit beside more important topologies'. */
    public static PlanFault notAdmitted(String reason) {
        PlanFault fault = new PlanFault(reason, false);
        fault.notAdmitted = true;
        return fault;
    }

    /** Left unscheduled, not placed evenly: an evenly placed topology would take the CPU the admitted ones were promised. */
    public boolean notAdmitted() {
        return notAdmitted;
    }

    /**
     * The topology's own profiles cannot plan it: its set is not stored, or lacks pairs it needs. It is placed evenly
     * and asked for again only once the set or the cluster's machine types change.
     */
    public static PlanFault profilesMissing(String reason, ProfileGap gap) {
        PlanFault fault = new PlanFault(reason, false);
        fault.profileGap = gap;
        return fault;
    }

    /** What the topology's profiles lack, or null when the fault is of another kind. */
    public ProfileGap profileGap() {
        return profileGap;
    }

    /** A hetsched.* value in the topology conf is malformed. */
    public static PlanFault topologyConf(String reason) {
        return new PlanFault(reason, false);
    }

    public boolean countsAgainstPlanner() {
        return countsAgainstPlanner;
    }

    /**
     * The planner could not be asked or did not answer (down, slow, erroring, skipped by the breaker): asking again
     * later may succeed, so a topology placed evenly for this reason is planned again once the planner answers.
     */
    public boolean plannerUnavailable() {
        return plannerUnavailable;
    }

    public String reason() {
        return getMessage();
    }
}
