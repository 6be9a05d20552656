"""The bm25 backend: build/save/load, relevance, caching by source key, real corpora."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from search_o1.config import Settings
from search_o1.corpus.passage import Passage
from search_o1.errors import ConfigError, InputFileError
from search_o1.registry import resolve_search
from search_o1.search.base import Search
from search_o1.search.bm25 import BM25Search
from search_o1.wiring import searches

SHARED_DATA = Path(__file__).parents[2].parent / "shared" / "data"

PASSAGES = [
    Passage(
        "1", "Tosca", "Tosca is an opera in three acts by Giacomo Puccini, first performed in Rome."
    ),
    Passage("2", "Giacomo Puccini", "Giacomo Puccini was an Italian composer born in Lucca."),
    Passage("3", "Lucca", "Lucca is a city in Tuscany, Italy, known for its Renaissance walls."),
    Passage("4", "Bread", "Bread is a staple food prepared from a dough of flour and water."),
    Passage("5", "Rome", "Rome is the capital city of Italy."),
]


@pytest.fixture(autouse=True)
def index_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test caches indexes in its own folder, never in the user's home."""
    cache = tmp_path / "index-cache"
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(cache))
    return cache


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts BM25Search.build calls (to tell a cache hit from a rebuild)."""
    calls: list[int] = []
    original = BM25Search.build.__func__  # type: ignore[attr-defined]

    def counting(cls: type[BM25Search], *args: Any, **kwargs: Any) -> BM25Search:
        calls.append(1)
        return original(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(BM25Search, "build", classmethod(counting))
    yield calls


def titles(index: BM25Search, query: str, k: int = 5) -> list[str]:
    return [p.title for p, _ in index.query(query, k)]


def test_is_a_search_backend_with_relevant_hits() -> None:
    index = BM25Search.build(PASSAGES)
    assert isinstance(index, Search) and index.name == "bm25"
    hits = asyncio.run(index.search("Where was the composer Puccini born?", k=3))
    assert hits[0].title == "Giacomo Puccini"
    assert hits[0].id == "2" and hits[0].source == "bm25"
    assert "Lucca" in hits[0].text
    scores = [h.score or 0.0 for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


def test_titles_are_indexed_and_stemming_matches_inflections() -> None:
    index = BM25Search.build(PASSAGES)
    assert titles(index, "lucca")[:2] == ["Lucca", "Giacomo Puccini"]
    assert titles(index, "operas performing")[0] == "Tosca"


async def test_empty_stopword_unknown_queries_and_large_k() -> None:
    index = BM25Search.build(PASSAGES)
    assert await index.search("", k=5) == []
    assert await index.search("   ", k=5) == []
    assert await index.search("the of and", k=5) == []
    assert await index.search("xylophone", k=5) == []
    assert len(await index.search("Italy", k=100)) == 2  # only passages that match


async def test_concurrent_searches_agree() -> None:
    index = BM25Search.build(PASSAGES)
    queries = ["Puccini", "Lucca walls", "bread flour", "capital of Italy"] * 10
    results = await asyncio.gather(*(index.search(q, k=2) for q in queries))
    for query, hits in zip(queries, results, strict=True):
        assert hits == await index.search(query, k=2)


def test_hit_text_is_cut_around_the_best_part() -> None:
    long_text = "Filler words here. " * 400 + "Tosca premiered in Rome in 1900. " + "More. " * 400
    index = BM25Search.build([Passage("x", "Long", long_text)], max_doc_chars=300)
    (hit,) = asyncio.run(index.search("when did Tosca premiere", k=1))
    assert len(hit.text) <= 300
    assert "Tosca premiered in Rome in 1900." in hit.text


def test_save_load_round_trip(tmp_path: Path) -> None:
    built = BM25Search.build(PASSAGES, source="test", content_hash="abc")
    out = built.save(tmp_path / "idx")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["count"] == 5 and manifest["source"] == "test"
    assert manifest["content_hash"] == "abc" and manifest["format"] == "search-o1-bm25"
    loaded = BM25Search.load(out)
    assert loaded.passages == built.passages
    for query in ["Puccini Lucca", "capital", "dough"]:
        assert loaded.query(query, 5) == built.query(query, 5)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_load_rejects_folders_that_are_not_indexes(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="not an index"):
        BM25Search.load(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "search-o1-bm25", "version": 999}')
    with pytest.raises(InputFileError, match="build it again"):
        BM25Search.load(tmp_path)


def test_empty_corpus_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no passages"):
        BM25Search.build([])


def test_folder_is_cached_by_key_and_rebuilt_after_a_change(
    tmp_path: Path, index_cache: Path, builds: list[int]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Tosca is an opera by Puccini.")
    (docs / "b.md").write_text("# Bread\n\nBread is made of flour.")
    first = BM25Search.open(docs)
    second = BM25Search.open(docs)
    assert builds == [1]
    assert second.passages == first.passages
    assert len(list(index_cache.iterdir())) == 1
    (docs / "a.txt").write_text("Tosca is an opera by Giacomo Puccini, 1900.")
    os.utime(docs / "a.txt", ns=(1, 1))  # a new mtime even on coarse clocks
    assert "Giacomo" in BM25Search.open(docs).passages[0].text
    assert builds == [1, 1]


def test_jsonl_is_cached_by_content(tmp_path: Path, builds: list[int]) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"title": p.title, "text": p.text}) for p in PASSAGES))
    BM25Search.open(path)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    assert titles(BM25Search.open(copy), "Puccini")[0] == "Giacomo Puccini"
    assert builds == [1]  # same bytes, same index


def test_open_accepts_a_built_index_and_rejects_a_missing_path(tmp_path: Path) -> None:
    out = BM25Search.build(PASSAGES).save(tmp_path / "idx")
    assert len(BM25Search.open(out)) == 5
    with pytest.raises(InputFileError, match="no such file"):
        BM25Search.open(tmp_path / "absent.jsonl")


def test_from_settings_through_the_registry(tmp_path: Path) -> None:
    out = BM25Search.build(PASSAGES).save(tmp_path / "idx")
    backend = resolve_search("bm25")(Settings(corpus=str(out), max_doc_chars=500))
    assert isinstance(backend, BM25Search) and backend.max_doc_chars == 500
    with pytest.raises(ConfigError, match="--corpus"):
        searches.bm25(Settings())


# ---- real data ----


@pytest.fixture
def multihop_index(multihop_bm25: BM25Search) -> BM25Search:
    return multihop_bm25


def test_multihop_gold_paragraph_ranks_in_top_10(multihop_index: BM25Search) -> None:
    question = (
        "Hugo Rodríguez Romero is a Spanish footballer who plays for a team in the "
        "autonomous community of what?"
    )
    assert "Hugo Rodríguez Romero" in titles(multihop_index, question, k=10)


def test_multihop_recall_at_10_on_hotpotqa(multihop_index: BM25Search) -> None:
    questions = SHARED_DATA / "multihop" / "hotpotqa_dev_distractor_200.jsonl"
    if not questions.exists():
        pytest.skip(f"shared data not present: {questions}")
    rows = [json.loads(line) for line in questions.read_text().splitlines()[:20]]
    found = [
        bool(
            {t for t, _ in row["supporting_facts"]}
            & set(titles(multihop_index, row["question"], 10))
        )
        for row in rows
    ]
    assert sum(found) >= 18


def test_demo_corpus_answers_the_demo_question(index_cache: Path) -> None:
    from search_o1.errors import MissingExtraError
    from search_o1.search.bm25 import demo_corpus_path

    try:
        path = demo_corpus_path()
    except MissingExtraError as e:
        pytest.skip(str(e))
    assert path.parent == index_cache
    index = BM25Search.open("demo")
    assert len(index) > 9000
    assert "Giacomo Puccini" in titles(index, "Who composed the opera Tosca?", k=3)
    assert demo_corpus_path() == path  # cached
