"""The `dense` search backend: passages embedded by a sentence-transformers model, searched
with FAISS by inner product (cosine: the vectors are normalised).

Where the vectors live: beside the passages, in the corpus's index folder (the one `index
build` writes, or the cached one for a JSONL file or document folder), in a subfolder
`dense-<model hash>/` holding `manifest.json` and `flat.faiss` (the embeddings), plus
`ivf.faiss` / `hnsw.faiss` once such an index was asked for. So embeddings are computed
once per corpus content and model, and BM25 and dense over one corpus share passage ids.

FlashRAG's dense indexes load as they are (`from_flashrag`): a FAISS file whose ids are
the line numbers of its corpus JSONL, searched with the model it was built with.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from search_o1.corpus.embed import Encoder, ProgressFn
from search_o1.corpus.load import load_passages
from search_o1.corpus.passage import Passage
from search_o1.corpus.store import MANIFEST, staged_dir
from search_o1.corpus.vectors import (
    IndexKind,
    all_vectors,
    build_index,
    read_index,
    write_index,
)
from search_o1.errors import ConfigError, InputFileError
from search_o1.search.bm25 import DEFAULT_MAX_DOC_CHARS, open_passages, search_passages
from search_o1.types import Hit

__all__ = ["FORMAT", "DenseSearch", "dense_folder", "passage_text"]

FORMAT = "search-o1-dense"
VERSION = 1
_FLAT = "flat.faiss"
_log = logging.getLogger(__name__)


def passage_text(passage: Passage) -> str:
    """What is embedded for a passage: "Title\\ntext", as FlashRAG embeds `contents`."""
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text


def dense_folder(index_folder: Path, encoder: Encoder) -> Path:
    return index_folder / f"dense-{encoder.identity[:16]}"


def _embed(
    passages: Sequence[Passage], encoder: Encoder, progress: ProgressFn | None
) -> tuple[Any, dict[str, Any]]:
    """The flat index of every passage's vector, and what to record about making it."""
    started = time.perf_counter()
    vectors = encoder.encode_passages([passage_text(p) for p in passages], progress)
    seconds = time.perf_counter() - started
    stats = {
        "embed_seconds": round(seconds, 2),
        "passages_per_second": round(len(passages) / max(seconds, 1e-9), 1),
    }
    return build_index(vectors, "flat"), stats


def _manifest(encoder: Encoder, count: int, content_hash: str, stats: dict[str, Any]) -> Any:
    return {
        "format": FORMAT,
        "version": VERSION,
        "encoder": encoder.identity,
        "model": str(getattr(encoder, "model_dir", "")),
        "prefixes": getattr(getattr(encoder, "prefixes", None), "__dict__", {}),
        "dim": encoder.dim,
        "count": count,
        "content_hash": content_hash,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **stats,
    }


def _read_dense(folder: Path, encoder: Encoder, count: int) -> tuple[Any, dict[str, Any]] | None:
    """The saved flat index and manifest, or None when absent; damaged ones raise."""
    if not (folder / MANIFEST).is_file():
        return None
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputFileError(str(folder / MANIFEST), f"unreadable ({e})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        return None  # another format version: embed again
    index = read_index(folder / _FLAT)
    if index.ntotal != count or index.d != encoder.dim or manifest["encoder"] != encoder.identity:
        raise InputFileError(str(folder), "damaged dense index (size differs); build it again")
    return index, manifest


def _save_quietly(write: Any, where: Path) -> None:
    try:
        write()
    except OSError as e:
        # A read-only index folder is no reason to fail the search; it costs a re-embed.
        _log.warning("could not save dense vectors in %s: %s", where, e)


def _write_file_atomically(index: Any, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write_index(index, Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _derived(folder: Path | None, flat: Any, kind: IndexKind) -> Any:
    """An IVF or HNSW index over the flat one's vectors, cached beside it."""
    if kind == "flat":
        return flat
    path = folder / f"{kind}.faiss" if folder else None
    if path is not None and path.is_file():
        return read_index(path)
    index = build_index(all_vectors(flat), kind)
    if path is not None:
        _save_quietly(lambda: _write_file_atomically(index, path), path)
    return index


class DenseSearch:
    """Search passages by embedding similarity. Open any corpus source, or a FlashRAG index.

    `search` encodes the query and searches FAISS in a worker thread; hit texts are cut to
    `max_doc_chars` around the part that best matches the query, as BM25's are.
    """

    name = "dense"

    def __init__(
        self,
        index: Any,
        passages: Sequence[Passage],
        encoder: Encoder,
        manifest: dict[str, Any],
        *,
        max_doc_chars: int = DEFAULT_MAX_DOC_CHARS,
    ) -> None:
        self.index = index
        self.passages = passages
        self.encoder = encoder
        self.manifest = manifest
        self.max_doc_chars = max_doc_chars

    def __len__(self) -> int:
        return len(self.passages)

    # ---- building and opening ----

    @classmethod
    def build(
        cls,
        passages: Sequence[Passage],
        encoder: Encoder,
        *,
        kind: IndexKind = "flat",
        content_hash: str = "",
        progress: ProgressFn | None = None,
    ) -> DenseSearch:
        """Embed `passages` in memory. Raises ConfigError for an empty corpus."""
        if not passages:
            raise ConfigError("no passages to embed")
        flat, stats = _embed(passages, encoder, progress)
        manifest = _manifest(encoder, len(passages), content_hash, stats)
        return cls(_derived(None, flat, kind), passages, encoder, manifest)

    @classmethod
    def open(
        cls,
        corpus: str | Path,
        encoder: Encoder,
        *,
        kind: IndexKind = "flat",
        cache_dir: Path | None = None,
        progress: ProgressFn | None = None,
        max_doc_chars: int = DEFAULT_MAX_DOC_CHARS,
    ) -> DenseSearch:
        """Any corpus BM25 takes (JSONL, folder, index folder, "demo"), embedded once."""
        folder, passages, parent = open_passages(corpus, cache_dir=cache_dir)
        where = dense_folder(folder, encoder) if folder else None
        found = _read_dense(where, encoder, len(passages)) if where else None
        if found is None:
            flat, stats = _embed(passages, encoder, progress)
            manifest = _manifest(encoder, len(passages), parent.get("content_hash", ""), stats)
            if where is not None:
                _save_quietly(lambda: _save_flat(where, flat, manifest), where)
        else:
            flat, manifest = found
        index = _derived(where if where and where.is_dir() else None, flat, kind)
        return cls(index, passages, encoder, manifest, max_doc_chars=max_doc_chars)

    @classmethod
    def from_flashrag(
        cls,
        index_file: str | Path,
        corpus_file: str | Path,
        encoder: Encoder,
        *,
        mmap: bool = False,
        max_doc_chars: int = DEFAULT_MAX_DOC_CHARS,
    ) -> DenseSearch:
        """A FlashRAG dense index (FAISS file) and its corpus JSONL, without re-embedding.

        Vector i is line i of the corpus (`contents` = "Title\\ntext"); the encoder must
        be the model the index was built with (its dimension is checked).
        """
        index = read_index(Path(index_file).expanduser(), mmap=mmap)
        passages = load_passages(Path(corpus_file).expanduser())
        if index.ntotal != len(passages):
            raise InputFileError(
                str(index_file),
                f"holds {index.ntotal:,} vectors but {corpus_file} has {len(passages):,} "
                "passages; pass the corpus the index was built from",
            )
        if index.d != encoder.dim:
            raise ConfigError(
                f"{index_file} holds {index.d}-dimension vectors but the embedding model "
                f"gives {encoder.dim}; pass --embedding-model with the model it was built with"
            )
        manifest = {"format": "flashrag", "index": str(index_file), "count": index.ntotal}
        return cls(index, passages, encoder, manifest, max_doc_chars=max_doc_chars)

    # ---- searching ----

    def query_many(self, queries: Sequence[str], k: int) -> list[list[tuple[Passage, float]]]:
        """The best `k` passages for each query, with scores (synchronous, thread-safe)."""
        if not queries or k <= 0:
            return [[] for _ in queries]
        scores, ids = self.index.search(self.encoder.encode_queries(queries), min(k, len(self)))
        return [
            [(self.passages[i], float(s)) for s, i in zip(row_s, row_i, strict=True) if i >= 0]
            for row_s, row_i in zip(scores, ids, strict=True)
        ]

    def query(self, query: str, k: int) -> list[tuple[Passage, float]]:
        return self.query_many([query], k)[0]

    async def search(self, query: str, *, k: int) -> list[Hit]:
        return await search_passages(self.query, query, k, self.max_doc_chars, source="dense")

    async def aclose(self) -> None:
        return None


def _save_flat(where: Path, flat: Any, manifest: dict[str, Any]) -> None:
    with staged_dir(where) as tmp:
        write_index(flat, tmp / _FLAT)
        # The manifest goes last: its presence marks the folder complete.
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
