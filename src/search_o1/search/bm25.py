"""The `bm25` search backend: a local corpus indexed with bm25s (Lucene BM25).

Text is lowercased, split into words of two or more characters, English stopwords are
dropped and the rest stemmed with Snowball English (PyStemmer); a passage is indexed with
its title, as FlashRAG indexes "Title\\ntext".

An index folder holds `manifest.json` (format, version, source, count, content hash),
`passages.jsonl` (id, title, text) and `bm25/` (bm25s's sparse score matrix and vocabulary).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from search_o1.corpus.demo import demo_data_file, demo_passages
from search_o1.corpus.load import load_passages
from search_o1.corpus.passage import Passage
from search_o1.corpus.store import (
    FORMAT_VERSION,
    MANIFEST,
    cache_root,
    is_index_dir,
    source_key,
    staged_dir,
)
from search_o1.errors import ConfigError, InputFileError
from search_o1.types import Hit
from search_o1.window import cut_document

__all__ = [
    "FORMAT",
    "BM25Search",
    "Tokenizer",
    "corpus_path",
    "open_passages",
    "read_manifest",
    "search_passages",
]

FORMAT = "search-o1-bm25"
DEFAULT_MAX_DOC_CHARS = 3000
_PASSAGES = "passages.jsonl"
_BM25_DIR = "bm25"
_log = logging.getLogger(__name__)


class Tokenizer:
    """Words -> stemmed terms, identical for passages and queries.

    PyStemmer's stemmer objects are not thread-safe and searches run in worker threads,
    so each thread gets its own.
    """

    _STOPWORDS = frozenset(STOPWORDS_EN)
    _WORD = re.compile(r"\b\w\w+\b")

    def __init__(self, language: str = "english") -> None:
        self.language = language
        self._local = threading.local()

    def _stemmer(self) -> Any:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = self._local.stemmer = Stemmer.Stemmer(self.language)
        return stemmer

    def words(self, text: str) -> list[str]:
        """Lowercased words of two or more characters, stopwords dropped (not stemmed)."""
        return [w for w in self._WORD.findall(text.lower()) if w not in self._STOPWORDS]

    def __call__(self, text: str) -> list[str]:
        return list(self._stemmer().stemWords(self.words(text)))

    def corpus_ids(self, texts: Iterable[str]) -> tuple[list[list[int]], dict[str, int]]:
        """Every text as term ids, plus the vocabulary (stemmed term -> id).

        A corpus repeats each word many times: each distinct word is stemmed once, and
        the documents are built as ids, which bm25s indexes without a vocabulary pass
        of its own. Gives the same terms as calling the tokenizer on each text.
        """
        word_ids: dict[str, int] = {}
        docs = [[word_ids.setdefault(w, len(word_ids)) for w in self.words(t)] for t in texts]
        vocab: dict[str, int] = {}
        stem_of_word = [
            vocab.setdefault(stem, len(vocab)) for stem in self._stemmer().stemWords(list(word_ids))
        ]
        return [[stem_of_word[i] for i in doc] for doc in docs], vocab


class BM25Search:
    """Search over a local passage corpus. Build, save, load, or open any corpus source.

    `search` runs the scoring in a worker thread so the event loop stays free; hit texts
    are cut to `max_doc_chars` around the part that best matches the query.
    """

    name = "bm25"

    def __init__(
        self,
        retriever: bm25s.BM25,
        passages: Sequence[Passage],
        manifest: dict[str, Any],
        *,
        max_doc_chars: int = DEFAULT_MAX_DOC_CHARS,
    ) -> None:
        self._retriever = retriever
        self.passages = passages
        self.manifest = manifest
        self.max_doc_chars = max_doc_chars
        self._tokenize = Tokenizer()

    def __len__(self) -> int:
        return len(self.passages)

    # ---- building, saving, loading ----

    @classmethod
    def build(
        cls,
        passages: Iterable[Passage],
        *,
        source: str = "",
        content_hash: str = "",
        max_doc_chars: int = DEFAULT_MAX_DOC_CHARS,
    ) -> BM25Search:
        """Index `passages` in memory. Raises ConfigError for an empty corpus."""
        items = list(passages)
        if not items:
            raise ConfigError(f"no passages to index{f' in {source}' if source else ''}")
        tokenize = Tokenizer()
        started = time.perf_counter()
        ids, vocab = tokenize.corpus_ids(f"{p.title}\n{p.text}" for p in items)
        if not vocab:
            where = f" of {source}" if source else ""
            raise ConfigError(f"no searchable words in the passages{where}")
        retriever = bm25s.BM25()
        retriever.index((ids, vocab), show_progress=False)
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "source": source,
            "count": len(items),
            "content_hash": content_hash,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.perf_counter() - started, 3),
            "tokenizer": {"stemmer": tokenize.language, "stopwords": "bm25s english"},
            # Characters of the source that were not valid text, made U+FFFD when read.
            "replaced": sum(p.replaced for p in items),
            "bm25s": bm25s.__version__,
        }
        return cls(retriever, items, manifest, max_doc_chars=max_doc_chars)

    def save(self, directory: str | Path, *, replace: bool = False) -> Path:
        """Write the index to `directory` atomically (it appears complete or not at all)."""
        target = Path(directory).expanduser()
        with staged_dir(target, replace=replace) as tmp:
            self._retriever.save(str(tmp / _BM25_DIR), show_progress=False)
            with (tmp / _PASSAGES).open("w", encoding="utf-8") as f:
                for p in self.passages:
                    row: dict[str, Any] = {"id": p.id, "title": p.title, "text": p.text}
                    if p.replaced:
                        row["replaced"] = p.replaced
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            # The manifest goes last: its presence is what marks a folder as an index.
            (tmp / MANIFEST).write_text(json.dumps(self.manifest, indent=2) + "\n")
        return target

    @classmethod
    def load(
        cls, directory: str | Path, *, max_doc_chars: int = DEFAULT_MAX_DOC_CHARS
    ) -> BM25Search:
        """Open an index folder written by `save` (or `search-o1 index build`)."""
        path = Path(directory).expanduser()
        manifest = read_manifest(path)
        try:
            retriever = bm25s.BM25.load(str(path / _BM25_DIR), show_progress=False)
            passages = _read_passages(path / _PASSAGES)
        except (OSError, ValueError, KeyError) as e:
            raise InputFileError(str(path), f"damaged index ({e}); build it again") from None
        if len(passages) != manifest.get("count"):
            raise InputFileError(str(path), "damaged index (passage count differs)")
        return cls(retriever, passages, manifest, max_doc_chars=max_doc_chars)

    @classmethod
    def open(
        cls,
        corpus: str | Path,
        *,
        cache_dir: Path | None = None,
        max_doc_chars: int = DEFAULT_MAX_DOC_CHARS,
    ) -> BM25Search:
        """A built index folder, or a JSONL file / folder indexed once and cached by key.

        The special name "demo" (when no such file exists) is the bundled demo corpus.
        """
        path = corpus_path(corpus)
        if is_index_dir(path):
            return cls.load(path, max_doc_chars=max_doc_chars)
        return cls._cached(path, cache_dir or cache_root(), max_doc_chars)

    @classmethod
    def _cached(cls, path: Path, root: Path, max_doc_chars: int) -> BM25Search:
        key = source_key(path)
        target = root / key
        if is_index_dir(target):
            return cls.load(target, max_doc_chars=max_doc_chars)
        built = cls.build(
            load_passages(path),
            source=str(path.resolve()),
            content_hash=key,
            max_doc_chars=max_doc_chars,
        )
        try:
            built.save(target)
        except OSError as e:
            # A read-only cache is no reason to fail the search; it only costs a rebuild.
            _log.warning("could not cache the index of %s in %s: %s", path, target, e)
        return built

    # ---- searching ----

    def query(self, query: str, k: int) -> list[tuple[Passage, float]]:
        """The best `k` passages for `query` with their scores (synchronous, thread-safe).

        Only passages sharing at least one term with the query are returned.
        """
        vocab = self._retriever.vocab_dict
        ids = [vocab[t] for t in self._tokenize(query) if t in vocab]
        if not ids or k <= 0:
            return []
        scores = np.asarray(self._retriever.get_scores(ids), dtype=np.float32)
        return [(self.passages[i], float(scores[i])) for i in _top_k(scores, k)]

    async def search(self, query: str, *, k: int) -> list[Hit]:
        return await search_passages(self.query, query, k, self.max_doc_chars, source="bm25")

    async def aclose(self) -> None:
        return None


async def search_passages(
    query_fn: Callable[[str, int], list[tuple[Passage, float]]],
    query: str,
    k: int,
    max_doc_chars: int,
    *,
    source: str,
) -> list[Hit]:
    """Hits for `query` from a local backend's synchronous `query_fn(query, k)`.

    The scoring runs in a thread (it is CPU work); each passage is cut to the part that
    matches the query, as a fetched page is.
    """
    if not query.strip():
        return []
    results = await asyncio.to_thread(query_fn, query, k)
    return [
        Hit(
            id=p.id,
            title=p.title,
            text=cut_document(p.text, query, max_doc_chars),
            score=s,
            source=source,
            replaced=p.replaced,  # counted where the corpus was read, told with each hit
        )
        for p, s in results
    ]


def demo_corpus_path(cache_dir: Path | None = None) -> Path:
    """A built index of the demo corpus (built on first call, then reused from the cache)."""
    data_file = demo_data_file()
    key = "demo-" + source_key(data_file)
    target = (cache_dir or cache_root()) / key
    if not is_index_dir(target):
        index = BM25Search.build(
            demo_passages(data_file), source=f"demo: {data_file.name}", content_hash=key
        )
        index.save(target)
    return target


def corpus_path(corpus: str | Path) -> Path:
    """The path `corpus` names; "demo" (when no such file exists) is the bundled corpus."""
    path = Path(corpus).expanduser()
    if str(corpus) == "demo" and not path.exists():
        path = demo_corpus_path()
    if not path.exists():
        raise InputFileError(str(path), "no such file or folder")
    return path


def open_passages(
    corpus: str | Path, *, cache_dir: Path | None = None
) -> tuple[Path | None, Sequence[Passage], dict[str, Any]]:
    """(index folder, passages, manifest) of any corpus source, for other local backends.

    A JSONL file or document folder is indexed once into the cache, as `open` does, so
    every backend over one source reads the same passages in the same order. The folder
    is None when the cache could not be written (the passages then come from memory).
    """
    path = corpus_path(corpus)
    folder = path if is_index_dir(path) else (cache_dir or cache_root()) / source_key(path)
    if not is_index_dir(folder):
        built = BM25Search.open(path, cache_dir=cache_dir)
        if not is_index_dir(folder):
            return None, built.passages, built.manifest
    manifest = read_manifest(folder)
    try:
        passages = _read_passages(folder / _PASSAGES)
    except (OSError, ValueError, KeyError) as e:
        raise InputFileError(str(folder), f"damaged index ({e}); build it again") from None
    return folder, passages, manifest


def _top_k(scores: np.ndarray[Any, Any], k: int) -> list[int]:
    """Indices of the `k` highest positive scores, best first (ties: lower index first)."""
    k = min(k, len(scores))
    candidates = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(k)
    candidates = candidates[scores[candidates] > 0]
    order = np.lexsort((candidates, -scores[candidates]))
    return [int(i) for i in candidates[order]]


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of an index folder; InputFileError when it is not one we can read."""
    if not is_index_dir(path):
        raise InputFileError(str(path), f"not an index folder (no {MANIFEST})")
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputFileError(str(path / MANIFEST), f"unreadable ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputFileError(str(path), "not a search-o1 bm25 index")
    if manifest.get("version") != FORMAT_VERSION:
        raise InputFileError(
            str(path),
            f"index format v{manifest.get('version')} is not v{FORMAT_VERSION}; build it again",
        )
    return manifest


def _read_passages(path: Path) -> list[Passage]:
    with path.open(encoding="utf-8") as f:
        return [
            Passage(row["id"], row["title"], row["text"], row.get("replaced", 0))
            for row in map(json.loads, f)
        ]
