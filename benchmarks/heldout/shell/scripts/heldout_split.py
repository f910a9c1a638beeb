"""heldout-shell's splitter: one anchored tuple per word of a sentence (about eight out per one in), lower-cased
and stripped of punctuation. Cheap: its cost is mostly the multi-lang messages of what it emits."""
from __future__ import annotations

from pystorm import Bolt

PUNCTUATION = ".,;:!?\"'()"


def words(sentence: str) -> list[str]:
    """The sentence's words, lower-cased, without surrounding punctuation; empty ones dropped."""
    stripped = (w.strip(PUNCTUATION).lower() for w in sentence.split())
    return [w for w in stripped if w]


class SplitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in words(tup.values[0]):
            self.emit([word])  # anchored to tup (auto_anchor), acked after process returns (auto_ack)


if __name__ == "__main__":
    SplitBolt().run()
