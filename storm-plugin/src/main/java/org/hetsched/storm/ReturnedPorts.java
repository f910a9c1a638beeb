package org.hetsched.storm;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * The ports a returned supervisor ran workers on when it was lost, put last among its usable ports for a while.
 *
 * <p>A supervisor back after a power cut relaunches the workers of its local state at once; a moment later Nimbus's
 * assignment (which moved them away) arrives and the supervisor kills them, but one that has not yet written its
 * pid is forgotten, not killed. That orphan holds its port until it sees its assignment gone and halts, 3 s after.
 * A new worker placed on the same port meanwhile dies with {@code BindException: Address already in use}, and Nimbus
 * places it again only after {@code nimbus.task.launch.secs} (measured: about 150 s without throughput). So plans
 * put a returned supervisor's new workers on its other ports first, for {@code hetsched.returned.ports.settle.secs}.
 */
final class ReturnedPorts {
    private final Duration settle;
    /** Ports with workers at the end of the last round, per supervisor still there. */
    private final Map<String, Set<Integer>> inUse = new HashMap<>();
    /** Ports in use when each lost supervisor went. */
    private final Map<String, Set<Integer>> lost = new HashMap<>();
    private final Map<String, Settling> settling = new HashMap<>();

    private record Settling(Set<Integer> ports, long untilMillis) {
    }

    ReturnedPorts(Duration settle) {
        this.settle = settle;
    }

    /** Records the ports in use on every supervisor of the round (a lost one keeps what it had). */
    void seen(Cluster cluster) {
        Map<String, Set<Integer>> now = new HashMap<>();
        for (SchedulerAssignment assignment : cluster.getAssignments().values()) {
            for (WorkerSlot slot : assignment.getSlots()) {
                now.computeIfAbsent(slot.getNodeId(), id -> new TreeSet<>()).add(slot.getPort());
            }
        }
        for (String id : cluster.getSupervisors().keySet()) {
            inUse.put(id, now.getOrDefault(id, Set.of()));
        }
    }

    void lost(String supervisorId) {
        lost.put(supervisorId, inUse.getOrDefault(supervisorId, Set.of()));
    }

    /** The supervisor is back: its ports of the time it was lost settle from now. */
    void returned(String supervisorId, long nowMillis) {
        Set<Integer> ports = lost.remove(supervisorId);
        if (ports != null && !ports.isEmpty()) {
            settling.put(supervisorId, new Settling(Set.copyOf(ports), nowMillis + settle.toMillis()));
        }
    }

    /** The ports of a returned supervisor still settling (empty when none). */
    Set<Integer> settlingPorts(String supervisorId, long nowMillis) {
        Settling s = settling.get(supervisorId);
        if (s == null) {
            return Set.of();
        }
        if (nowMillis >= s.untilMillis()) {
            settling.remove(supervisorId);
            return Set.of();
        }
        return s.ports();
    }

    /** The machines with each one's settling ports moved behind its other usable ports. */
    List<Machine> lastIn(List<Machine> machines, long nowMillis) {
        List<Machine> ordered = new ArrayList<>(machines.size());
        for (Machine machine : machines) {
            Set<Integer> late = settlingPorts(machine.id(), nowMillis);
            if (late.isEmpty()) {
                ordered.add(machine);
                continue;
            }
            List<Integer> ports = new ArrayList<>(machine.usablePorts().stream().filter(p -> !late.contains(p)).toList());
            ports.addAll(machine.usablePorts().stream().filter(late::contains).toList());
            ordered.add(machine.withUsablePorts(ports));
        }
        return ordered;
    }
}
