import java.util.List;
import java.util.Map;
import org.apache.storm.LocalCluster;

/**
 * A private Storm in one JVM (Nimbus with its Thrift port, one supervisor, in-process workers) for a given number of
 * seconds, so the real submit paths ({@code hetsched submit --jar/--flux}, {@code run.py submit}) can be tried
 * without the shared cluster. Run as a single-file program (benchmarks/heldout/run.py local-nimbus); arguments:
 * the Thrift port and the seconds to live.
 *
 * <p>Local mode extracts {@code resources/} from the first jar on this JVM's class path, not from the uploaded one,
 * and its workers load classes from this class path: put the topology's jar first.
 */
public final class LocalNimbus {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        long seconds = Long.parseLong(args[1]);
        try (LocalCluster cluster = new LocalCluster.Builder()
                .withNimbusDaemon()
                .withSupervisors(1)
                .withDaemonConf(Map.of("nimbus.thrift.port", port, "nimbus.seeds", List.of("127.0.0.1"),
                        "storm.local.hostname", "127.0.0.1"))
                .build()) {
            System.out.println("local Nimbus on 127.0.0.1:" + port + " for " + seconds + " s");
            System.out.flush();
            Thread.sleep(seconds * 1000);
        }
    }
}
