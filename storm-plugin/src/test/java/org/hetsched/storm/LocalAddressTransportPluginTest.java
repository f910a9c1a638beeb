package org.hetsched.storm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.HashMap;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.security.auth.ThriftConnectionType;
import org.apache.storm.thrift.server.TServer;
import org.apache.storm.utils.Utils;
import org.junit.jupiter.api.Test;

/** The Thrift server listens on the daemon's storm.local.hostname only (all of 127.0.0.0/8 is this host on Linux). */
class LocalAddressTransportPluginTest {

    private static Map<String, Object> conf(String hostname) {
        Map<String, Object> conf = new HashMap<>(Utils.readDefaultConfig());
        conf.put(Config.NIMBUS_THRIFT_PORT, 0);
        if (hostname != null) {
            conf.put(Config.STORM_LOCAL_HOSTNAME, hostname);
        }
        return conf;
    }

    @Test
    void listensOnTheDaemonsOwnAddressOnly() throws Exception {
        LocalAddressTransportPlugin transport = new LocalAddressTransportPlugin();
        transport.prepare(ThriftConnectionType.NIMBUS, conf("127.0.0.3"));
        TServer server = transport.getServer((in, out) -> { });
        Thread serving = new Thread(server::serve, "thrift-under-test");
        serving.start();
        try {
            int port = transport.getPort();
            assertTrue(port > 0, "an ephemeral port was bound");
            try (Socket connected = new Socket("127.0.0.3", port)) {
                assertTrue(connected.isConnected());
            }
            assertThrows(ConnectException.class, () -> new Socket("127.0.0.1", port).close(),
                    "another loopback address of the same host is not served");
        } finally {
            server.stop();
            serving.join(10_000);
        }
    }

    @Test
    void withoutALocalHostnameListensEverywhereAsStormDoes() throws IOException {
        InetSocketAddress address = LocalAddressTransportPlugin.bindAddress(ThriftConnectionType.NIMBUS, conf(null));
        assertTrue(address.getAddress().isAnyLocalAddress(), address.toString());
        assertEquals("127.0.0.2", LocalAddressTransportPlugin.bindAddress(
                ThriftConnectionType.SUPERVISOR, Map.of(Config.STORM_LOCAL_HOSTNAME, "127.0.0.2",
                        Config.SUPERVISOR_THRIFT_PORT, 6628)).getAddress().getHostAddress());
    }
}
