package org.hetsched.storm.metrics;

import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * One POST body of {@code /v1/metrics/batches}: its id is fixed when it is made, so a retry after a timeout
 * carries the same id and the service stores it once.
 *
 * @param id      the batch id (a UUID)
 * @param records the records, each already JSON
 */
record Batch(String id, List<String> records) {

    static Batch of(List<String> records) {
        return new Batch(UUID.randomUUID().toString(), List.copyOf(records));
    }

    /** The JSON body, with the worker's identity and its buffer's dropped count at the time of sending. */
    String body(WorkerIdentity worker, long dropped) {
        StringBuilder out = new StringBuilder(64 + records.stream().mapToInt(String::length).sum() + records.size());
        out.append("{\"batch_id\":\"").append(id).append("\",\"worker\":");
        Json.append(out, Map.of("host", worker.host(), "port", worker.port(), "pid", worker.pid(),
                "topology_id", worker.topologyId()));
        out.append(",\"dropped\":").append(dropped).append(",\"records\":[");
        for (int i = 0; i < records.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            out.append(records.get(i));
        }
        return out.append("]}").toString();
    }

    /** The worker process a batch comes from. */
    record WorkerIdentity(String host, int port, long pid, String topologyId) {
    }
}
