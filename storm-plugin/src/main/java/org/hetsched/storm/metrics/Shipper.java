package org.hetsched.storm.metrics;

import java.util.List;

/**
 * Ships the buffer's records in batches: a batch that fails is kept and sent again, with the same id, before any
 * new one, so the service stores it once however often it is retried; a batch the service refuses for good (a 4xx
 * other than 401, 408 and 429) is dropped and counted, so one bad batch cannot stop the rest.
 */
final class Shipper {
    /** Sends one batch; answers the HTTP status, or a negative number when there was no answer. */
    @FunctionalInterface
    interface Sender {
        int send(Batch batch, long dropped);
    }

    /** What one {@link #ship()} did. */
    record Outcome(int batchesSent, int recordsSent, int recordsRefused, boolean failed) {
    }

    private final RecordBuffer buffer;
    private final int maxBatchRecords;
    private final Sender sender;
    private Batch pending;

    Shipper(RecordBuffer buffer, int maxBatchRecords, Sender sender) {
        this.buffer = buffer;
        this.maxBatchRecords = maxBatchRecords;
        this.sender = sender;
    }

    /** Sends the pending batch, then fresh ones, until the buffer is empty or a send fails. */
    Outcome ship() {
        int batches = 0;
        int records = 0;
        int refused = 0;
        while (true) {
            if (pending == null) {
                List<String> taken = buffer.take(maxBatchRecords);
                if (taken.isEmpty()) {
                    return new Outcome(batches, records, refused, false);
                }
                pending = Batch.of(taken);
            }
            int status = sender.send(pending, buffer.dropped());
            if (status == 200) {
                batches++;
                records += pending.records().size();
                pending = null;
            } else if (refusedForGood(status)) {
                refused += pending.records().size();
                buffer.countDropped(pending.records().size());
                pending = null;
            } else {
                return new Outcome(batches, records, refused, true);
            }
        }
    }

    /** Records waiting: the pending batch's and the buffer's. */
    int waiting() {
        return (pending == null ? 0 : pending.records().size()) + buffer.size();
    }

    static boolean refusedForGood(int status) {
        return status >= 400 && status < 500 && status != 401 && status != 408 && status != 429;
    }
}
