package org.hetsched.topologies;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.topology.TopologyBuilder;

/**
 * A paced {@link PacedSpout} {@code src} and, unless {@code alone}, a {@link SinkBolt} {@code sink} fed by a shuffle
 * grouping, one executor each, no ackers: placed in one worker or in two on different machines, the difference in
 * CPU per tuple is what a tuple that crosses workers costs ({@code python -m bench.remote_tuple_cost}).
 *
 * <p>Arguments: the topology name, the initial rate (tuples/s), the payload bytes (0: the tuple is a sequence
 * number only, as Linear's spout emits), and {@code pair} or {@code alone} (the spout with no subscriber).
 */
public final class RemotePairTopology {
    private RemotePairTopology() {
    }

    public static StormTopology build(double rate, int payloadBytes, boolean alone) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("src", new PacedSpout(rate, payloadBytes), 1);
        if (!alone) {
            builder.setBolt("sink", new SinkBolt(), 1).shuffleGrouping("src");
        }
        return builder.createTopology();
    }

    public static void main(String[] args) throws Exception {
        String name = args.length > 0 ? args[0] : "remote-pair";
        double rate = args.length > 1 ? Double.parseDouble(args[1]) : 0;
        int payload = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        String mode = args.length > 3 ? args[3] : "pair";
        if (!mode.equals("pair") && !mode.equals("alone")) {
            throw new IllegalArgumentException("the fourth argument must be pair or alone, got '" + mode + "'");
        }
        Config conf = new Config();
        conf.setNumAckers(0);
        StormSubmitter.submitTopology(name, conf, build(rate, payload, mode.equals("alone")));
    }
}
