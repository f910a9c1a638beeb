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
 * Turns a plan into worker slots: instance i of a component goes to that component's i-th
 * executor in task order, and each supervisor's executors share one worker (one per
 * {@code maxExecutorsPerWorker} executors where the topology sets that limit).
 *
 * <p>Pure: checks the plan against the topology and the usable ports, and either returns the
 * whole placement or a {@link PlanFault} saying why the plan does not fit. Nothing is assigned
 * unless everything fits.
 */
public final class PlanPlacement {

    /**
     * Where every executor goes.
     *
     * @param workers     executors of each worker slot, in task order
     * @param supervisors how many supervisors the placement uses
     */
    public record Result(Map<WorkerSlot, List<ExecutorDetails>> workers, int supervisors) {
    }

    private PlanPlacement() {
    }

    /**
     * @param machines         supervisors with ports this topology may use
     * @param knownSupervisors ids, machine ids and host names of every supervisor in the cluster, usable or not
     */
    public static Result place(Plan plan, TopologyGraph graph, List<Machine> machines,
                               Set<String> knownSupervisors, Integer maxExecutorsPerWorker) throws PlanFault {
        Map<String, Machine> byName = namesOf(machines);
        Map<ExecutorDetails, Machine> executorMachine = new HashMap<>();
        Map<String, Map<Integer, Machine>> planned = instancesByComponent(plan, graph, byName, knownSupervisors);

        List<TopologyGraph.Component> unplannedSystem = new ArrayList<>();
        for (TopologyGraph.Component component : graph.components()) {
            Map<Integer, Machine> instances = planned.get(component.id());
            int executors = component.executors().size();
            if (instances == null && component.isSystem()) {
                unplannedSystem.add(component);
                continue;
            }
            int placed = instances == null ? 0 : instances.size();
            if (placed != executors) {
                throw PlanFault.planDoesNotFit("the plan places " + placed + " instances of '" + component.id()
                        + "' but the topology has " + executors + " executors of it");
            }
            for (int i = 0; i < executors; i++) {
                Machine machine = instances.get(i);
                if (machine == null) {
                    throw PlanFault.planDoesNotFit("the plan has no instance " + i + " of '" + component.id()
                            + "' (indices must run from 0 to " + (executors - 1) + ")");
                }
                executorMachine.put(component.executors().get(i), machine);
            }
        }
        spreadSystemComponents(unplannedSystem, executorMachine, machines);
        return intoWorkers(executorMachine, maxExecutorsPerWorker);
    }

    /** Component -> instance index -> machine, checking every name the plan uses. */
    private static Map<String, Map<Integer, Machine>> instancesByComponent(
            Plan plan, TopologyGraph graph, Map<String, Machine> byName, Set<String> knownSupervisors) throws PlanFault {
        Map<String, Map<Integer, Machine>> planned = new HashMap<>();
        for (Plan.InstanceAssignment a : plan.assignments()) {
            if (graph.component(a.component()) == null) {
                throw PlanFault.planDoesNotFit("the plan places component '" + a.component()
                        + "', which the topology does not have");
            }
            Machine machine = byName.get(a.machine());
            if (machine == null) {
                throw PlanFault.planDoesNotFit(knownSupervisors.contains(a.machine())
                        ? "the plan puts '" + a.component() + "' on supervisor '" + a.machine()
                                + "', which has no free worker slot"
                        : "the plan names supervisor '" + a.machine() + "', which is not in the cluster");
            }
            String plannedType = plan.machineTypes().get(a.machine());
            // A type named by the machine's own id is that machine alone (plans pinned to machines, such as
            // the profiling collector's): its id is the check, not its declared type.
            if (plannedType != null && !plannedType.equals(a.machine()) && !plannedType.equals(machine.type())) {
                throw PlanFault.planDoesNotFit("the plan was made for machine '" + a.machine() + "' of type "
                        + plannedType + ", which is now of type " + machine.type());
            }
            if (planned.computeIfAbsent(a.component(), k -> new HashMap<>()).put(a.index(), machine) != null) {
                throw PlanFault.planDoesNotFit("the plan places instance " + a.index() + " of '"
                        + a.component() + "' twice");
            }
        }
        return planned;
    }

    /** A plan names a machine by its planner name, its supervisor id or, where unambiguous, its host name. */
    private static Map<String, Machine> namesOf(List<Machine> machines) {
        Map<String, Machine> byName = new HashMap<>();
        Map<String, Integer> hostCount = new HashMap<>();
        for (Machine m : machines) {
            if (m.host() != null) {
                hostCount.merge(m.host(), 1, Integer::sum);
            }
        }
        for (Machine m : machines) {
            if (m.host() != null && hostCount.get(m.host()) == 1) {
                byName.putIfAbsent(m.host(), m);
            }
        }
        for (Machine m : machines) {
            byName.put(m.id(), m);
        }
        for (Machine m : machines) {
            byName.put(m.name(), m);
        }
        return byName;
    }

    /**
     * Storm's system executors (ackers, metrics consumers) the plan left out, for instance a stored
     * plan made before submission: dealt round-robin over the supervisors the plan uses.
     */
    private static void spreadSystemComponents(List<TopologyGraph.Component> components,
                                               Map<ExecutorDetails, Machine> executorMachine,
                                               List<Machine> machines) {
        List<Machine> used = executorMachine.values().stream().distinct()
                .sorted(Comparator.comparing(Machine::name)).toList();
        List<Machine> targets = used.isEmpty() ? machines : used;
        int next = 0;
        for (TopologyGraph.Component component : components) {
            for (ExecutorDetails executor : component.executors()) {
                executorMachine.put(executor, targets.get(next++ % targets.size()));
            }
        }
    }

    private static Result intoWorkers(Map<ExecutorDetails, Machine> executorMachine, Integer maxExecutorsPerWorker)
            throws PlanFault {
        Map<String, List<ExecutorDetails>> bySupervisor = new TreeMap<>();
        Map<String, Machine> machineById = new HashMap<>();
        executorMachine.forEach((executor, machine) -> {
            bySupervisor.computeIfAbsent(machine.id(), k -> new ArrayList<>()).add(executor);
            machineById.put(machine.id(), machine);
        });
        Map<WorkerSlot, List<ExecutorDetails>> workers = new LinkedHashMap<>();
        for (Map.Entry<String, List<ExecutorDetails>> entry : bySupervisor.entrySet()) {
            Machine machine = machineById.get(entry.getKey());
            List<ExecutorDetails> executors = entry.getValue();
            executors.sort(Comparator.comparingInt(ExecutorDetails::getStartTask));
            int needed = maxExecutorsPerWorker == null ? 1
                    : (executors.size() + maxExecutorsPerWorker - 1) / maxExecutorsPerWorker;
            if (needed > machine.usablePorts().size()) {
                throw PlanFault.planDoesNotFit("the plan puts " + executors.size() + " executors on supervisor '"
                        + machine.name() + "', which needs " + needed + " worker slots but has "
                        + machine.usablePorts().size() + " free");
            }
            List<List<ExecutorDetails>> slots = new ArrayList<>();
            for (int i = 0; i < needed; i++) {
                slots.add(new ArrayList<>());
            }
            for (int i = 0; i < executors.size(); i++) {
                slots.get(i % needed).add(executors.get(i));
            }
            for (int i = 0; i < needed; i++) {
                workers.put(new WorkerSlot(machine.id(), machine.usablePorts().get(i)), slots.get(i));
            }
        }
        return new Result(workers, bySupervisor.size());
    }
}
