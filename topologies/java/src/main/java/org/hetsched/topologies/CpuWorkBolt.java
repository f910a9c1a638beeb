package org.hetsched.topologies;

import java.util.List;
import java.util.Map;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.BasicOutputCollector;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseBasicBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;

/**
 * A CPU-heavy bolt: spends a fixed amount of its thread's CPU time on every tuple (see {@link CpuWork}) and
 * passes the tuple on unchanged, anchored.
 *
 * <p>It stands for a component whose cost per tuple is known, so the planner's profile of it ({@code e}, from
 * the workers' metrics) can be checked against what it was told to spend. In Flux:
 * <pre>
 * - id: "cpu"
 *   className: "org.hetsched.topologies.CpuWorkBolt"
 *   constructorArgs: [5000]            # CPU microseconds per tuple
 * </pre>
 * The output fields are those given (default {@code word}, as Storm's TestWordSpout emits); the input must have
 * as many values.
 */
public class CpuWorkBolt extends BaseBasicBolt {
    private static final long serialVersionUID = 1L;

    private final long cpuMicros;
    private final String[] fields;
    private transient CpuWork work;
    private transient long seed;

    /** {@code cpuMicros} CPU microseconds per tuple, output field {@code word}. */
    public CpuWorkBolt(Number cpuMicros) {
        this(cpuMicros, List.of("word"));
    }

    public CpuWorkBolt(Number cpuMicros, List<String> fields) {
        if (cpuMicros == null || cpuMicros.longValue() < 0) {
            throw new IllegalArgumentException("CpuWorkBolt needs a CPU time per tuple of at least 0 microseconds, got " + cpuMicros);
        }
        if (fields == null || fields.isEmpty()) {
            throw new IllegalArgumentException("CpuWorkBolt needs at least one output field");
        }
        this.cpuMicros = cpuMicros.longValue();
        this.fields = fields.toArray(new String[0]);
    }

    public long cpuMicros() {
        return cpuMicros;
    }

    @Override
    public void prepare(Map<String, Object> topoConf, TopologyContext context) {
        work = new CpuWork();
        seed = context.getThisTaskId();
    }

    @Override
    public void execute(Tuple input, BasicOutputCollector collector) {
        work.spend(cpuMicros, seed++ ^ input.getValues().hashCode());
        collector.emit(input.getValues());
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields(fields));
    }
}
