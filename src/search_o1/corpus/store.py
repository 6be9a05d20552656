"""Where built indexes live and how a source maps to its cached index.

Cache location: `$SEARCH_O1_INDEX_CACHE`, else `$XDG_CACHE_HOME/search-o1/indexes`, else
`~/.cache/search-o1/indexes`; one folder per source key.

Source keys (the choice, and why):
- a file (JSONL or one document): SHA-256 of its bytes. Streaming a file through hashlib
  runs at several hundred MB/s, far cheaper than re-indexing, and a copied or re-downloaded
  file still finds its index.
- a folder: SHA-256 of the sorted (relative path, size, mtime) of its document files.
  Reading every PDF of a large folder on each run would cost seconds; an edit changes the
  size or mtime, so it is caught. A copy that does not keep mtimes is indexed again.
Both keys include the index format version and the chunking rule, so an upgrade that
changes either builds afresh instead of reading a stale index.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from search_o1.corpus.load import DOCUMENT_SUFFIXES, document_files
from search_o1.corpus.passage import MAX_WORDS, MIN_WORDS

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST",
    "cache_root",
    "is_index_dir",
    "source_key",
    "staged_dir",
]

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
_CHUNK = 1 << 20


def cache_root() -> Path:
    """The folder that holds cached indexes (not created here)."""
    explicit = os.environ.get("SEARCH_O1_INDEX_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "search-o1" / "indexes"


def is_index_dir(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _folder_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in document_files(root):
        st = path.stat()
        h.update(f"{path.relative_to(root).as_posix()}\t{st.st_size}\t{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def source_key(path: Path) -> str:
    """The cache key of a corpus source (see the module docstring for what it covers)."""
    kind, digest = ("dir", _folder_digest(path)) if path.is_dir() else ("file", _file_digest(path))
    rule = f"v{FORMAT_VERSION};words={MIN_WORDS}-{MAX_WORDS};{sorted(DOCUMENT_SUFFIXES)}"
    return hashlib.sha256(f"{rule}\n{kind}\n{digest}".encode()).hexdigest()[:32]


_NEARLY_FULL = 1 << 20  # bytes free below which a short write means the disk filled


@contextlib.contextmanager
def staged_dir(target: Path, *, replace: bool = False) -> Iterator[Path]:
    """A temporary folder beside `target` that becomes `target` when the block succeeds.

    Nothing half-written is ever visible at `target`: on error the temporary folder is
    removed. If `target` appeared meanwhile (another process built the same index), it
    is kept and ours dropped, unless `replace` is set.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        _move_into_place(tmp, target, replace=replace)
    except OSError as e:
        # numpy reports a full disk as a short write with no errno ('8000 requested and
        # 2016 written'); named as what it is, the command can say it in one line.
        if e.errno is None and shutil.disk_usage(target.parent).free < _NEARLY_FULL:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target)) from e
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _move_into_place(tmp: Path, target: Path, *, replace: bool) -> None:
    if target.exists() and replace:
        # Rename the old one aside first, so a failure never leaves neither in place.
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        old.rmdir()
        target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        return
    try:
        tmp.rename(target)  # replaces an empty folder; fails on a non-empty one
    except OSError:
        if not target.exists():
            raise
