package org.hetsched.storm.metrics;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Records waiting to be shipped, at most {@code capacity}: a full buffer drops its oldest record and counts it,
 * so a service that is down costs old samples, never memory or a blocked executor.
 */
final class RecordBuffer {
    private final int capacity;
    private final ArrayDeque<String> records = new ArrayDeque<>();
    private long dropped;

    RecordBuffer(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a record buffer holds at least 1 record, got " + capacity);
        }
        this.capacity = capacity;
    }

    synchronized void add(String record) {
        if (records.size() >= capacity) {
            records.removeFirst();
            dropped++;
        }
        records.addLast(record);
    }

    /** Takes up to {@code max} of the oldest records out of the buffer. */
    synchronized List<String> take(int max) {
        List<String> out = new ArrayList<>(Math.min(max, records.size()));
        while (out.size() < max && !records.isEmpty()) {
            out.add(records.removeFirst());
        }
        return out;
    }

    synchronized int size() {
        return records.size();
    }

    /** Records dropped since the buffer was made. */
    synchronized long dropped() {
        return dropped;
    }

    /** Counts records given up elsewhere (a batch the service refused for good) as dropped too. */
    synchronized void countDropped(long n) {
        dropped += n;
    }
}
