package org.hetsched.heldout;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * Keeps a running score per user, a hash chain: each event's score is SHA-256 applied {@code rounds} times to the
 * user's last score and the event. Fields-grouped on the user so one task holds each chain. Its cost per tuple is
 * real hashing, whatever the machine's speed (not a CPU time target as the catalog's compute bolts have), and it
 * keeps state that grows with the users seen.
 */
public class HashScoreBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private final int rounds;
    private transient OutputCollector collector;
    private transient UserScores scores;

    public HashScoreBolt(Number rounds) {
        if (rounds == null || rounds.intValue() < 1) {
            throw new IllegalArgumentException("HashScoreBolt needs at least 1 hash round per tuple, got " + rounds);
        }
        this.rounds = rounds.intValue();
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
        this.scores = new UserScores(rounds);
    }

    @Override
    public void execute(Tuple input) {
        String user = input.getStringByField("user");
        byte[] score = scores.update(user, input.getStringByField("action") + "," + input.getStringByField("items"));
        collector.emit(input, new Values(user, HexFormat.of().formatHex(score, 0, 8)));
        collector.ack(input);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("user", "score"));
    }

    /** Each user's hash chain. */
    static final class UserScores {
        private final int rounds;
        private final MessageDigest sha256;
        private final Map<String, byte[]> last = new HashMap<>();

        UserScores(int rounds) {
            this.rounds = rounds;
            try {
                this.sha256 = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("this JVM has no SHA-256", e);
            }
        }

        /** The user's new score after this event (32 bytes). */
        byte[] update(String user, String event) {
            byte[] state = last.getOrDefault(user, new byte[32]);
            sha256.update(state);
            byte[] digest = sha256.digest(event.getBytes(StandardCharsets.UTF_8));
            for (int i = 1; i < rounds; i++) {
                digest = sha256.digest(digest);
            }
            last.put(user, digest);
            return digest;
        }

        int users() {
            return last.size();
        }
    }
}
