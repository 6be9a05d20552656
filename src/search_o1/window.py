"""Choosing the part of a long text that matters for a query: sentence split, F1 match, window.

The paper cuts each fetched page to a window of `context_chars` on each side of the
sentence that best matches the search snippet (word-set F1 above 0.2), and falls back to
the page's head. `best_window` is that rule; `cut_document` is its bounded cousin used for
corpus hits (at most `max_chars` in total, centred on the best part). Both are pure.
"""

from __future__ import annotations

import re

__all__ = ["best_window", "cut_document", "sentence_spans", "split_sentences", "word_f1"]

# F1 at or below this means "no sentence really matches": fall back to the text's head.
MATCH_THRESHOLD = 0.2

# A sentence ends at . ! or ? (optionally followed by a closing quote or bracket) and
# whitespace, or at a line break. Fixed-width lookbehinds, hence the two alternatives.
_BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+|\s*\n\s*")
_WORD = re.compile(r"\w+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences in `text`, without surrounding whitespace.

    >>> t = "One two. Three four!  Five"
    >>> [t[a:b] for a, b in sentence_spans(t)]
    ['One two.', 'Three four!', 'Five']
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        _add_span(text, start, m.start(), spans)
        start = m.end()
    _add_span(text, start, len(text), spans)
    return spans


def _add_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    # Leading/trailing whitespace can remain at the text's edges; trim it off the span.
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` (regex rules, no NLTK).

    >>> split_sentences('He said "Yes." Then left.\\nNew line')
    ['He said "Yes."', 'Then left.', 'New line']
    """
    return [text[a:b] for a, b in sentence_spans(text)]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def word_f1(a: str, b: str) -> float:
    """F1 of the two texts' word sets (lowercased, punctuation stripped).

    >>> word_f1("The cat sat.", "the CAT")
    0.8
    >>> word_f1("", "x")
    0.0
    """
    wa, wb = _words(a), _words(b)
    common = len(wa & wb)
    if common == 0:
        return 0.0
    precision, recall = common / len(wa), common / len(wb)
    return 2 * precision * recall / (precision + recall)


def _best_sentence(text: str, probe: str) -> tuple[tuple[int, int] | None, float]:
    """The span of the sentence with the highest F1 against `probe`, and that F1."""
    probe_words = _words(probe)
    best: tuple[int, int] | None = None
    best_f1 = 0.0
    if not probe_words:
        return None, 0.0
    for start, end in sentence_spans(text):
        f1 = word_f1(text[start:end], probe)
        if f1 > best_f1:
            best, best_f1 = (start, end), f1
    return best, best_f1


def _snap(text: str, start: int, end: int) -> str:
    """text[start:end], shrunk so that it neither starts nor ends in the middle of a word."""
    start, end = max(0, start), min(len(text), end)
    if start > 0 and not text[start - 1].isspace():
        space = text.find(" ", start, end)
        start = space + 1 if space != -1 else start
    if end < len(text) and not text[end].isspace():
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    return text[start:end].strip()


def best_window(text: str, probe: str, max_chars: int) -> tuple[str, bool]:
    """The text around the sentence that best matches `probe`, and whether one matched.

    With a sentence whose word-set F1 against `probe` exceeds 0.2, returns that sentence
    with about `max_chars` characters on each side (cut at word boundaries) and True.
    Otherwise returns about the first `2 * max_chars` characters and False.

    >>> text = "Paris is in France. Tosca is an opera by Puccini. Rome is in Italy."
    >>> best_window(text, "opera Tosca composer", 12)
    ('in France. Tosca is an opera by Puccini. Rome is in', True)
    >>> best_window(text, "quantum chromodynamics", 10)
    ('Paris is in France.', False)
    """
    span, f1 = _best_sentence(text, probe)
    if span is None or f1 <= MATCH_THRESHOLD:
        return _snap(text, 0, 2 * max_chars), False
    start, end = span
    return _snap(text, start - max_chars, end + max_chars), True


def cut_document(text: str, query: str, max_chars: int) -> str:
    """At most `max_chars` of `text`, centred on the sentence that best matches `query`.

    Short texts come back whole; with no matching sentence, the head of the text.

    >>> cut_document("short text", "anything", 100)
    'short text'
    >>> text = "Alpha beta gamma. " * 5 + "Tosca premiered in Rome. " + "Delta epsilon. " * 5
    >>> cut_document(text, "where did Tosca premiere", 60)
    'Alpha beta gamma. Tosca premiered in Rome. Delta epsilon.'
    """
    if len(text) <= max_chars:
        return text
    span, f1 = _best_sentence(text, query)
    if span is None or f1 <= MATCH_THRESHOLD:
        return _snap(text, 0, max_chars)
    middle = (span[0] + span[1]) // 2
    start = max(0, min(middle - max_chars // 2, len(text) - max_chars))
    return _snap(text, start, start + max_chars)
