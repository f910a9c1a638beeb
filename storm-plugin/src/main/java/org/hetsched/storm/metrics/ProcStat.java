package org.hetsched.storm.metrics;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalDouble;

/** CPU seconds of a process from Linux's {@code /proc/<pid>/stat} (user + system; children not included). */
final class ProcStat {
    /** Linux's USER_HZ: the unit of utime and stime, 100 on every mainstream architecture. */
    static final double CLOCK_TICKS_PER_SECOND = 100.0;

    private ProcStat() {
    }

    /** User + system CPU seconds from one stat line, or empty when the line is not one. */
    static OptionalDouble cpuSeconds(String statLine) {
        int close = statLine.lastIndexOf(')');  // the command name may hold spaces and parentheses
        if (close < 0) {
            return OptionalDouble.empty();
        }
        String[] rest = statLine.substring(close + 1).trim().split("\\s+");
        // rest[0] is field 3 (state); utime and stime are fields 14 and 15
        if (rest.length < 13) {
            return OptionalDouble.empty();
        }
        try {
            long utime = Long.parseLong(rest[11]);
            long stime = Long.parseLong(rest[12]);
            return OptionalDouble.of((utime + stime) / CLOCK_TICKS_PER_SECOND);
        } catch (NumberFormatException e) {
            return OptionalDouble.empty();
        }
    }

    /** The process's CPU seconds, or empty when it is gone or /proc cannot be read. */
    static OptionalDouble cpuSeconds(long pid) {
        try {
            return cpuSeconds(Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            return OptionalDouble.empty();
        }
    }
}
