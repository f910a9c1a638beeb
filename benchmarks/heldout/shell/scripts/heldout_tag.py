"""heldout-shell's tagger: classifies each word with regular expressions and builds a JSON record of it.

Its cost is interpreter work (regex matching, character n-grams, JSON encode and decode), repeated
``heldout.tag.passes`` times per tuple (default :data:`DEFAULT_PASSES`): unlike the catalog's bolts, which spin
to a CPU-time target, it does a fixed amount of work whose CPU time depends on the machine. It passes the word on
(anchored) for Storm's TestWordCounter.
"""
from __future__ import annotations

import json
import re

from pystorm import Bolt

PASSES_KEY = "heldout.tag.passes"
DEFAULT_PASSES = 40

PATTERNS = {
    "email": re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$"),
    "hashtag": re.compile(r"^#\w+$"),
    "version": re.compile(r"^v?\d+(\.\d+){1,3}$"),
    "number": re.compile(r"^-?\d+(\.\d+)?$"),
    "year": re.compile(r"^(19|20)\d\d$"),
    "level": re.compile(r"^(error|warn|info|debug|trace)$"),
    "storm": re.compile(r"^(storm|nimbus|supervisor|worker|executor|task|spout|bolt|topology)s?$"),
    "plural": re.compile(r"^\w+[^s]s$"),
    "vowels": re.compile(r"[aeiou]{2,}"),
    "doubled": re.compile(r"(\w)\1"),
}


def record(word: str) -> dict:
    """The word's tags, shape and character trigrams."""
    shape = re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", word)))
    padded = f"^{word}$"
    return {
        "word": word,
        "tags": sorted(name for name, pattern in PATTERNS.items() if pattern.search(word)),
        "shape": re.sub(r"(.)\1+", r"\1", shape),
        "trigrams": [padded[i:i + 3] for i in range(max(1, len(padded) - 2))],
        "length": len(word),
    }


def tag(word: str, passes: int) -> dict:
    """``record(word)`` built and round-tripped through JSON ``passes`` times (at least once)."""
    result: dict = {}
    for _ in range(max(1, passes)):
        result = json.loads(json.dumps(record(word), sort_keys=True))
    return result


class TagBolt(Bolt):
    outputs = ["word", "tags"]

    def initialize(self, storm_conf, context):
        self.passes = int(storm_conf.get(PASSES_KEY, DEFAULT_PASSES))

    def process(self, tup):
        word = tup.values[0]
        tagged = tag(word, self.passes)
        self.emit([word, ",".join(tagged["tags"])])


if __name__ == "__main__":
    TagBolt().run()
