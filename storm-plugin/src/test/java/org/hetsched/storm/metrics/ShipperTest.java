package org.hetsched.storm.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShipperTest {
    /** Answers the queued statuses in turn (200 once they run out) and notes every batch it was sent. */
    static final class ScriptedService implements Shipper.Sender {
        final Deque<Integer> answers = new ArrayDeque<>();
        final List<Batch> seen = new ArrayList<>();
        final List<Long> droppedSeen = new ArrayList<>();

        ScriptedService(Integer... statuses) {
            answers.addAll(List.of(statuses));
        }

        @Override
        public int send(Batch batch, long dropped) {
            seen.add(batch);
            droppedSeen.add(dropped);
            return answers.isEmpty() ? 200 : answers.removeFirst();
        }
    }

    private static RecordBuffer buffer(int capacity, int records) {
        RecordBuffer buffer = new RecordBuffer(capacity);
        for (int i = 0; i < records; i++) {
            buffer.add("{\"n\":" + i + "}");
        }
        return buffer;
    }

    @Test
    void aFailedBatchIsRetriedWithItsOwnIdBeforeAnyNewOne() {
        RecordBuffer buffer = buffer(100, 5);
        ScriptedService service = new ScriptedService(-1, 503);
        Shipper shipper = new Shipper(buffer, 3, service);
        assertTrue(shipper.ship().failed());
        buffer.add("{\"n\":5}");
        assertTrue(shipper.ship().failed());
        Shipper.Outcome back = shipper.ship();
        assertFalse(back.failed());
        assertEquals(2, back.batchesSent());
        assertEquals(6, back.recordsSent());
        assertEquals(service.seen.get(0).id(), service.seen.get(1).id());
        assertEquals(service.seen.get(0).id(), service.seen.get(2).id());
        assertEquals(List.of("{\"n\":0}", "{\"n\":1}", "{\"n\":2}"), service.seen.get(2).records());
        assertEquals(4, service.seen.size(), "the first batch three times, then the second");
        assertEquals(2, service.seen.stream().map(Batch::id).distinct().count());
        assertEquals(0, shipper.waiting());
    }

    @Test
    void whileTheServiceIsDownTheBufferDropsItsOldestAndTheCountTravelsWithTheNextBatch() {
        RecordBuffer buffer = buffer(4, 2);
        ScriptedService service = new ScriptedService(-1, -1);
        Shipper shipper = new Shipper(buffer, 2, service);
        shipper.ship();  // takes 2 as the pending batch, fails
        for (int i = 2; i < 10; i++) {
            buffer.add("{\"n\":" + i + "}");
        }
        shipper.ship();
        assertEquals(4, buffer.dropped());
        assertEquals(6, shipper.waiting());
        Shipper.Outcome back = shipper.ship();
        assertEquals(6, back.recordsSent());
        assertEquals(List.of("{\"n\":6}", "{\"n\":7}"), service.seen.get(3).records());
        assertEquals(4L, service.droppedSeen.get(service.droppedSeen.size() - 1));
    }

    @Test
    void aBatchRefusedForGoodIsDroppedAndCountedAndTheRestStillGoes() {
        RecordBuffer buffer = buffer(100, 4);
        ScriptedService service = new ScriptedService(422);
        Shipper.Outcome outcome = new Shipper(buffer, 2, service).ship();
        assertEquals(2, outcome.recordsRefused());
        assertEquals(2, outcome.recordsSent());
        assertEquals(2, buffer.dropped());
        assertTrue(Shipper.refusedForGood(413) && !Shipper.refusedForGood(401) && !Shipper.refusedForGood(429)
                && !Shipper.refusedForGood(503) && !Shipper.refusedForGood(-1));
    }
}
