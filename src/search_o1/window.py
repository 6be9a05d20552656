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


# A snippet phrase this long found verbatim in a sentence settles the match by itself.
MIN_PHRASE_WORDS = 5
# Search snippets join fragments of the page with ellipses.
_ELLIPSIS = re.compile(r"\.\.\.+|…")
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]?$")


def _phrase(probe: str) -> list[str]:
    """The words of the probe's longest ellipsis-separated fragment, in order."""
    fragments = [_WORD.findall(f.lower()) for f in _ELLIPSIS.split(probe)]
    return max(fragments, key=len, default=[])


def _contains(words: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return any(words[i : i + n] == phrase for i in range(len(words) - n + 1))


def _tier(sentence: str, phrase: list[str], probe_size: int) -> int:
    """2: holds the snippet verbatim; 1: a body sentence; 0: a heading or short line.

    Pages are split at every line break, so a title that repeats the snippet's first
    words has a high F1 (all its few words match); ranking tiers first keeps it from
    beating the body sentence that actually carries the snippet.
    """
    words = _WORD.findall(sentence.lower())
    if len(phrase) >= MIN_PHRASE_WORDS and _contains(words, phrase):
        return 2
    heading = not _SENTENCE_END.search(sentence) and len(words) < probe_size
    return 0 if heading else 1


def _best_sentence(text: str, probe: str) -> tuple[tuple[int, int] | None, bool]:
    """The span of the best sentence for `probe`, and whether it counts as a match.

    Candidates are sentences holding the snippet verbatim, or with word-set F1 above
    0.2; among them the highest tier wins, then the highest F1.
    """
    probe_size = len(_words(probe))
    if not probe_size:
        return None, False
    phrase = _phrase(probe)
    best: tuple[tuple[int, int] | None, tuple[int, float]] = (None, (-1, 0.0))
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        tier, f1 = _tier(sentence, phrase, probe_size), word_f1(sentence, probe)
        if (tier == 2 or f1 > MATCH_THRESHOLD) and (tier, f1) > best[1]:
            best = ((start, end), (tier, f1))
    return best[0], best[0] is not None


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

    With a sentence whose word-set F1 against `probe` exceeds 0.2 (or that holds the
    snippet verbatim), returns that sentence with about `max_chars` characters on each
    side (cut at word boundaries) and True. A heading or short line wins only when no
    body sentence matches.
    Otherwise returns about the first `2 * max_chars` characters and False.

    >>> text = "Paris is in France. Tosca is an opera by Puccini. Rome is in Italy."
    >>> best_window(text, "opera Tosca composer", 12)
    ('in France. Tosca is an opera by Puccini. Rome is in', True)
    >>> best_window(text, "quantum chromodynamics", 10)
    ('Paris is in France.', False)
    """
    span, matched = _best_sentence(text, probe)
    if span is None or not matched:
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
    span, matched = _best_sentence(text, query)
    if span is None or not matched:
        return _snap(text, 0, max_chars)
    middle = (span[0] + span[1]) // 2
    start = max(0, min(middle - max_chars // 2, len(text) - max_chars))
    return _snap(text, start, start + max_chars)
