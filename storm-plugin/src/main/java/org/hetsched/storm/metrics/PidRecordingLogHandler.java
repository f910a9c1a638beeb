package org.hetsched.storm.metrics;

import org.apache.storm.task.TopologyContext;
import org.apache.storm.utils.DefaultShellLogHandler;
import org.apache.storm.utils.ShellProcess;

/**
 * Storm's default multilang log handler that also notes which subprocess pid serves which task.
 *
 * <p>Storm hands a multilang log handler ({@code topology.multilang.log.handler}) the ShellProcess and the
 * task's context right after launching the subprocess: the one place a plugin sees both, so the metrics
 * hook can read that process's CPU from /proc. Logging is unchanged.
 */
public class PidRecordingLogHandler extends DefaultShellLogHandler {
    @Override
    public void setUpContext(Class<?> ownerCls, ShellProcess process, TopologyContext context) {
        super.setUpContext(ownerCls, process, context);
        if (process != null && context != null && process.getPid() != null) {
            ShellPids.put(context.getThisTaskId(), process.getPid().longValue());
        }
    }
}
