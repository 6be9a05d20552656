"""Where an answer's facts came from: from each search's documents to numbered sources.

Provenance is read from the trace, which already holds everything it needs: each
search record keeps its documents and the reader's prompt and output. In our profile
the reader is asked (`CITE_INSTRUCTION`, appended to the built-in prompt) to mark each
fact with the number of the document it comes from, e.g. `[2]`; those marks map back
to the record's documents. A fact without a mark keeps every document of its search,
and so does a search whose reader was not asked to mark (the paper profile sends the
paper's prompt unchanged) or that had no reader at all (`--no-reader`, and rag-agent,
whose raw results are the hits as listed). A reader that says it found nothing (the
prompt's "No helpful information found.") leaves its search without sources.

The answer's sources are the documents behind the searches whose results went into
the chain, numbered in order of first use, each with the sentence of the document that
best matches the fact it supports (when one matches well enough).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urldefrag

from search_o1.prompts import NOTHING_FOUND
from search_o1.types import Document, SearchRecord, Source, Trace

__all__ = [
    "CITE_INSTRUCTION",
    "Provenance",
    "answer_sources",
    "cited_numbers",
    "record_provenance",
    "renumbered_facts",
    "says_nothing_found",
    "search_sources",
    "split_facts",
    "supporting_sentence",
]

# Appended to our built-in reader prompt; its presence in a record's reader prompt is
# also how provenance knows that the marks were asked for.
CITE_INSTRUCTION = (
    "After each fact, write the number of the document it comes from in square brackets, e.g. [2]."
)
_MARK = re.compile(r"\[\s*(?:doc(?:ument)?\s*)?(\d{1,3}(?:\s*,\s*\d{1,3})*)\s*\]", re.I)
# A sentence ends at . ! ? and a space, unless a citation mark follows (it belongs to
# the sentence), or after a mark followed by a capital.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?!\[)|(?<=\])\s+(?=[A-Z])")
_WORD = re.compile(r"[^\W_]+")
_STOPWORDS = (
    "the a an and or of in on at to for by with from as is was were are be been it its "
    "that this which who whom whose what when where his her their there he she they "
    "not no but also into than then has had have"
)
_STOP = frozenset(_STOPWORDS.split())
# Share of a fact's content words a document sentence must hold to count as its source.
MIN_OVERLAP = 0.5


def cited_numbers(text: str, n_documents: int) -> list[int]:
    """Document numbers marked in `text`, in order, once each, within 1..n_documents.

    >>> cited_numbers("Born in Lucca [2]. Opera by Puccini [1, 3][9].", 3)
    [2, 1, 3]
    >>> cited_numbers("no marks", 3)
    []
    """
    found: list[int] = []
    for match in _MARK.finditer(text):
        for part in match.group(1).split(","):
            n = int(part)
            if 1 <= n <= n_documents and n not in found:
                found.append(n)
    return found


def split_facts(text: str) -> list[str]:
    """The facts of a reader's output: its lines, then sentences (a mark stays with the
    sentence before it). Lead-ins ending with ':' and bare bullets are not facts.

    >>> split_facts("Facts:\\n- A was born in B. [1] C designed D [2].")
    ['A was born in B. [1]', 'C designed D [2].']
    """
    facts = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            if len(_WORD.findall(sentence)) >= 2 and not sentence.endswith(":"):
                facts.append(sentence)
    return facts


@dataclass(frozen=True)
class Provenance:
    """One document behind a search's inserted result, and the facts read from it."""

    document: Document
    number: int  # its number in the reader's prompt (1-based)
    facts: tuple[str, ...] = ()


def says_nothing_found(text: str) -> bool:
    """Whether a reader's output (or one of its facts) is the prompt's "nothing found".

    >>> says_nothing_found("**Final Information**\\n\\nNo helpful information found [1].")
    True
    >>> says_nothing_found("No helpful information found about Lucca; Puccini was born there.")
    False
    """
    said = _unmarked(_strip_heading(text)).rstrip(". ").lower()
    return said == NOTHING_FOUND.rstrip(".").lower()


def _marks_requested(record: SearchRecord) -> bool:
    return record.reader is not None and CITE_INSTRUCTION in record.reader.prompt


def record_provenance(record: SearchRecord) -> list[Provenance]:
    """The documents a searched record's inserted result was read from, with the facts
    each supports. Nothing for a search that was not run, failed or found nothing."""
    reader = record.reader
    docs = record.documents
    if reader is None and not docs:  # rag-agent's raw results: the hits as listed
        docs = tuple(Document(h, h.snippet or h.text, "snippet-only") for h in record.hits)
    if record.outcome != "searched" or not docs:
        return []
    if reader is None:  # documents inserted as they are: all of them are the result
        return [Provenance(d, i) for i, d in enumerate(docs, 1)]
    if not reader.found:
        return []
    written = split_facts(_strip_heading(reader.refined))
    # The reader's "nothing found" is no fact: it points at no document.
    facts = [fact for fact in written if not says_nothing_found(fact)]
    if written and not facts:
        return []
    by_number: dict[int, list[str]] = {}
    for fact in facts:
        marked = cited_numbers(fact, len(docs)) if _marks_requested(record) else []
        for n in marked or range(1, len(docs) + 1):
            by_number.setdefault(n, []).append(_unmarked(fact))
    if not facts:  # facts with no sentence shape: every document stands behind them
        by_number = {n: [] for n in range(1, len(docs) + 1)}
    return [Provenance(docs[n - 1], n, tuple(by_number[n])) for n in sorted(by_number)]


def _unmarked(fact: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", _MARK.sub("", fact)).strip()


def _strip_heading(text: str) -> str:
    return text.replace("**Final Information**", "").strip()


def _content_words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 1 and w not in _STOP}


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", line) if s.strip())
    return out


def supporting_sentence(fact: str, text: str) -> str:
    """The sentence of `text` that holds most of `fact`'s content words ("" when none
    holds at least half of them).

    >>> supporting_sentence("Orla Venn was born in Tessaly", "Orla Venn is an architect. "
    ...     "Venn was born in Tessaly in 1931.")
    'Venn was born in Tessaly in 1931.'
    """
    wanted = _content_words(fact)
    if not wanted:
        return ""
    best, best_share = "", 0.0
    for sentence in _sentences(text):
        share = len(wanted & _content_words(sentence)) / len(wanted)
        if share > best_share:
            best, best_share = sentence, share
    return best if best_share >= MIN_OVERLAP else ""


def _quote(prov: Provenance) -> str:
    quotes: list[str] = []
    for fact in prov.facts:
        sentence = supporting_sentence(fact, prov.document.text or prov.document.hit.text)
        if sentence and sentence not in quotes:
            quotes.append(sentence)
    return " … ".join(quotes)


def _page(url: str) -> str:
    # The fragment never reaches the server: "…/Tosca#Roles" and a search engine's
    # "…/Tosca#:~:text=…" are the one page "…/Tosca".
    return urldefrag(url)[0]


def _key(doc: Document) -> str:
    # A passage is named by its id and title, not by the backend that found it: bm25 and
    # dense over one corpus (`--search bm25,dense`) find the same passage (as fusion's
    # identity has it); the title keeps two corpora that reuse ids apart.
    if doc.hit.url:
        return _page(doc.hit.url)
    return f"passage:{doc.hit.id}\n{doc.hit.title}"


def _numbered(found: Iterable[tuple[Provenance, str]]) -> list[Source]:
    sources: dict[str, Source] = {}
    for prov, query in found:
        key = _key(prov.document)
        quote = _quote(prov)
        if key in sources:
            earlier = sources[key]
            if quote and quote not in earlier.quote:
                joined = f"{earlier.quote} … {quote}" if earlier.quote else quote
                sources[key] = Source(
                    earlier.n, earlier.id, earlier.title, earlier.url, joined, earlier.query
                )
            continue
        hit = prov.document.hit
        sources[key] = Source(len(sources) + 1, hit.id, hit.title, hit.url, quote, query)
    return list(sources.values())


def search_sources(record: SearchRecord) -> list[Source]:
    """The numbered sources of one search's result."""
    return _numbered((prov, record.query) for prov in record_provenance(record))


def renumbered_facts(record: SearchRecord, sources: Sequence[Source]) -> str:
    """The reader's facts with each mark naming its source's number in `sources` (the
    reader numbered the documents of its prompt, of which the sources are a part).

    Marks only mean something where they were asked for; elsewhere the text is as it was.
    """
    reader = record.reader
    if reader is None or not _marks_requested(record):
        return reader.refined if reader is not None else ""
    by_key = {_page(s.url) if s.url else s.id: s.n for s in sources}
    docs = record.documents

    def number(n: int) -> int | None:
        if not 1 <= n <= len(docs):
            return None
        hit = docs[n - 1].hit
        return by_key.get(_page(hit.url) if hit.url else hit.id)

    def replace(match: re.Match[str]) -> str:
        found = [number(int(p)) for p in match.group(1).split(",")]
        kept = sorted({n for n in found if n is not None})
        return f"[{', '.join(map(str, kept))}]" if kept else ""

    return _MARK.sub(replace, reader.refined)


def answer_sources(trace: Trace | Sequence[SearchRecord]) -> list[Source]:
    """The numbered sources of an answer: every document behind a search result the
    chain read, in order of first use, each once."""
    records = trace.searches if isinstance(trace, Trace) else trace
    return _numbered((prov, r.query) for r in records for prov in record_provenance(r))
