package org.hetsched.storm;

import java.util.Map;
import org.apache.storm.generated.RebalanceOptions;
import org.apache.storm.utils.NimbusClient;

/** Asks Nimbus to rebalance a topology: deactivate it for {@code waitSecs}, free its slots, schedule it again. */
@FunctionalInterface
public interface Rebalancer {
    void rebalance(String topologyName, int waitSecs) throws Exception;

    /** Nimbus's own Thrift service, reached as any client would (called from a plugin thread, never Nimbus's). */
    static Rebalancer nimbus(Map<String, Object> conf) {
        return (topologyName, waitSecs) -> {
            RebalanceOptions options = new RebalanceOptions();
            options.set_wait_secs(waitSecs);
            try (NimbusClient client = NimbusClient.getConfiguredClient(conf)) {
                client.getClient().rebalance(topologyName, options);
            }
        };
    }
}
