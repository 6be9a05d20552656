"""FAISS indexes over normalised vectors: flat (exact), IVF and HNSW (approximate).

All use inner product. Which to pick, by corpus size (memory for n vectors of d floats:
4*n*d bytes for the vectors themselves):
- flat: exact; each query reads every vector. Right up to a few million passages.
- ivf: vectors grouped into `nlist` clusters (about 4*sqrt(n)); a query scans the
  `nprobe` nearest clusters. Same memory as flat, nprobe/nlist of the work; recall rises
  with nprobe.
- hnsw: a neighbour graph (32 links a vector, about 256 extra bytes each); a query walks
  it, keeping `ef_search` candidates. Fastest at high recall, slowest to build.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np

from search_o1.errors import InputFileError

__all__ = ["INDEX_KINDS", "IndexKind", "build_index", "read_index", "tune", "write_index"]

IndexKind = Literal["flat", "ivf", "hnsw"]
INDEX_KINDS: tuple[IndexKind, ...] = ("flat", "ivf", "hnsw")
HNSW_LINKS = 32
HNSW_EF_CONSTRUCTION = 80
_MIN_PER_CLUSTER = 39  # FAISS's own floor for training points per centroid
_TRAIN_PER_CLUSTER = 256  # training on more than this many points a cluster adds little

Vectors = np.ndarray[Any, np.dtype[np.float32]]


def _faiss() -> Any:
    import faiss

    return faiss


def ivf_lists(n: int) -> int:
    """Clusters for an IVF index over `n` vectors: about 4*sqrt(n), each trainable.

    >>> ivf_lists(21_000_000), ivf_lists(10_000), ivf_lists(50)
    (18330, 256, 1)
    """
    return max(1, min(round(4 * math.sqrt(n)), n // _MIN_PER_CLUSTER))


def build_index(vectors: Vectors, kind: IndexKind = "flat") -> Any:
    """An index of `kind` holding `vectors` (ids are row numbers)."""
    faiss = _faiss()
    dim = vectors.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    else:
        nlist = ivf_lists(len(vectors))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        step = max(1, len(vectors) // (nlist * _TRAIN_PER_CLUSTER))
        index.train(vectors[::step])
    index.add(vectors)
    return index


def tune(index: Any, *, nprobe: int | None = None, ef_search: int | None = None) -> None:
    """Set the search-time knobs the index has (IVF: nprobe; HNSW: efSearch); skip the rest."""
    faiss = _faiss()
    space = faiss.ParameterSpace()
    for name, value in (("nprobe", nprobe), ("efSearch", ef_search)):
        if value is None:
            continue
        # A flat index has neither knob, an IVF one no efSearch: skip what does not apply.
        with contextlib.suppress(RuntimeError):
            space.set_index_parameter(index, name, value)


def read_index(path: Path, *, mmap: bool = False) -> Any:
    """A FAISS index file (ours or FlashRAG's). `mmap` maps a flat one instead of reading it."""
    faiss = _faiss()
    if not path.is_file():
        raise InputFileError(str(path), "no such FAISS index file")
    try:
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP if mmap else 0)
    except RuntimeError as e:
        first = str(e).strip().splitlines()[-1] if str(e).strip() else "unreadable"
        raise InputFileError(str(path), f"not a FAISS index ({first})") from None


def write_index(index: Any, path: Path) -> None:
    _faiss().write_index(index, str(path))


def all_vectors(index: Any) -> Vectors:
    """Every vector a flat index holds, in id order (the embeddings, without re-embedding)."""
    return np.asarray(index.reconstruct_n(0, index.ntotal), dtype=np.float32)
