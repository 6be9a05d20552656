"""The simulated model's behaviour: seeded, deterministic texts for chains and readers.

A chain is identified by its instruction message; from a hash of it and the seed the
simulator decides how many searches the chain makes (0-6) and how long each reasoning
segment is (log-normal: hundreds of tokens typically, tens of thousands in the tail).
One token is `search_o1.tokens.CHARS_PER_TOKEN` characters throughout the simulation.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass

from search_o1.tokens import CHARS_PER_TOKEN

BEGIN_QUERY = "<|begin_search_query|>"
END_QUERY = "<|end_search_query|>"
FINAL_INFORMATION = "**Final Information**"
# Searches per chain, 0..6: most chains search two or three times.
_SEARCH_WEIGHTS = (0.10, 0.20, 0.24, 0.20, 0.12, 0.08, 0.06)
_WORDS = (
    "the",
    "so",
    "we",
    "know",
    "that",
    "first",
    "then",
    "check",
    "whether",
    "it",
    "follows",
    "from",
    "this",
    "fact",
    "hence",
    "consider",
    "case",
    "value",
    "answer",
    "because",
    "next",
    "step",
    "given",
    "which",
    "means",
    "likely",
    "recall",
    "source",
    "document",
    "claims",
    "perhaps",
    "compute",
    "total",
    "again",
    "wait",
    "verify",
    "earlier",
    "result",
    "city",
    "river",
    "year",
    "born",
    "author",
    "film",
    "country",
    "number",
    "second",
    "third",
    "maybe",
    "indeed",
)


def seeded_rng(*parts: object) -> random.Random:
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def _make_filler(size: int) -> str:
    rng = random.Random(7)
    lines, length = [], 0
    while length < size:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 18))) + ".\n"
        lines.append(line)
        length += len(line)
    return "".join(lines)


_FILLER = _make_filler(1 << 18)


def filler(rng: random.Random, tokens: int) -> str:
    """`tokens` x 4 characters of reasoning-like text (lines, so readers see steps)."""
    chars = tokens * CHARS_PER_TOKEN
    out = []
    while chars > 0:
        start = rng.randrange(0, len(_FILLER) // 2)
        piece = _FILLER[start : start + min(chars, len(_FILLER) // 2)]
        out.append(piece)
        chars -= len(piece)
    return "".join(out)


@dataclass(frozen=True)
class Profile:
    """Length distribution of reasoning segments and reader outputs, in tokens."""

    segment_median: float = 300.0
    segment_sigma: float = 1.5
    segment_max: int = 16000
    reader_median: float = 350.0
    reader_sigma: float = 0.4
    length_scale: float = 1.0  # shrinks every length (the 1,000-in-flight run)


@dataclass(frozen=True)
class ChainPlan:
    key: str
    searches: int
    segments: tuple[int, ...]  # tokens per segment, searches + 1 of them

    def segment_text(self, index: int, seed: int) -> str:
        """Segment `index`: reasoning, then a query (all but the last) or the answer."""
        i = min(index, len(self.segments) - 1)
        text = filler(seeded_rng(seed, self.key, "seg", index), self.segments[i])
        if index < self.searches:
            return f"{text}{BEGIN_QUERY}fact {self.key} number {index}{END_QUERY}"
        return f"{text}\nSo the answer is \\boxed{{answer {self.key}}}."


def plan_chain(instruction: str, seed: int, profile: Profile) -> ChainPlan:
    key = hashlib.blake2b(instruction.encode(), digest_size=5).hexdigest()
    rng = seeded_rng(seed, key, "plan")
    searches = rng.choices(range(len(_SEARCH_WEIGHTS)), weights=_SEARCH_WEIGHTS)[0]
    segments = tuple(
        _lognormal(rng, profile.segment_median, profile.segment_sigma, profile.segment_max, profile)
        for _ in range(searches + 1)
    )
    return ChainPlan(key, searches, segments)


def reader_text(prompt: str, seed: int, profile: Profile) -> str:
    """Reason-in-Documents output: some analysis, then the heading and a few facts."""
    rng = seeded_rng(seed, hashlib.blake2b(prompt.encode(), digest_size=8).hexdigest())
    analysis = filler(
        rng, _lognormal(rng, profile.reader_median, profile.reader_sigma, 4000, profile)
    )
    facts = filler(rng, max(10, int(60 * profile.length_scale))).replace("\n", " ").strip()
    return f"{analysis}\n{FINAL_INFORMATION}\n\n{facts}"


def _lognormal(rng: random.Random, median: float, sigma: float, cap: int, profile: Profile) -> int:
    value = median * math.exp(rng.gauss(0.0, sigma)) * profile.length_scale
    return max(8, min(int(cap * profile.length_scale), int(value)))
