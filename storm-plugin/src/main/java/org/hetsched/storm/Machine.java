package org.hetsched.storm;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * One supervisor as the planner sees it: its machine type and the worker ports one topology may use there.
 *
 * @param id          the supervisor id
 * @param name        the machine's id in PlanRequests and plans: the supervisor's declared machine id
 *                    ({@code supervisor.scheduler.meta}, key {@code hetsched.machine.id.key}) where it
 *                    has a unique one, so plans made outside Nimbus (by the command line, with the
 *                    cluster's machine ids) fit; else the supervisor id
 * @param host        the supervisor's host name (a stored plan may name the host instead)
 * @param type        machine type, from the supervisor's {@code supervisor.scheduler.meta}
 * @param cores       cores of the machine where declared, else null
 * @param totalSlots  all worker ports of the supervisor
 * @param usablePorts ports free now or already held by the topology being placed, ascending
 * @param memoryMb    the supervisor's {@code supervisor.memory.capacity.mb} (SupervisorDetails.getTotalMemory), or
 *                    null where it declares none
 */
public record Machine(String id, String name, String host, String type, Double cores, int totalSlots, List<Integer> usablePorts,
                      Double memoryMb) {

    /** A machine whose memory is not known (no limit). */
    public Machine(String id, String name, String host, String type, Double cores, int totalSlots, List<Integer> usablePorts) {
        this(id, name, host, type, cores, totalSlots, usablePorts, null);
    }

    /** Scheduler-meta key a supervisor may use to declare its cores. */
    public static final String CORES_KEY = "cores";

    /**
     * Every supervisor with at least one port this topology can use, sorted by id.
     *
     * <p>The topology's own current slots count as usable because a planner topology is always
     * placed whole: its old slots are freed when the new placement is applied.
     */
    public static List<Machine> usableBy(Cluster cluster, String topologyId,
                                         SchedulerSettings settings, TopologySettings topology) {
        List<Machine> machines = new ArrayList<>();
        List<SupervisorDetails> supervisors = new ArrayList<>(cluster.getSupervisors().values());
        supervisors.sort(Comparator.comparing(SupervisorDetails::getId));
        Map<String, Long> declaredIds = supervisors.stream()
                .map(s -> metaValue(s, settings.machineIdKey()))
                .filter(name -> name != null && !name.isBlank())
                .collect(Collectors.groupingBy(name -> name, Collectors.counting()));
        for (SupervisorDetails supervisor : supervisors) {
            if (cluster.isBlackListed(supervisor.getId())) {
                continue;
            }
            TreeSet<Integer> ports = new TreeSet<>(cluster.getAvailablePorts(supervisor));
            for (WorkerSlot own : cluster.getUsedSlotsByTopologyId(topologyId)) {
                if (own.getNodeId().equals(supervisor.getId())) {
                    ports.add(own.getPort());
                }
            }
            if (ports.isEmpty()) {
                continue;
            }
            String type = metaValue(supervisor, settings.machineTypeKey());
            if (type == null || type.isBlank()) {
                type = settings.defaultMachineType();
            }
            Double cores = TopologySettings.positiveNumber(metaValue(supervisor, CORES_KEY));
            if (cores == null) {
                cores = topology.machineTypeCores().get(type);
            }
            String declared = metaValue(supervisor, settings.machineIdKey());
            String name = declared != null && declaredIds.getOrDefault(declared, 0L) == 1 ? declared : supervisor.getId();
            double memory = supervisor.getTotalMemory();
            machines.add(new Machine(supervisor.getId(), name, supervisor.getHost(), type, cores,
                    supervisor.getAllPorts().size(), List.copyOf(ports), memory > 0 ? memory : null));
        }
        return machines;
    }

    /** The machine types of every supervisor Nimbus offers (blacklisted ones left out), free ports or not. */
    public static java.util.Set<String> typesOf(Cluster cluster, SchedulerSettings settings) {
        java.util.Set<String> types = new TreeSet<>();
        for (SupervisorDetails supervisor : cluster.getSupervisors().values()) {
            if (!cluster.isBlackListed(supervisor.getId())) {
                String type = metaValue(supervisor, settings.machineTypeKey());
                types.add(type == null || type.isBlank() ? settings.defaultMachineType() : type);
            }
        }
        return types;
    }

    /** The same machine with its usable ports in the order given (the first ones are used first). */
    public Machine withUsablePorts(List<Integer> ports) {
        return new Machine(id, name, host, type, cores, totalSlots, List.copyOf(ports), memoryMb);
    }

    private static String metaValue(SupervisorDetails supervisor, String key) {
        if (supervisor.getSchedulerMeta() instanceof Map<?, ?> meta) {
            Object value = meta.get(key);
            return value == null ? null : value.toString().trim();
        }
        return null;
    }
}
