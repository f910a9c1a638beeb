package org.hetsched.storm;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * Places only the executors a topology lost (their worker's machine is gone) where a repair plan says, leaving every
 * executor that still runs in its worker: Nimbus restarts no worker it does not have to.
 *
 * <p>Pure. The lost executors going to one machine share one new worker on a free port there; nothing is assigned
 * unless every lost executor fits.
 */
public final class RepairPlacement {

    /**
     * @param workers  the new workers, each with its lost executors in task order
     * @param kept     executors left where they run
     * @param machines names of the machines the lost executors go to
     */
    public record Result(Map<WorkerSlot, List<ExecutorDetails>> workers, int kept, List<String> machines) {
        public int placed() {
            return workers.values().stream().mapToInt(List::size).sum();
        }
    }

    private RepairPlacement() {
    }

    /**
     * The reason (after {@code "hetsched plugin, "}) with which the plugin binds the repair plan it placed, so the plan
     * the topology runs by, and the one the operator is shown, is the repair, e.g. {@code repair placed after losing
     * m-large-1: kept 5 executors where they run, placed 3 on m-small-1, m-small-2}.
     *
     * @param gone the machines gone since the last round, by name (empty: a worker died)
     */
    static String reason(Result result, List<String> gone) {
        return "repair placed" + (gone.isEmpty() ? "" : " after losing " + String.join(", ", gone)) + ": kept "
                + result.kept() + " executors where they run, placed " + result.placed() + " on "
                + String.join(", ", result.machines());
    }

    /**
     * @param running   executors that still run (kept where they are)
     * @param machines  supervisors this topology may use
     * @param freePorts supervisor id to its free ports, ascending
     */
    public static Result place(Plan plan, TopologyGraph graph, Set<ExecutorDetails> running, List<Machine> machines,
                               Map<String, List<Integer>> freePorts) throws PlanFault {
        Map<String, Machine> byName = new HashMap<>();
        for (Machine m : machines) {
            byName.put(m.id(), m);
            byName.put(m.name(), m);
        }
        Map<String, List<ExecutorDetails>> lostByMachine = new TreeMap<>();
        Map<String, Machine> machineById = new HashMap<>();
        int kept = 0;
        for (TopologyGraph.Component component : graph.components()) {
            List<ExecutorDetails> executors = component.executors();
            for (int i = 0; i < executors.size(); i++) {
                ExecutorDetails executor = executors.get(i);
                if (running.contains(executor)) {
                    kept++;
                    continue;
                }
                String name = plan.machineOf(component.id(), i);
                if (name == null) {
                    throw PlanFault.planDoesNotFit("the repair plan does not place instance " + i + " of '"
                            + component.id() + "'");
                }
                Machine machine = byName.get(name);
                if (machine == null) {
                    throw PlanFault.planDoesNotFit("the repair plan puts '" + component.id() + "' on '" + name
                            + "', which is not a usable supervisor");
                }
                machineById.put(machine.id(), machine);
                lostByMachine.computeIfAbsent(machine.id(), k -> new ArrayList<>()).add(executor);
            }
        }
        Map<WorkerSlot, List<ExecutorDetails>> workers = new LinkedHashMap<>();
        List<String> names = new ArrayList<>();
        for (Map.Entry<String, List<ExecutorDetails>> entry : lostByMachine.entrySet()) {
            Machine machine = machineById.get(entry.getKey());
            List<Integer> ports = freePorts.getOrDefault(entry.getKey(), List.of());
            if (ports.isEmpty()) {
                throw PlanFault.planDoesNotFit("the repair plan puts " + entry.getValue().size()
                        + " lost executors on '" + machine.name() + "', which has no free worker slot");
            }
            List<ExecutorDetails> executors = new ArrayList<>(entry.getValue());
            executors.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
            workers.put(new WorkerSlot(machine.id(), ports.get(0)), executors);
            names.add(machine.name());
        }
        return new Result(workers, kept, names);
    }
}
