"""The unit of a local corpus, and how long texts are cut into such units."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from search_o1.window import split_sentences

__all__ = ["MAX_WORDS", "MIN_WORDS", "Passage", "chunk_text"]

# FlashRAG's wiki passages are 100 words; documents are cut into 100-200 word passages so
# a hit is specific enough to rank well and short enough to hand ten to the reader.
MIN_WORDS = 100
MAX_WORDS = 200

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class Passage:
    """One searchable passage: a stable id, the title of its document, and its text.

    `replaced` counts the characters of the source that were not valid text (lone
    surrogates) and became U+FFFD when it was read.
    """

    id: str
    title: str
    text: str
    replaced: int = 0


def _count(text: str) -> int:
    return len(text.split())


def _pieces(paragraph: str, max_words: int) -> Iterator[str]:
    """The paragraph's sentences, with any sentence longer than `max_words` cut by words."""
    for sentence in split_sentences(paragraph):
        words = sentence.split()
        if len(words) <= max_words:
            yield sentence
            continue
        for i in range(0, len(words), max_words):
            yield " ".join(words[i : i + max_words])


def chunk_text(text: str, *, min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> list[str]:
    """Cut `text` into chunks of at most `max_words`, on paragraph or sentence boundaries.

    Sentences are packed greedily; a chunk that already has `min_words` ends at the next
    paragraph break, so chunks follow the author's structure where it allows.

    >>> chunk_text("One. Two.\\n\\nThree.", min_words=1, max_words=5)
    ['One. Two.', 'Three.']
    >>> chunk_text("a b c d e f g", max_words=3)
    ['a b c', 'd e f', 'g']
    """
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for paragraph in _PARAGRAPH_BREAK.split(text):
        for piece in _pieces(paragraph, max_words):
            n = _count(piece)
            if current and words + n > max_words:
                chunks.append(" ".join(current))
                current, words = [], 0
            current.append(piece)
            words += n
        if words >= min_words:
            chunks.append(" ".join(current))
            current, words = [], 0
    if current:
        chunks.append(" ".join(current))
    return chunks
