package org.hetsched.heldout;

import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * Splits an event line into user, action and items: the cheap stage, a few string operations per tuple, so its
 * cost is mostly Storm's own. A malformed line is acked and dropped (not failed: replaying it cannot mend it).
 */
public class ParseBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private transient OutputCollector collector;

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
    }

    /** {user, action, items} of an event line, or null where it has fewer than four fields. */
    static String[] parse(String line) {
        String[] parts = line.split(",", -1);
        if (parts.length < 4 || parts[0].isEmpty()) {
            return null;
        }
        return new String[] {parts[0], parts[2], parts[3]};
    }

    @Override
    public void execute(Tuple input) {
        String[] event = parse(input.getString(0));
        if (event != null) {
            collector.emit(input, new Values(event[0], event[1], event[2]));
        }
        collector.ack(input);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("user", "action", "items"));
    }
}
