package org.hetsched.heldout;

import java.util.HashMap;
import java.util.Map;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Values;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Emits click events as fast as Storm lets it, each with a message id: acking is on, so
 * {@code topology.max.spout.pending} is the only brake (no pacing of its own, unlike the catalog's spouts). A failed
 * event is emitted again; acked and failed counts go to the worker log every {@link #LOG_EVERY_MS} ms, which is how
 * a local run shows that tuples complete.
 */
public class ClickEventSpout extends BaseRichSpout {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(ClickEventSpout.class);
    static final long LOG_EVERY_MS = 10_000;

    private transient SpoutOutputCollector collector;
    private transient ClickEvents events;
    private transient Map<Long, String> pending;
    private transient long seq;
    private transient long acked;
    private transient long failed;
    private transient long nextLog;
    private transient String name;

    @Override
    public void open(Map<String, Object> conf, TopologyContext context, SpoutOutputCollector collector) {
        this.collector = collector;
        this.events = new ClickEvents(context.getThisTaskId());
        this.pending = new HashMap<>();
        this.nextLog = System.currentTimeMillis() + LOG_EVERY_MS;
        this.name = context.getThisComponentId() + ":" + context.getThisTaskId();
    }

    @Override
    public void nextTuple() {
        String event = events.next();
        long id = ++seq;
        pending.put(id, event);
        collector.emit(new Values(event), id);
        report();
    }

    @Override
    public void ack(Object msgId) {
        if (pending.remove(msgId) != null) {
            acked++;
        }
        report();
    }

    @Override
    public void fail(Object msgId) {
        String event = pending.get(msgId);
        failed++;
        if (event != null) {
            collector.emit(new Values(event), msgId); // replay under the same id
        }
    }

    private void report() {
        long now = System.currentTimeMillis();
        if (now >= nextLog) {
            nextLog = now + LOG_EVERY_MS;
            LOG.info("heldout spout {}: emitted {} acked {} failed {} pending {}", name, seq, acked, failed, pending.size());
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("event"));
    }
}
