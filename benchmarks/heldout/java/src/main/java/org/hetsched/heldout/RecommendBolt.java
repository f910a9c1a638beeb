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
 * Emits one (item, user) pair per item of an event: none for a view, up to four for a purchase, so its output is
 * not one tuple per input (about 0.7 on {@link ClickEvents}'s mix) and its cost grows with what it emits.
 */
public class RecommendBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private transient OutputCollector collector;

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
    }

    /** The items of an event's item field ({@code i1|i7}; empty: none). */
    static String[] items(String field) {
        return field == null || field.isEmpty() ? new String[0] : field.split("\\|");
    }

    @Override
    public void execute(Tuple input) {
        String user = input.getStringByField("user");
        for (String item : items(input.getStringByField("items"))) {
            collector.emit(input, new Values(item, user));
        }
        collector.ack(input);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("item", "user"));
    }
}
