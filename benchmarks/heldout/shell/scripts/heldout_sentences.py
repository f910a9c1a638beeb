"""heldout-shell's spout: sentences of a seeded vocabulary, emitted with tuple ids as fast as Storm asks.

Acking is on, so ``topology.max.spout.pending`` is the only brake. A failed sentence is replayed (pystorm's
ReliableSpout, up to three times); acked and failed counts go to the worker log every ten seconds, which is how a
local run shows that tuples complete.
"""
from __future__ import annotations

import random
import time

from pystorm import ReliableSpout

VOCABULARY = (
    "storm stream tuple bolt spout worker supervisor nimbus topology executor task ack anchor replay "
    "latency throughput window shuffle fields grouping partition offset broker queue backlog quota core "
    "scheduler placement machine rack cluster heartbeat timeout checkpoint state snapshot #ops #oncall "
    "alice@example.org bob@example.org 2024 42 3.14 v2.8.3 error warn info debug"
).split()
LOG_EVERY_S = 10.0


def sentence(rng: random.Random) -> str:
    """Four to twelve words of the vocabulary, with some punctuation for the split bolt to strip."""
    words = [rng.choice(VOCABULARY) for _ in range(rng.randint(4, 12))]
    if rng.random() < 0.5:
        words[-1] += rng.choice(".!?")
    return " ".join(words).capitalize()


class SentenceSpout(ReliableSpout):
    outputs = ["sentence"]

    def initialize(self, storm_conf, context):
        self.rng = random.Random(int(context.get("taskid", 0)))
        self.seq = 0
        self.acked = 0
        self.failed = 0
        self.next_log = time.monotonic() + LOG_EVERY_S

    def next_tuple(self):
        self.seq += 1
        self.emit([sentence(self.rng)], tup_id=self.seq)
        self.report()

    def ack(self, tup_id):
        super().ack(tup_id)
        self.acked += 1
        self.report()

    def fail(self, tup_id):
        self.failed += 1
        super().fail(tup_id)

    def report(self):
        now = time.monotonic()
        if now >= self.next_log:
            self.next_log = now + LOG_EVERY_S
            self.log(f"heldout spout {self.component_name}:{self.task_id}: emitted {self.seq} acked {self.acked} "
                     f"failed {self.failed} pending {len(self.unacked_tuples)}")


if __name__ == "__main__":
    SentenceSpout().run()
