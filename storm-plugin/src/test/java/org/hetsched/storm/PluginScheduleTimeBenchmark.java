package org.hetsched.storm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.DefaultScheduler;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.testing.TestWordCounter;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;

/**
 * How long {@code schedule()} takes in one Nimbus round for a 200-executor topology on 50
 * supervisors, asking a real planner, next to Storm's DefaultScheduler on the same input and to
 * the plugin asking a loopback planner that answers at once (the plugin's own cost).
 *
 * <p>Not a test (Surefire does not run it): {@code benchmarks/plugin_schedule_time.py} starts the
 * planner, stores the profile set and runs this class. Prints one JSON object with every round's
 * milliseconds.
 *
 * <pre>java -cp ... org.hetsched.storm.PluginScheduleTimeBenchmark URL PROFILE_SET STRATEGY ROUNDS WARMUP</pre>
 */
public final class PluginScheduleTimeBenchmark {
    static final int SUPERVISORS = 50;
    static final int SLOTS_PER_SUPERVISOR = 4;
    static final String[] MACHINE_TYPES = {"m1", "m2", "m3"};

    private PluginScheduleTimeBenchmark() {
    }

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: PluginScheduleTimeBenchmark PLANNER_URL PROFILE_SET STRATEGY ROUNDS WARMUP");
            System.exit(2);
        }
        String url = args[0];
        String profileSet = args[1];
        String strategy = args[2];
        int rounds = Integer.parseInt(args[3]);
        int warmup = Integer.parseInt(args[4]);

        Map<String, SupervisorDetails> supervisors = new HashMap<>();
        for (int i = 0; i < SUPERVISORS; i++) {
            String id = String.format(Locale.ROOT, "sup-%02d", i);
            supervisors.put(id, StormFixtures.supervisor(id, "host-" + i, MACHINE_TYPES[i % MACHINE_TYPES.length],
                    null, SLOTS_PER_SUPERVISOR));
        }
        Map<String, Object> conf = Map.of(
                TopologySettings.PROFILES, profileSet,
                TopologySettings.STRATEGY, strategy,
                TopologySettings.COMPONENT_PROFILES, Map.of(
                        "spout", "spout", "low", "lowCompute", "mid", "midCompute", "high", "highCompute"));
        HetschedScheduler scheduler = StormFixtures.scheduler(Map.of(
                SchedulerSettings.PLANNER_URL, url,
                SchedulerSettings.PLANNER_TIMEOUT_MS, 30_000), System::currentTimeMillis);
        DefaultScheduler storm = new DefaultScheduler();
        FakePlanner instant = startInstantPlanner();
        HetschedScheduler withInstantPlanner = StormFixtures.scheduler(Map.of(
                SchedulerSettings.PLANNER_URL, instant.url().toString(),
                SchedulerSettings.PLANNER_TIMEOUT_MS, 30_000), System::currentTimeMillis);

        List<Double> hetsched = new ArrayList<>();
        List<Double> defaultScheduler = new ArrayList<>();
        List<Double> instantPlanner = new ArrayList<>();
        int executors = 0;
        int fallbacks = 0;
        String lastStatus = "";
        for (int round = 0; round < warmup + rounds; round++) {
            TopologyDetails topology = StormFixtures.topology("bench-" + round, twoHundredExecutors(), 10, 50, conf);
            executors = topology.getExecutors().size();
            Topologies topologies = new Topologies(topology);

            Cluster forPlugin = StormFixtures.cluster(supervisors, topologies, Map.of());
            long start = System.nanoTime();
            scheduler.schedule(topologies, forPlugin);
            double pluginMs = (System.nanoTime() - start) / 1e6;
            lastStatus = forPlugin.getStatus(topology.getId());
            if (!lastStatus.startsWith("hetsched: placed by planner")) {
                fallbacks++;
            }

            Cluster forStorm = StormFixtures.cluster(supervisors, topologies, Map.of());
            start = System.nanoTime();
            storm.schedule(topologies, forStorm);
            double stormMs = (System.nanoTime() - start) / 1e6;

            Cluster forInstant = StormFixtures.cluster(supervisors, topologies, Map.of());
            start = System.nanoTime();
            withInstantPlanner.schedule(topologies, forInstant);
            double instantMs = (System.nanoTime() - start) / 1e6;
            if (!forInstant.getStatus(topology.getId()).startsWith("hetsched: placed by planner")) {
                throw new IllegalStateException("the instant planner's plan was not used: "
                        + forInstant.getStatus(topology.getId()));
            }

            if (round >= warmup) {
                hetsched.add(pluginMs);
                defaultScheduler.add(stormMs);
                instantPlanner.add(instantMs);
            }
        }
        System.out.println("{\"supervisors\": " + SUPERVISORS + ", \"executors\": " + executors
                + ", \"rounds\": " + rounds + ", \"warmup\": " + warmup + ", \"fallbacks\": " + fallbacks
                + ", \"strategy\": \"" + strategy + "\""
                + ", \"last_status\": " + FakePlanner.JSON.valueToTree(lastStatus)
                + ", \"hetsched_ms\": " + hetsched + ", \"default_scheduler_ms\": " + defaultScheduler
                + ", \"instant_planner_ms\": " + instantPlanner + "}");
        instant.close();
    }

    /**
     * A planner on loopback that answers at once with a round-robin plan: what remains of
     * {@code schedule()} is the plugin's own work plus one local HTTP exchange.
     */
    private static FakePlanner startInstantPlanner() {
        try {
            return new FakePlanner(FakePlanner.planning("instant", (c, i, machines) -> machines.get(i % machines.size())));
        } catch (java.io.IOException e) {
            throw new IllegalStateException("could not start the loopback planner", e);
        }
    }

    /** spout 20, low 50, mid 60, high 60, and 10 ackers: 200 executors. */
    static StormTopology twoHundredExecutors() {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("spout", new TestWordSpout(), 20);
        builder.setBolt("low", new TestWordCounter(), 50).shuffleGrouping("spout");
        builder.setBolt("mid", new TestWordCounter(), 60).fieldsGrouping("low", new Fields("word"));
        builder.setBolt("high", new TestWordCounter(), 60).shuffleGrouping("mid");
        return builder.createTopology();
    }
}
