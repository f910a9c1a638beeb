package org.hetsched.storm;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * Applies the contingency a plan stores for a lost machine ({@code options.survive_loss}, docs/operations/plugin.md):
 * in the round Nimbus reports the machine gone, without asking the planner. The lost executors go where the
 * contingency says, each target machine's in one new worker on a free port, so no surviving worker restarts; a
 * survivor the contingency moves (the planner's {@code move_min_gain} allowed it) leaves its worker, which restarts
 * with the rest.
 *
 * <p>Pure: checks that the topology runs as the plan placed it and that exactly one gone machine's executors are
 * missing, then returns the whole change or a {@link PlanFault} saying why the contingency does not apply (the
 * scheduler then asks the planner for a repair, as without a contingency). Storm's system executors the plan does
 * not place (a plan made before submission) go with the lost executors to the target that takes the most of them.
 */
public final class ContingencyPlacement {

    /**
     * The change to make.
     *
     * @param machine   the lost machine whose contingency applies
     * @param inputRate the rate the planner predicts after it, tuples/s (NaN: not given)
     * @param workers   new workers, each with the executors that move onto its machine, in task order
     * @param shrunk    surviving workers that lose an executor the contingency moves: their executors left (empty: the
     *                  worker is freed); they restart
     * @param kept      executors left in their workers
     * @param moved     executors placed anew: the lost ones and the survivors moved
     */
    public record Result(String machine, double inputRate, Map<WorkerSlot, List<ExecutorDetails>> workers,
                         Map<WorkerSlot, List<ExecutorDetails>> shrunk, int kept, int moved) {
    }

    /**
     * How the reason starts (after {@code "hetsched plugin, "}) with which the plugin binds the plan whose contingency it
     * applied, telling the planner; the service reads the lost machine from it and records the loss and the contingency
     * (planner/events.py, {@code CONTINGENCY_REASON}): a change here must change both.
     */
    static final String REASON_START = "contingency for ";
    /** What follows the lost machine's name in that reason. */
    static final String REASON_LOST = " lost";

    private ContingencyPlacement() {
    }

    /**
     * The reason the plugin binds the plan with after applying its contingency, e.g. {@code contingency for m-large-1
     * lost: kept 5 executors where they run, moved 3, predicted 45.12 tuples/s}.
     */
    static String reason(Result result) {
        String rate = Double.isNaN(result.inputRate()) ? ""
                : String.format(Locale.ROOT, ", predicted %.2f tuples/s", result.inputRate());
        return REASON_START + result.machine() + REASON_LOST + ": kept " + result.kept()
                + " executors where they run, moved " + result.moved() + rate
                + (result.shrunk().isEmpty() ? "" : ", " + result.shrunk().size() + " surviving workers restart");
    }

    /**
     * @param running   executors that still run, with their worker slots
     * @param names     supervisor id to its machine name, for every supervisor Nimbus offers now
     * @param machines  supervisors this topology may use
     * @param freePorts supervisor id to its free ports, ascending
     */
    public static Result place(Plan plan, TopologyGraph graph, Map<ExecutorDetails, WorkerSlot> running,
                               Map<String, String> names, List<Machine> machines,
                               Map<String, List<Integer>> freePorts) throws PlanFault {
        if (plan.contingencies().isEmpty()) {
            throw PlanFault.planDoesNotFit("plan " + plan.id() + " stores no contingencies");
        }
        Map<String, Machine> byName = new HashMap<>();
        for (Machine m : machines) {
            byName.put(m.id(), m);
            byName.put(m.name(), m);
        }
        Map<ExecutorDetails, String> target = new HashMap<>();
        List<ExecutorDetails> unplannedSystem = new ArrayList<>();
        Plan.Contingency contingency = null;
        for (TopologyGraph.Component component : graph.components()) {
            List<ExecutorDetails> executors = component.executors();
            for (int i = 0; i < executors.size(); i++) {
                ExecutorDetails executor = executors.get(i);
                String planned = plan.machineOf(component.id(), i);
                WorkerSlot slot = running.get(executor);
                if (planned == null) {
                    if (!component.isSystem()) {
                        throw PlanFault.planDoesNotFit("plan " + plan.id() + " does not place instance " + i + " of '"
                                + component.id() + "'");
                    }
                    if (slot == null) {
                        unplannedSystem.add(executor);
                    }
                    continue;
                }
                if (slot != null) {
                    String there = names.getOrDefault(slot.getNodeId(), slot.getNodeId());
                    if (!there.equals(planned) && !slot.getNodeId().equals(planned)) {
                        throw PlanFault.planDoesNotFit("instance " + i + " of '" + component.id() + "' runs on '"
                                + there + "', not where plan " + plan.id() + " put it ('" + planned + "')");
                    }
                    continue;
                }
                if (names.containsKey(planned) || names.containsValue(planned)) {
                    throw PlanFault.planDoesNotFit("instance " + i + " of '" + component.id() + "' stopped on '"
                            + planned + "', which is still in the cluster: no machine was lost");
                }
                Plan.Contingency c = plan.contingencies().get(planned);
                if (c == null) {
                    throw PlanFault.planDoesNotFit("plan " + plan.id() + " has no contingency for '" + planned + "'");
                }
                if (contingency != null && !contingency.machine().equals(c.machine())) {
                    throw PlanFault.planDoesNotFit("machines '" + contingency.machine() + "' and '" + c.machine()
                            + "' are both lost; a contingency answers one");
                }
                contingency = c;
            }
        }
        if (contingency == null) {
            throw PlanFault.planDoesNotFit("no executor of a lost machine is missing");
        }
        int kept = 0;
        for (TopologyGraph.Component component : graph.components()) {
            List<ExecutorDetails> executors = component.executors();
            for (int i = 0; i < executors.size(); i++) {
                String to = contingency.targetOf(component.id(), i);
                boolean lost = !running.containsKey(executors.get(i)) && plan.machineOf(component.id(), i) != null;
                if (lost && to == null) {
                    throw PlanFault.planDoesNotFit("the contingency for '" + contingency.machine() + "' does not move "
                            + "instance " + i + " of '" + component.id() + "'");
                }
                if (to != null) {
                    if (byName.get(to) == null) {
                        throw PlanFault.planDoesNotFit("the contingency for '" + contingency.machine() + "' moves '"
                                + component.id() + "' onto '" + to + "', which is not a usable supervisor");
                    }
                    target.put(executors.get(i), byName.get(to).id());
                } else if (!lost && running.containsKey(executors.get(i))) {
                    kept++;
                }
            }
        }
        Map<String, List<ExecutorDetails>> moving = new TreeMap<>();
        target.forEach((executor, supervisor) -> moving.computeIfAbsent(supervisor, k -> new ArrayList<>()).add(executor));
        if (!unplannedSystem.isEmpty()) {
            String busiest = moving.entrySet().stream()
                    .max(Comparator.<Map.Entry<String, List<ExecutorDetails>>>comparingInt(e -> e.getValue().size())
                            .thenComparing(Map.Entry::getKey, Comparator.reverseOrder()))
                    .map(Map.Entry::getKey).orElseThrow();
            moving.get(busiest).addAll(unplannedSystem);
        }
        Map<WorkerSlot, List<ExecutorDetails>> workers = new LinkedHashMap<>();
        for (Map.Entry<String, List<ExecutorDetails>> entry : moving.entrySet()) {
            List<Integer> ports = freePorts.getOrDefault(entry.getKey(), List.of());
            if (ports.isEmpty()) {
                throw PlanFault.planDoesNotFit("the contingency for '" + contingency.machine() + "' moves "
                        + entry.getValue().size() + " executors onto '" + names.getOrDefault(entry.getKey(), entry.getKey())
                        + "', which has no free worker slot");
            }
            List<ExecutorDetails> executors = new ArrayList<>(entry.getValue());
            executors.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
            workers.put(new WorkerSlot(entry.getKey(), ports.get(0)), executors);
        }
        Map<WorkerSlot, List<ExecutorDetails>> shrunk = new LinkedHashMap<>();
        Set<WorkerSlot> left = new TreeSet<>(Comparator.comparing(WorkerSlot::getNodeId).thenComparingInt(WorkerSlot::getPort));
        running.forEach((executor, slot) -> {
            if (target.containsKey(executor)) {
                left.add(slot);
            }
        });
        for (WorkerSlot slot : left) {
            List<ExecutorDetails> staying = new ArrayList<>();
            running.forEach((executor, s) -> {
                if (s.equals(slot) && !target.containsKey(executor)) {
                    staying.add(executor);
                }
            });
            staying.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
            shrunk.put(slot, staying);
        }
        int moved = target.size() + unplannedSystem.size();
        return new Result(contingency.machine(), contingency.inputRate(), workers, shrunk, kept, moved);
    }
}
