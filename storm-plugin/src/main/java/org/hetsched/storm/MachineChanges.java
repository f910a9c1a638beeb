package org.hetsched.storm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.SupervisorDetails;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Machines joining and leaving, round by round: the supervisors Nimbus offers now against those of the last round.
 * A supervisor Nimbus blacklists (Storm wraps every scheduler in its BlacklistScheduler, which keeps a supervisor that
 * missed heartbeats out for {@code blacklist.scheduler.resume.time.secs}) counts as gone until Nimbus offers it
 * again: only then can a plan use it. Nothing joins in the first round.
 */
final class MachineChanges {
    private static final Logger LOG = LoggerFactory.getLogger(HetschedScheduler.class);

    /** A supervisor and the machine name statuses and plans use for it. */
    record Supervisor(String id, String name) {
    }

    /** What changed since the last round. */
    record Changes(List<Supervisor> joined, List<Supervisor> lost) {
        List<String> joinedNames() {
            return joined.stream().map(Supervisor::name).toList();
        }
    }

    private final String machineIdKey;
    /** Supervisor ids of the last round, with their machine names (null before the first). */
    private Map<String, String> seen;
    /** Supervisors gone since they were last seen, with their machine names. */
    private final Map<String, String> gone = new HashMap<>();

    MachineChanges(String machineIdKey) {
        this.machineIdKey = machineIdKey;
    }

    /** The supervisors that joined (or returned) and those newly gone since the last round; logs each once. */
    Changes notice(Cluster cluster) {
        Map<String, String> now = new TreeMap<>();
        cluster.getSupervisors().values().stream()
                .filter(s -> !cluster.isBlackListed(s.getId()))
                .forEach(s -> now.put(s.getId(), machineName(s)));
        List<Supervisor> joined = new ArrayList<>();
        List<Supervisor> lost = new ArrayList<>();
        if (seen != null) {
            seen.forEach((id, name) -> {
                if (!now.containsKey(id) && !gone.containsKey(id)) {
                    LOG.warn("hetsched: supervisor {} ({}) is gone (or blacklisted by Nimbus); executors that ran "
                            + "there are placed again, the others stay where they run", id, name);
                    gone.put(id, name);
                    lost.add(new Supervisor(id, name));
                }
            });
            now.forEach((id, name) -> {
                if (!seen.containsKey(id)) {
                    LOG.info("hetsched: supervisor {} ({}) joined; topologies running by plan are planned again on "
                            + "the larger cluster", id, name);
                    joined.add(new Supervisor(id, name));
                }
            });
        }
        gone.keySet().removeAll(now.keySet());
        seen = now;
        return new Changes(joined, lost);
    }

    /** The machine names of the supervisors gone and not back, sorted (for a repair's status). */
    List<String> goneNames() {
        return new ArrayList<>(new TreeSet<>(gone.values()));
    }

    /** The supervisor's declared machine id where it has one, else its supervisor id. */
    String machineName(SupervisorDetails supervisor) {
        if (supervisor.getSchedulerMeta() instanceof Map<?, ?> meta && meta.get(machineIdKey) != null) {
            return meta.get(machineIdKey).toString().trim();
        }
        return supervisor.getId();
    }
}
