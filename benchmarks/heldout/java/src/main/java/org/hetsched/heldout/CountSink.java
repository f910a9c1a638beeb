package org.hetsched.heldout;

import java.util.HashMap;
import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink: counts its inputs by their first field (a user from score, an item from recommend), emits nothing, and
 * logs how many tuples and keys it has seen now and then.
 */
public class CountSink extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(CountSink.class);
    private static final long LOG_EVERY_MS = 30_000;
    private transient OutputCollector collector;
    private transient Map<String, Long> counts;
    private transient long seen;
    private transient long nextLog;
    private transient String name;

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
        this.counts = new HashMap<>();
        this.nextLog = System.currentTimeMillis() + LOG_EVERY_MS;
        this.name = context.getThisComponentId() + ":" + context.getThisTaskId();
    }

    @Override
    public void execute(Tuple input) {
        counts.merge(input.getString(0), 1L, Long::sum);
        seen++;
        collector.ack(input);
        long now = System.currentTimeMillis();
        if (now >= nextLog) {
            nextLog = now + LOG_EVERY_MS;
            LOG.info("heldout sink {}: {} tuples, {} keys", name, seen, counts.size());
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        // a sink
    }
}
