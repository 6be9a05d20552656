"""Opening the cache's SQLite file: checked before use, with one-line errors.

`open_store(path, mode, schema)` returns a connection to a sound file or raises
CacheError naming the file and what to do: not SQLite, damaged (a full `quick_check`,
about 0.3 s per 100 MB here, finds damage in the middle of the file before a run starts
rather than halfway through it), or read-only when recording. Replay opens read-only,
and reads a file in a read-only folder as immutable.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Literal

from search_o1.errors import CacheError, ConfigError

__all__ = ["WHAT_TO_DO", "open_store"]

WHAT_TO_DO = "move it away (or pass another --cache-path, or --cache off)"
_CONNECT: dict[str, Any] = {"check_same_thread": False, "isolation_level": None}


def open_store(path: Path, mode: Literal["record", "replay"], schema: str) -> sqlite3.Connection:
    """A checked connection to `path` (autocommit, usable from any thread)."""
    if mode == "replay" and not path.exists():
        raise ConfigError(f"cache replay: no cache file at {path}")
    try:
        return _open_replay(path) if mode == "replay" else _open_record(path, schema)
    except sqlite3.Error as e:
        raise CacheError(str(path), _diagnose(path, e, mode)) from None


def _open_replay(path: Path) -> sqlite3.Connection:
    # Read-only: replay must never change the recorded store.
    uri = path.resolve().as_uri()
    try:
        return _checked(sqlite3.connect(uri + "?mode=ro", uri=True, **_CONNECT))
    except sqlite3.OperationalError:
        # A read-only folder: WAL's shared-memory file cannot be made there. Nobody can
        # be writing such a file either, so SQLite may read it as immutable.
        return _checked(sqlite3.connect(uri + "?immutable=1", uri=True, **_CONNECT))


def _open_record(path: Path, schema: str) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CacheError(str(path), f"cannot create its folder ({e.strerror})") from None
    db: sqlite3.Connection = sqlite3.connect(path, **_CONNECT)
    try:
        db.execute("PRAGMA busy_timeout=10000")  # other processes may be writing
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a process crash (only an OS crash can lose the last
        # commits), at a fraction of FULL's fsync cost.
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(schema)
        _checked(db)
        _probe_write(db)
    except BaseException:
        db.close()
        raise
    return db


def _probe_write(db: sqlite3.Connection) -> None:
    # SQLite opens a write-protected file read-only without a word; find out now rather
    # than at the first store, mid-run. Nothing is written: the probe is rolled back.
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT INTO runs VALUES ('', 0)")
    finally:
        db.execute("ROLLBACK")


def _checked(db: sqlite3.Connection) -> sqlite3.Connection:
    """`db` if its file is a sound SQLite database; else sqlite3.DatabaseError."""
    try:
        row = db.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check: {row[0] if row else 'no answer'}")
        db.execute("PRAGMA busy_timeout=10000")
    except BaseException:
        db.close()
        raise
    return db


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _diagnose(path: Path, error: sqlite3.Error, mode: str) -> str:
    """One line: what is wrong with the file and what to do about it."""
    text = str(error)
    if mode == "record" and ("readonly" in text or not _writable(path)):
        return (
            "read-only; replay it with --cache replay, or record into a writable "
            "--cache-path (or --cache off)"
        )
    if "not a database" in text or "malformed" in text or "integrity" in text:
        return f"not a usable SQLite cache ({text}); {WHAT_TO_DO}"
    return f"cannot open ({text}); {WHAT_TO_DO}"
