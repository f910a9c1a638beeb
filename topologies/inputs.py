"""The generated inputs of RollingCount (a text) and UniqueVisitor (page views).

Both are drawn from declared distributions with a fixed seed, so every run
sees the same data and the skew that drives the fields groupings is known:
word frequencies and page popularity follow Zipf's law (rank r has weight
``1 / r**s``), as natural text and web traffic roughly do.
"""
from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator

SEED = 20240601

TEXT_VOCABULARY_SIZE = 5_000
TEXT_WORD_ZIPF_S = 1.0
"""Zipf exponent of word frequencies in the RollingCount text."""
SENTENCE_WORDS = (4, 16)
"""Fewest and most words in one sentence (uniform)."""

URL_COUNT = 1_000
URL_ZIPF_S = 1.0
"""Zipf exponent of page popularity: the most viewed page gets about 13% of all views at 1 000 pages."""
USER_COUNT = 50_000
"""Visitors, uniform."""
HTTP_STATUSES = ((200, 0.95), (404, 0.04), (500, 0.01))

_SYLLABLES = (
    "ka", "lo", "mi", "ten", "ra", "su", "vo", "ne", "di", "pa", "sho", "gu", "fe", "ri", "ta", "mo",
    "be", "lin", "zo", "ha", "qui", "de", "ma", "no", "ver", "si", "tu", "el", "an", "or",
)


class ZipfSampler:
    """Draws ranks 1..n with probability proportional to ``1 / rank**s``."""

    def __init__(self, n: int, s: float, rng: random.Random) -> None:
        if n < 1:
            raise ValueError("a Zipf distribution needs at least one rank")
        self._cumulative = list(itertools.accumulate(1.0 / r**s for r in range(1, n + 1)))
        self._rng = rng

    def probability(self, rank: int) -> float:
        previous = self._cumulative[rank - 2] if rank > 1 else 0.0
        return (self._cumulative[rank - 1] - previous) / self._cumulative[-1]

    def draw(self) -> int:
        return bisect.bisect_left(self._cumulative, self._rng.random() * self._cumulative[-1]) + 1


def word(rank: int) -> str:
    """The vocabulary's word of this frequency rank: distinct, pronounceable, short for frequent ranks."""
    parts = []
    n = rank
    while True:
        n, digit = divmod(n, len(_SYLLABLES))
        parts.append(_SYLLABLES[digit])
        if n == 0:
            return "".join(parts)


def sentences(task: int = 0, seed: int = SEED) -> Iterator[str]:
    """Endless sentences of the RollingCount text; each spout task gets its own reproducible stream."""
    rng = random.Random(f"{seed}:sentences:{task}")
    words = ZipfSampler(TEXT_VOCABULARY_SIZE, TEXT_WORD_ZIPF_S, rng)
    while True:
        length = rng.randint(*SENTENCE_WORDS)
        yield " ".join(word(words.draw()) for _ in range(length))


def page_url(rank: int) -> str:
    return f"http://shop.example/page/{rank}"


def page_views(task: int = 0, seed: int = SEED) -> Iterator[str]:
    """Endless page views ``url\\tstatus\\tzip\\tuser`` (storm-benchmark's PageView text form)."""
    rng = random.Random(f"{seed}:page_views:{task}")
    pages = ZipfSampler(URL_COUNT, URL_ZIPF_S, rng)
    statuses = [code for code, _ in HTTP_STATUSES]
    status_weights = [weight for _, weight in HTTP_STATUSES]
    while True:
        status = rng.choices(statuses, status_weights)[0]
        zip_code = rng.randint(10_000, 99_999)
        user = rng.randrange(USER_COUNT)
        yield f"{page_url(pages.draw())}\t{status}\t{zip_code}\t{user}"


def parse_page_view(line: str) -> tuple[str, int] | None:
    """The (url, user) of a page view line, or None if the line is malformed."""
    parts = line.split("\t")
    if len(parts) < 4:
        return None
    try:
        return parts[0].strip(), int(parts[3])
    except ValueError:
        return None
