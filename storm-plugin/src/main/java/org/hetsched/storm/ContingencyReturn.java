package org.hetsched.storm;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * A machine returns after the plugin applied its contingency ({@link ContingencyPlacement}): the contingency is undone
 * in the round its supervisor joins, without asking the planner and without Nimbus's rebalance. The workers the
 * contingency created (they hold only the executors moved off the machine) are freed, and those executors go into one
 * new worker on the returned supervisor, on a port it did not run workers on when lost where it has one
 * ({@link ReturnedPorts}); every other worker keeps its executors, so it does not restart. The topology then runs as
 * its plan placed it, and the plan's contingencies apply to the next loss again.
 *
 * <p>Pure: checks that the topology still runs exactly as the contingency left it, that the contingency moved no
 * survivor, and that every machine the plan uses is offered again; returns the change or a {@link PlanFault} saying
 * why it cannot be undone (the scheduler then re-plans on the larger cluster as after any join, {@link Upgrades}).
 */
final class ContingencyReturn {

    /**
     * What a contingency the plugin applied left, kept until its machine returns.
     *
     * @param machine the lost machine whose contingency was applied (the plan's name for it)
     * @param plan    the plan whose contingency it was
     * @param after   every executor with its worker slot right after the contingency
     * @param created the new workers the contingency placed, with their executors
     * @param shrunk  how many surviving workers the contingency shrank (moved a survivor out of)
     */
    record Applied(String machine, Plan plan, Map<ExecutorDetails, WorkerSlot> after,
                   Map<WorkerSlot, List<ExecutorDetails>> created, int shrunk) {
        Applied {
            after = Map.copyOf(after);
            created = Map.copyOf(created);
        }

        /** The executors the contingency moved off the lost machine (in its new workers). */
        List<ExecutorDetails> moved() {
            List<ExecutorDetails> moved = new ArrayList<>();
            created.values().forEach(moved::addAll);
            moved.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
            return moved;
        }
    }

    /**
     * The change to make.
     *
     * @param machine   the returned machine
     * @param plan      the plan the topology runs by again
     * @param worker    the one new worker on the returned supervisor
     * @param executors its executors, in task order: those the contingency moved off the machine
     * @param freed     the contingency's workers, freed
     * @param settling  whether the port is one the machine ran workers on when lost (no other was free)
     */
    record Result(String machine, Plan plan, WorkerSlot worker, List<ExecutorDetails> executors, Set<WorkerSlot> freed,
                  boolean settling) {
    }

    /**
     * How the reason starts (after {@code "hetsched plugin, "}) with which the plugin binds the plan it restored; the
     * service records a bind whose reason starts so as {@code machine-returned} (planner/events.py,
     * {@code RETURN_REASON}, as for {@link Upgrades}'s re-placements): a change here must change both.
     */
    static final String REASON_START = "machine joined: ";

    private ContingencyReturn() {
    }

    /** What the contingency {@code result} of {@code plan} left: {@code after}, the placement right after it. */
    static Applied applied(Plan plan, ContingencyPlacement.Result result, Map<ExecutorDetails, WorkerSlot> after) {
        return new Applied(result.machine(), plan, after, result.workers(), result.shrunk().size());
    }

    /**
     * The reason the plugin binds the plan with after moving back, e.g. {@code machine joined: m-large-1 returned,
     * plan p-1's placement restored: moved 3 executors back into one new worker, the contingency's 2 workers freed}.
     */
    static String reason(Result result) {
        return REASON_START + result.machine() + " returned, plan " + result.plan().id() + "'s placement restored: moved "
                + result.executors().size() + " executors back into one new worker, the contingency's "
                + result.freed().size() + " workers freed";
    }

    /** The joined supervisor that is the contingency's machine (by machine name or supervisor id), if one is. */
    static Optional<MachineChanges.Supervisor> returned(Applied applied, List<MachineChanges.Supervisor> joined) {
        return joined.stream()
                .filter(s -> applied.machine().equals(s.name()) || applied.machine().equals(s.id()))
                .findFirst();
    }

    /**
     * @param applied      what the contingency left
     * @param supervisorId the returned machine's supervisor
     * @param executors    every executor of the topology now
     * @param running      the executors assigned now, with their slots
     * @param offered      ids, machine names and hosts of every supervisor Nimbus offers now
     * @param machines     supervisors the topology may use, each one's settling ports last ({@link ReturnedPorts#lastIn})
     * @param settlingPorts the returned supervisor's settling ports
     * @param maxExecutorsPerWorker the topology's limit, or null
     */
    static Result undo(Applied applied, String supervisorId, Set<ExecutorDetails> executors,
                       Map<ExecutorDetails, WorkerSlot> running, Set<String> offered, List<Machine> machines,
                       Set<Integer> settlingPorts, Integer maxExecutorsPerWorker) throws PlanFault {
        if (applied.shrunk() > 0) {
            throw PlanFault.planDoesNotFit("the contingency moved survivors out of " + applied.shrunk()
                    + " workers, so plan " + applied.plan().id() + "'s placement cannot be restored by moving back");
        }
        Set<ExecutorDetails> unassigned = new HashSet<>(executors);
        unassigned.removeAll(running.keySet());
        if (!unassigned.isEmpty()) {
            throw PlanFault.planDoesNotFit(unassigned.size() + " executors are not assigned");
        }
        if (!executors.equals(applied.after().keySet())) {
            throw PlanFault.planDoesNotFit("its executors changed since the contingency");
        }
        int changed = 0;
        for (Map.Entry<ExecutorDetails, WorkerSlot> entry : applied.after().entrySet()) {
            if (!entry.getValue().equals(running.get(entry.getKey()))) {
                changed++;
            }
        }
        if (changed > 0) {
            throw PlanFault.planDoesNotFit(changed + " executors run elsewhere than the contingency left them");
        }
        Set<String> missing = new TreeSet<>();
        for (Plan.InstanceAssignment a : applied.plan().assignments()) {
            if (!offered.contains(a.machine())) {
                missing.add(a.machine());
            }
        }
        if (!missing.isEmpty()) {
            throw PlanFault.planDoesNotFit("plan " + applied.plan().id() + " also uses " + String.join(", ", missing)
                    + ", which Nimbus does not offer");
        }
        List<ExecutorDetails> moved = applied.moved();
        if (moved.isEmpty()) {
            throw PlanFault.planDoesNotFit("the contingency moved no executor");
        }
        if (maxExecutorsPerWorker != null && moved.size() > maxExecutorsPerWorker) {
            throw PlanFault.planDoesNotFit(moved.size() + " executors would share one worker, more than the "
                    + "topology's limit of " + maxExecutorsPerWorker);
        }
        Set<Integer> ownThere = new HashSet<>();
        running.values().forEach(slot -> {
            if (slot.getNodeId().equals(supervisorId)) {
                ownThere.add(slot.getPort());
            }
        });
        Integer port = machines.stream().filter(m -> m.id().equals(supervisorId)).findFirst()
                .flatMap(m -> m.usablePorts().stream().filter(p -> !ownThere.contains(p)).findFirst())
                .orElse(null);
        if (port == null) {
            throw PlanFault.planDoesNotFit("'" + applied.machine() + "' has no free worker slot for the topology");
        }
        return new Result(applied.machine(), applied.plan(), new WorkerSlot(supervisorId, port), moved,
                orderedSlots(applied.created().keySet()), settlingPorts.contains(port));
    }

    private static Set<WorkerSlot> orderedSlots(Set<WorkerSlot> slots) {
        Set<WorkerSlot> ordered = new TreeSet<>(Comparator.comparing(WorkerSlot::getNodeId)
                .thenComparingInt(WorkerSlot::getPort));
        ordered.addAll(slots);
        return ordered;
    }
}
