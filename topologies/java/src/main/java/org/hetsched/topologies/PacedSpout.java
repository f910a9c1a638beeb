package org.hetsched.topologies;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Values;

/**
 * Emits a sequence number (and an optional fixed payload) at a paced rate, unanchored, so the only work per tuple is
 * Storm's own: the point of {@link RemotePairTopology}, which measures what moving a tuple costs.
 *
 * <p>The rate (tuples/s for the whole component, each instance its share) follows the JSON file named by
 * {@code hetsched.spout.rate.file} ({@code {"rate": R}}, 0 pauses, {@code null} unpaced), re-read when its
 * modification time changes, as the Python spouts do ({@code topologies/rate_control.py}); without the file, the
 * constructor's rate holds. Unpaced, it emits at most {@code MOST_PER_CALL} per call, as fast as Storm calls it
 * ({@code topology.max.spout.pending} holds it when acking is on).
 */
public class PacedSpout extends BaseRichSpout {
    private static final long serialVersionUID = 1L;
    static final String RATE_FILE = "hetsched.spout.rate.file";
    private static final long CHECK_EVERY_NANOS = 500_000_000L;
    private static final int MOST_PER_CALL = 200;
    private static final Pattern RATE = Pattern.compile("\"rate\"\\s*:\\s*(null|[0-9.eE+-]+)");

    private final double initialRate;
    private final int payloadBytes;
    private transient SpoutOutputCollector collector;
    private transient Path rateFile;
    private transient long rateFileMtime;
    private transient long nextCheck;
    private transient int instances;
    private transient Pacer pacer;
    private transient String payload;
    private transient long seq;

    public PacedSpout(Number rate, Number payloadBytes) {
        if (rate == null || rate.doubleValue() < 0 || payloadBytes == null || payloadBytes.intValue() < 0) {
            throw new IllegalArgumentException("PacedSpout needs a rate and a payload size of at least 0, got "
                    + rate + " and " + payloadBytes);
        }
        this.initialRate = rate.doubleValue();
        this.payloadBytes = payloadBytes.intValue();
    }

    @Override
    public void open(Map<String, Object> conf, TopologyContext context, SpoutOutputCollector collector) {
        this.collector = collector;
        this.instances = Math.max(1, context.getComponentTasks(context.getThisComponentId()).size());
        Object file = conf.get(RATE_FILE);
        this.rateFile = file == null ? null : Path.of(file.toString());
        this.payload = "x".repeat(payloadBytes);
        this.pacer = new Pacer(initialRate / instances, System.nanoTime());
    }

    @Override
    public void nextTuple() {
        long now = System.nanoTime();
        followRateFile(now);
        int due = Math.min(pacer.due(now), MOST_PER_CALL);
        for (int i = 0; i < due; i++) {
            seq++;
            collector.emit(payloadBytes > 0 ? new Values(seq, payload) : new Values(seq));
        }
        pacer.sent(due);
        // nothing due: Storm's spout wait strategy sleeps
    }

    private void followRateFile(long now) {
        if (rateFile == null || now < nextCheck) {
            return;
        }
        nextCheck = now + CHECK_EVERY_NANOS;
        try {
            long mtime = Files.getLastModifiedTime(rateFile).toMillis();
            if (mtime == rateFileMtime) {
                return;
            }
            Double rate = parseRate(Files.readString(rateFile, StandardCharsets.UTF_8));
            if (rate != null) {
                rateFileMtime = mtime;
                pacer = new Pacer(rate / instances, now);
            }
        } catch (IOException e) {
            // no file yet, or replaced while read: keep the rate and look again
        }
    }

    /**
     * The rate in {@code {"rate": R}}, infinite for {@code {"rate": null}} (unpaced), or null when the text holds
     * none (R below 0 is none).
     */
    static Double parseRate(String text) {
        Matcher m = RATE.matcher(text);
        if (!m.find()) {
            return null;
        }
        if (m.group(1).equals("null")) {
            return Double.POSITIVE_INFINITY;
        }
        try {
            double rate = Double.parseDouble(m.group(1));
            return rate >= 0 && Double.isFinite(rate) ? rate : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(payloadBytes > 0 ? new Fields("seq", "payload") : new Fields("seq"));
    }

    /** How many tuples are due at a rate since a start: whole tuples, never more than the rate allows. */
    static final class Pacer {
        private final double perNano;
        private final long start;
        private long sent;

        Pacer(double ratePerSecond, long startNanos) {
            this.perNano = ratePerSecond / 1e9;
            this.start = startNanos;
        }

        int due(long nowNanos) {
            if (Double.isInfinite(perNano)) {
                return Integer.MAX_VALUE;
            }
            long allowed = (long) Math.floor(perNano * (nowNanos - start));
            return (int) Math.max(0, Math.min(Integer.MAX_VALUE, allowed - sent));
        }

        void sent(int n) {
            sent += n;
        }
    }
}
