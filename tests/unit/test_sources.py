"""Provenance from hit to fact, and the answer's numbered sources."""

from __future__ import annotations

import doctest

import pytest
from tests.two_hop import CORPUS, QUESTION, respond_prompt

from search_o1 import sources as sources_module
from search_o1.engine import Engine, EngineOptions, ReaderOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.sources import (
    CITE_INSTRUCTION,
    answer_sources,
    record_provenance,
    renumbered_facts,
    search_sources,
)
from search_o1.types import Document, Hit, ReaderResult, SearchRecord

DOCS = (
    Document(Hit("d1", "Tosca", url="https://w.test/Tosca"), "Tosca is an opera by Puccini."),
    Document(
        Hit("d2", "Puccini"),
        "Giacomo Puccini was an Italian composer. He was born in Lucca in 1858.",
    ),
    Document(Hit("d3", "Lucca"), "Lucca is a city in Tuscany."),
)


def record(
    refined: str, *, cite: bool = True, found: bool = True, query: str = "q"
) -> SearchRecord:
    prompt = "reader prompt\n" + (CITE_INSTRUCTION if cite else "")
    reader = ReaderResult(prompt=prompt, raw=refined, refined=refined, found=found)
    hits = tuple(d.hit for d in DOCS)
    return SearchRecord(query, "searched", hits, DOCS, reader)


def test_doctests() -> None:
    assert doctest.testmod(sources_module).failed == 0


def test_marks_map_facts_to_their_documents() -> None:
    found = record_provenance(record("Tosca is by Puccini [1]. Puccini was born in Lucca. [2]"))
    assert [(p.number, p.facts) for p in found] == [
        (1, ("Tosca is by Puccini.",)),
        (2, ("Puccini was born in Lucca.",)),
    ]


def test_a_fact_without_a_mark_keeps_every_document_of_its_search() -> None:
    found = record_provenance(record("Tosca is by Puccini [1].\nLucca is in Tuscany."))
    assert [p.number for p in found] == [1, 2, 3]
    assert found[1].facts == ("Lucca is in Tuscany.",)


def test_marks_count_only_where_they_were_asked_for() -> None:
    # The paper profile's reader was not asked to mark: every document stands behind it.
    found = record_provenance(record("Puccini was born in Lucca [2].", cite=False))
    assert [p.number for p in found] == [1, 2, 3]


@pytest.mark.parametrize(
    ("rec", "numbers"),
    [
        (record("nothing useful", found=False), []),
        (SearchRecord("q", "failed", documents=DOCS, error="down"), []),
        (SearchRecord("q", "searched", documents=DOCS), [1, 2, 3]),  # --no-reader
    ],
)
def test_no_facts_no_sources_and_no_reader_all_documents(
    rec: SearchRecord, numbers: list[int]
) -> None:
    assert [p.number for p in record_provenance(rec)] == numbers


def test_sources_are_numbered_once_each_with_their_supporting_sentence() -> None:
    first = record("Tosca is an opera by Puccini [1].", query="Tosca composer")
    second = record(
        "Puccini was born in Lucca in 1858 [2]. Tosca is an opera [1].", query="Puccini birthplace"
    )
    found = answer_sources([first, second])
    assert [(s.n, s.id, s.url, s.query) for s in found] == [
        (1, "d1", "https://w.test/Tosca", "Tosca composer"),
        (2, "d2", None, "Puccini birthplace"),
    ]
    assert found[0].quote == "Tosca is an opera by Puccini."
    assert found[1].quote == "He was born in Lucca in 1858."
    assert [s.id for s in search_sources(second)] == ["d1", "d2"]


def test_a_fact_that_matches_no_sentence_gets_no_quote() -> None:
    [source] = answer_sources([record("Verdi wrote Aida [3].")])
    assert source.id == "d3" and source.quote == ""


async def test_our_reader_is_asked_for_marks_and_the_papers_is_not() -> None:
    from search_o1.corpus.passage import Passage
    from search_o1.search.bm25 import BM25Search

    def engine(cite: bool) -> tuple[Engine, ScriptedLLM]:
        llm = ScriptedLLM(respond_prompt)
        search = BM25Search.build(Passage(r["id"], r["title"], r["text"]) for r in CORPUS)
        options = EngineOptions(task="multihop", reader=ReaderOptions(cite=cite))
        return Engine(llm, search, options=options), llm

    ours, llm = engine(True)
    trace = await ours.run(QUESTION)
    readers = [
        p.messages[0].content
        for p in llm.prompts
        if "**Current search query**" in p.messages[0].content
    ]
    assert len(readers) == 2 and all(r.endswith(CITE_INSTRUCTION + "\n") for r in readers)
    assert [s.id for s in answer_sources(trace)] == ["b1", "p1"]
    paper, llm = engine(False)
    trace = await paper.run(QUESTION)
    assert not any(CITE_INSTRUCTION in p.messages[0].content for p in llm.prompts)
    assert trace.answer == "Tessaly"
    # Every document of each search: the bridge and the town of bridges, then Orla Venn
    # (and the bridge again, numbered once).
    assert [s.id for s in answer_sources(trace)] == ["b1", "x1", "p1"]


def test_a_searchs_facts_name_their_sources_numbers() -> None:
    rec = record("Lucca is in Tuscany [3]. Tosca is an opera by Puccini [1, 9].")
    found = search_sources(rec)
    assert [(s.n, s.id) for s in found] == [(1, "d1"), (2, "d3")]
    assert renumbered_facts(rec, found) == (
        "Lucca is in Tuscany [2]. Tosca is an opera by Puccini [1]."
    )
    unasked = record("Lucca is in Tuscany [3].", cite=False)
    assert renumbered_facts(unasked, search_sources(unasked)) == "Lucca is in Tuscany [3]."


def test_a_reader_that_found_nothing_gives_its_search_no_sources() -> None:
    # Our reader prompt and the paper's ask for this very reply when nothing helps; the
    # heading is there, so the reader counts it found (its text is what says otherwise).
    nothing = record("No helpful information found.", query="Lucca opera")
    marked = record("No helpful information found [2].", query="again")
    useful = record("Puccini was born in Lucca in 1858 [2].", query="Puccini birthplace")
    assert record_provenance(nothing) == [] and record_provenance(marked) == []
    assert [(s.n, s.id) for s in answer_sources([nothing, marked, useful])] == [(1, "d2")]
    # A fact that merely begins like it is a fact.
    partly = record("No helpful information found on Tosca; Lucca is in Tuscany [3].")
    assert [p.number for p in record_provenance(partly)] == [3]


def test_one_passage_found_by_two_backends_is_one_source() -> None:
    # `--search bm25,dense`: fusion keeps the hit of whichever backend listed it first,
    # so one passage comes back under either backend's name from search to search.
    def found_by(backend: str, query: str) -> SearchRecord:
        hit = Hit("p7", "Puccini", "He was born in Lucca.", source=backend)
        reader = ReaderResult(
            prompt=CITE_INSTRUCTION, raw="", refined="Puccini was born in Lucca [1].", found=True
        )
        return SearchRecord(query, "searched", (hit,), (Document(hit, hit.text),), reader)

    found = answer_sources([found_by("bm25", "Puccini"), found_by("dense", "Puccini birth")])
    assert [(s.n, s.id, s.query) for s in found] == [(1, "p7", "Puccini")]
    # Two corpora that reuse an id for different passages still give two sources.
    other = SearchRecord(
        "Tosca", "searched", (Hit("p7", "Tosca"),), (Document(Hit("p7", "Tosca"), "Opera."),)
    )
    assert [s.title for s in answer_sources([found_by("bm25", "Puccini"), other])] == [
        "Puccini",
        "Tosca",
    ]


def test_one_page_under_two_fragments_is_one_source() -> None:
    # Search engines link into a page (`#section`, `#:~:text=`); the page fetched is one.
    def found_at(url: str, query: str) -> SearchRecord:
        hit = Hit(url, "Tosca", url=url)
        reader = ReaderResult(
            prompt=CITE_INSTRUCTION, raw="", refined="Tosca is an opera [1].", found=True
        )
        return SearchRecord(
            query, "searched", (hit,), (Document(hit, "Tosca is an opera."),), reader
        )

    page = "https://en.wikipedia.org/wiki/Tosca"
    records = [found_at(page + "#Roles", "Tosca roles"), found_at(page + "#:~:text=opera", "Tosca")]
    found = answer_sources(records)
    assert [(s.n, s.url) for s in found] == [(1, page + "#Roles")]
    both = SearchRecord(
        "Tosca",
        "searched",
        (Hit("a", "Tosca", url=page), Hit("b", "Tosca", url=page + "#Plot")),
        (
            Document(Hit("a", "Tosca", url=page), "x"),
            Document(Hit("b", "Tosca", url=page + "#Plot"), "y"),
        ),
        ReaderResult(
            prompt=CITE_INSTRUCTION, raw="", refined="An opera [2]. In Rome [1].", found=True
        ),
    )
    one = search_sources(both)
    assert [s.url for s in one] == [page]
    assert renumbered_facts(both, one) == "An opera [1]. In Rome [1]."
