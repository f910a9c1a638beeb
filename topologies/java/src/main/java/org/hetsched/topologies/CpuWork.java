package org.hetsched.topologies;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * A fixed amount of CPU time spent on the calling thread: iterated SHA-256 until the thread's own CPU clock
 * (ThreadMXBean) has advanced by the asked amount.
 *
 * <p>Measured by the thread's CPU time rather than by wall time or an iteration count, so a tuple costs the same
 * CPU on a fast or a slow machine, and on a machine of a fraction of a core (where wall time runs on while the
 * thread waits for its quota): what the planner's profiles call {@code e}, the machine's CPU per tuple, then
 * differs between machine types only by their speed, as on real heterogeneous hardware.
 */
public final class CpuWork {
    /** Hash rounds between two reads of the thread's CPU clock: a few microseconds of work. */
    static final int ROUNDS_PER_CHECK = 16;

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final MessageDigest sha256;
    private byte[] state = new byte[32];

    public CpuWork() {
        if (!threads.isCurrentThreadCpuTimeSupported()) {
            throw new IllegalStateException("this JVM cannot measure a thread's CPU time (ThreadMXBean), which CpuWork needs");
        }
        threads.setThreadCpuTimeEnabled(true);
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256", e);
        }
    }

    /**
     * Spends {@code micros} microseconds of this thread's CPU time and returns the hash rounds it took.
     *
     * @param micros CPU microseconds to spend; 0 or less spends none
     * @param seed   mixed into the work, so no two tuples' work can be folded away
     */
    public long spend(long micros, long seed) {
        if (micros <= 0) {
            return 0;
        }
        long until = threads.getCurrentThreadCpuTime() + micros * 1_000L;
        ByteBuffer.wrap(state).putLong(0, seed);
        long rounds = 0;
        do {
            for (int i = 0; i < ROUNDS_PER_CHECK; i++) {
                state = sha256.digest(state);
            }
            rounds += ROUNDS_PER_CHECK;
        } while (threads.getCurrentThreadCpuTime() < until);
        return rounds;
    }

    /** The last hash, so the work has a visible result. */
    public byte[] state() {
        return state.clone();
    }

    /** CPU nanoseconds the calling thread has used so far. */
    public long threadCpuNanos() {
        return threads.getCurrentThreadCpuTime();
    }
}
