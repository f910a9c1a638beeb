package org.hetsched.storm.metrics;

import java.util.Map;
import org.apache.storm.hooks.BaseTaskHook;
import org.apache.storm.hooks.info.BoltExecuteInfo;
import org.apache.storm.hooks.info.EmitInfo;
import org.apache.storm.hooks.info.SpoutAckInfo;
import org.apache.storm.hooks.info.SpoutFailInfo;
import org.apache.storm.task.TopologyContext;

/**
 * The task hook that counts every tuple an executor executes and emits, exactly, for the worker's sampler.
 *
 * <p>Enable it with {@code topology.auto.task.hooks: ["org.hetsched.storm.metrics.MetricsHook"]} (topology conf,
 * or every topology from storm.yaml) and the jar in the workers' class path (Storm's {@code extlib/}). Each call
 * only bumps counters; the worker's one sampler thread ({@link WorkerMetrics}) reads them, the CPU times and
 * ships the records, so no executor ever waits on the network.
 */
public class MetricsHook extends BaseTaskHook {
    static final String EXECUTOR_KEY = "hetsched.metrics.executor";
    static final String LOG_HANDLER = "topology.multilang.log.handler";

    private ExecutorMetrics executor;

    @Override
    @SuppressWarnings("unchecked")
    public void prepare(Map<String, Object> conf, TopologyContext context) {
        String component = context.getThisComponentId();
        if (component.startsWith("__")) {
            return;  // Storm's own ackers, metrics consumers and system component
        }
        if (conf.get(LOG_HANDLER) == null) {
            try {
                conf.put(LOG_HANDLER, PidRecordingLogHandler.class.getName());
            } catch (UnsupportedOperationException e) {
                // the conf is read-only here: shell subprocess CPU needs the log handler set in the conf
            }
        }
        synchronized (MetricsHook.class) {  // one executor's tasks are made one after the other; be safe anyway
            Object shared = context.getExecutorData(EXECUTOR_KEY);
            if (shared instanceof ExecutorMetrics metrics) {
                executor = metrics;
            } else {
                boolean spout = context.getRawTopology().get_spouts().containsKey(component);
                executor = new ExecutorMetrics(component, MetricsSettings.profileOf(conf, component), spout,
                        isShell(context, component, spout));
                context.setExecutorData(EXECUTOR_KEY, executor);
                WorkerMetrics.register(conf, context, executor);
            }
        }
        executor.tasks.add(context.getThisTaskId());
    }

    private static boolean isShell(TopologyContext context, String component, boolean spout) {
        try {
            var topology = context.getRawTopology();
            var object = spout ? topology.get_spouts().get(component).get_spout_object()
                    : topology.get_bolts().get(component).get_bolt_object();
            return object.is_set_shell();
        } catch (RuntimeException e) {
            return false;
        }
    }

    @Override
    public void boltExecute(BoltExecuteInfo info) {
        ExecutorMetrics e = executor;
        if (e != null) {
            e.onThread(Thread.currentThread().getId());
            e.onExecute(info.tuple.getSourceComponent(), info.tuple.getSourceStreamId());
        }
    }

    @Override
    public void emit(EmitInfo info) {
        ExecutorMetrics e = executor;
        if (e != null) {
            if (e.spout) {
                e.onThread(Thread.currentThread().getId());  // a bolt's emits may come from its ShellBolt reader thread
            }
            e.onEmit(info.stream);
        }
    }

    @Override
    public void spoutAck(SpoutAckInfo info) {
        ExecutorMetrics e = executor;
        if (e != null) {
            e.onThread(Thread.currentThread().getId());
            e.acked.increment();
        }
    }

    @Override
    public void spoutFail(SpoutFailInfo info) {
        ExecutorMetrics e = executor;
        if (e != null) {
            e.onThread(Thread.currentThread().getId());
            e.failed.increment();
        }
    }
}
