"""Dense search over real FAISS indexes, with a small hashing encoder standing in for the
sentence-transformers model (that one is loaded in tests/e2e/test_dense_cli.py): storage,
caching, index kinds, fusion with BM25 and FlashRAG-format indexes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("faiss", reason="the dense extra is not installed")

import faiss

from search_o1.corpus.embed import ProgressFn
from search_o1.corpus.vectors import tune
from search_o1.errors import ConfigError, InputFileError
from search_o1.search.bm25 import BM25Search
from search_o1.search.dense import DenseSearch, passage_text
from search_o1.search.fusion import FusedSearch

ROWS = [
    {"id": "t", "title": "Tosca", "text": "Tosca is an opera by Giacomo Puccini, staged in Rome."},
    {"id": "p", "title": "Giacomo Puccini", "text": "Puccini was born in Lucca, Italy, in 1858."},
    {"id": "b", "title": "Bread", "text": "Bread is baked from flour, water and yeast."},
    {"id": "m", "title": "Mount Everest", "text": "Everest is the highest mountain on Earth."},
]


class HashingEncoder:
    """Words hashed into a fixed number of dimensions, normalised: a real (if crude)
    embedding whose neighbours are passages sharing words. Counts passage encodes."""

    def __init__(self, dim: int = 64, salt: str = "") -> None:
        self.dim = dim
        self.identity = hashlib.sha256(f"hashing:{dim}:{salt}".encode()).hexdigest()
        self.passage_calls = 0

    def _vector(self, text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-9)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        return np.stack([self._vector(t) for t in texts])

    def encode_passages(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        self.passage_calls += 1
        if progress is not None:
            progress(len(texts), len(texts))
        return self.encode_queries(texts)


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_search_finds_the_passage_sharing_the_query_words(corpus: Path) -> None:
    dense = DenseSearch.open(corpus, HashingEncoder())
    hits = asyncio.run(dense.search("where was Puccini born", k=2))
    assert hits[0].id == "p"
    assert hits[0].source == "dense" and hits[0].title == "Giacomo Puccini"
    assert hits[0].score is not None and hits[0].score > hits[1].score  # type: ignore[operator]
    assert asyncio.run(dense.search("   ", k=3)) == []
    assert len(asyncio.run(dense.search("opera", k=50))) == len(ROWS)  # k past the corpus


def test_vectors_are_cached_per_corpus_content_and_model(corpus: Path) -> None:
    encoder = HashingEncoder()
    DenseSearch.open(corpus, encoder)
    again = DenseSearch.open(corpus, encoder)
    assert encoder.passage_calls == 1  # the second open read the saved vectors
    assert again.manifest["count"] == len(ROWS) and again.manifest["dim"] == 64

    other_model = HashingEncoder(salt="other")
    DenseSearch.open(corpus, other_model)
    assert other_model.passage_calls == 1  # another model: its own vectors

    corpus.write_text(corpus.read_text() + json.dumps({"id": "n", "text": "New."}) + "\n")
    assert len(DenseSearch.open(corpus, encoder)) == len(ROWS) + 1
    assert encoder.passage_calls == 2  # new content: embedded afresh


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_kinds_agree_with_flat_and_are_cached(corpus: Path, kind: Any) -> None:
    encoder = HashingEncoder()
    flat = DenseSearch.open(corpus, encoder)
    approx = DenseSearch.open(corpus, encoder, kind=kind)
    tune(approx.index, nprobe=8, ef_search=64)
    for query in ("highest mountain", "bread flour", "opera in Rome"):
        assert flat.query(query, 1)[0][0].id == approx.query(query, 1)[0][0].id
    assert encoder.passage_calls == 1  # built from the saved vectors, not re-embedded
    saved = list((corpus.parent / "cache").rglob(f"{kind}.faiss"))
    assert len(saved) == 1


def test_fused_with_bm25_a_passage_found_by_both_counts_once(corpus: Path) -> None:
    fused = FusedSearch([BM25Search.open(corpus), DenseSearch.open(corpus, HashingEncoder())])
    hits = asyncio.run(fused.search("Puccini born Lucca", k=4))
    ids = [h.id for h in hits]
    assert ids[0] == "p" and len(ids) == len(set(ids))


def _flashrag_files(tmp_path: Path, encoder: HashingEncoder) -> tuple[Path, Path]:
    """A FlashRAG corpus (`contents` = quoted title + newline + text) and its FAISS file."""
    corpus = tmp_path / "wiki.jsonl"
    lines = [
        json.dumps({"id": str(i), "contents": f'"{r["title"]}"\n{r["text"]}'})
        for i, r in enumerate(ROWS)
    ]
    corpus.write_text("\n".join(lines) + "\n")
    texts = [f"{r['title']}\n{r['text']}" for r in ROWS]
    index = faiss.index_factory(encoder.dim, "Flat", faiss.METRIC_INNER_PRODUCT)
    index.add(encoder.encode_queries(texts))
    path = tmp_path / "e5_Flat.index"
    faiss.write_index(index, str(path))
    return path, corpus


def test_flashrag_index_is_searched_without_re_embedding(tmp_path: Path) -> None:
    encoder = HashingEncoder()
    index_file, corpus = _flashrag_files(tmp_path, encoder)
    dense = DenseSearch.from_flashrag(index_file, corpus, encoder)
    hits = asyncio.run(dense.search("highest mountain on Earth", k=1))
    assert (hits[0].id, hits[0].title) == ("3", "Mount Everest")  # quotes dropped
    assert encoder.passage_calls == 0
    assert passage_text(dense.passages[0]).startswith("Tosca\n")


def test_flashrag_mismatches_are_named(tmp_path: Path) -> None:
    encoder = HashingEncoder()
    index_file, corpus = _flashrag_files(tmp_path, encoder)
    short = tmp_path / "short.jsonl"
    short.write_text(corpus.read_text().splitlines()[0] + "\n")
    with pytest.raises(InputFileError, match=r"holds 4 vectors but .* has 1 passages"):
        DenseSearch.from_flashrag(index_file, short, encoder)
    with pytest.raises(ConfigError, match="64-dimension vectors but the embedding model gives 32"):
        DenseSearch.from_flashrag(index_file, corpus, HashingEncoder(dim=32))
    (tmp_path / "junk.index").write_bytes(b"not faiss")
    with pytest.raises(InputFileError, match="not a FAISS index"):
        DenseSearch.from_flashrag(tmp_path / "junk.index", corpus, encoder)


def test_empty_corpus_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        DenseSearch.build([], HashingEncoder())
