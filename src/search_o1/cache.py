"""A persistent, content-addressed store of search results and page texts (SQLite, WAL).

Modes:
- `record` (default): look up first; on a miss the caller does the work and stores it.
- `replay`: read only; a miss raises ReplayMissError naming the query or URL, so a
  recorded evaluation re-runs offline and identically (or fails loudly).
- `off`: no cache at all (`open_cache` returns None).

Keys are sha256 digests of the kind plus the canonical JSON of everything that changes
the answer (backend, endpoint, top-k, market, query; or url and extractor version),
never secrets. The inputs are kept beside the value (`meta`), so an imported file is
checked against its keys and `stats` can say what is inside.

Each entry is committed the moment it is stored (autocommit + WAL), so a process killed
midway keeps everything it recorded. Only successes are ever stored: callers never pass
errors or failed fetches here.

TTL (`cache_ttl`, `--cache-ttl`): in record mode an entry older than the TTL counts as
missing, so it is fetched again and overwritten (only when the new fetch succeeds: a
failure leaves the old entry, unserved, in place). Replay ignores the TTL and serves
every recorded entry whatever its age: a recording is only useful if it reproduces.

Ownership: whoever opens a Cache closes it. `open_pipeline` opens one per pipeline (on
first use, through a `CacheSlot`), gives it to both the search wrapper and the document
source, so they write under the same `run_id`, and closes it on exit. Pipelines share a
store by being given one open Cache (`open_pipeline(settings, cache=...)`); several
Cache objects on one file also work (SQLite WAL), each with its own run id. Every entry
a record run reads or writes is logged under its run id, which is what
`export --run RUN_ID` exports.

Bad files: opening checks the file (`PRAGMA quick_check`) and raises CacheError, one line
naming the file and what to do, before any work: not SQLite, damaged, or read-only in
record mode. A read-only file (or folder) still replays. Damage met later, mid-run,
raises CacheDamagedError (a BackendError), so that search fails and the run goes on.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from search_o1._sqlite_file import WHAT_TO_DO, open_store
from search_o1.errors import BackendError, ConfigError, InputFileError, ReplayMissError

__all__ = ["Cache", "CacheDamagedError", "CacheMode", "CacheSlot", "CacheStats"]

CacheMode = Literal["record", "replay", "off"]
Kind = Literal["search", "page"]
EXPORT_FORMAT = "search-o1-cache"
EXPORT_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key     TEXT PRIMARY KEY,
    kind    TEXT NOT NULL,
    label   TEXT NOT NULL,
    meta    TEXT NOT NULL,
    value   BLOB NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run     TEXT PRIMARY KEY,
    started REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS uses (
    run TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (run, key)
) WITHOUT ROWID;
"""


class CacheDamagedError(BackendError):
    """The cache failed mid-run (damaged pages, a full disk): this search fails, not the run."""

    def __init__(self, path: Path, error: Exception) -> None:
        super().__init__("cache", f"{path}: {error}; {WHAT_TO_DO}")
        self.path = str(path)


def make_key(kind: str, meta: Mapping[str, Any]) -> str:
    """The content address of an entry: sha256 of kind + canonical JSON of its inputs."""
    blob = json.dumps([kind, meta], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _pack(value: Any) -> bytes:
    # Pages are large, repetitive text: zlib keeps the store 3-5x smaller for ~10 µs.
    return zlib.compress(json.dumps(value, ensure_ascii=False).encode(), 6)


def _unpack(blob: bytes) -> Any:
    return json.loads(zlib.decompress(blob))


def _new_run_id() -> str:
    # Sortable by time, unique across processes started in the same second.
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass(frozen=True)
class CacheStats:
    path: str
    entries: dict[str, int]
    bytes: int
    runs: list[tuple[str, int]]  # (run id, entries it used), oldest first

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entries": self.entries,
            "bytes": self.bytes,
            "runs": [{"run": r, "entries": n} for r, n in self.runs],
        }


class Cache:
    """One SQLite file. Thread-safe (one connection behind a lock); calls take microseconds,
    so async callers use it directly without a thread hop.

    `clock`: seconds since the epoch, for entry ages and the TTL (a test passes its own).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: CacheMode = "record",
        *,
        run_id: str | None = None,
        ttl_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if mode not in ("record", "replay"):
            raise ConfigError(f"cache mode {mode!r} opens no store; use record or replay")
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.ttl_s = ttl_s
        self.clock = clock
        self.run_id = run_id or _new_run_id()
        self._lock = threading.Lock()
        self._db = open_store(self.path, mode, _SCHEMA)
        self._run_logged = False

    # ---- lookups and stores -------------------------------------------------------

    def get(self, kind: Kind, meta: Mapping[str, Any], label: str) -> Any | None:
        """The stored value, or None on a miss (record mode).

        In replay mode a miss raises ReplayMissError naming `label` (the query or URL).
        """
        key = make_key(kind, meta)
        with self._lock, self._damage_is_backend_error():
            row = self._db.execute(
                "SELECT value, created FROM entries WHERE key = ?", (key,)
            ).fetchone()
            if row is not None and self._fresh(row[1]):
                self._log_use(key)
                return _unpack(row[0])
        if self.mode == "replay":
            raise ReplayMissError(f"cache replay: no recorded {kind} for {label!r} in {self.path}")
        return None

    def put(self, kind: Kind, meta: Mapping[str, Any], label: str, value: Any) -> None:
        """Store a successful result; committed before this returns. No-op in replay."""
        if self.mode != "record":
            return
        key = make_key(kind, meta)
        meta_json = json.dumps(meta, sort_keys=True, ensure_ascii=False)
        with self._lock, self._damage_is_backend_error():
            self._db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                (key, kind, label, meta_json, _pack(value), self.clock()),
            )
            self._log_use(key)

    @contextmanager
    def _damage_is_backend_error(self) -> Iterator[None]:
        # Damage in a page no check has read yet (or a disk that fills up) surfaces here,
        # mid-run: it fails the one search or page that met it, as a backend failure.
        try:
            yield
        except (sqlite3.Error, zlib.error, json.JSONDecodeError) as e:
            raise CacheDamagedError(self.path, e) from None

    def _fresh(self, created: float) -> bool:
        # Replay ignores the TTL: a recording must replay whatever its age.
        if self.ttl_s is None or self.mode == "replay":
            return True
        return self.clock() - created < self.ttl_s

    def _log_use(self, key: str) -> None:
        if self.mode != "record":
            return
        if not self._run_logged:
            self._db.execute(
                "INSERT OR IGNORE INTO runs VALUES (?, ?)", (self.run_id, self.clock())
            )
            self._run_logged = True
        self._db.execute("INSERT OR IGNORE INTO uses VALUES (?, ?)", (self.run_id, key))

    # ---- inspection, export, import -----------------------------------------------

    def stats(self) -> CacheStats:
        with self._lock:
            kinds = dict(self._db.execute("SELECT kind, COUNT(*) FROM entries GROUP BY kind"))
            size = self._db.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM entries")
            total = int(size.fetchone()[0])
            runs = self._db.execute(
                "SELECT r.run, COUNT(u.key) FROM runs r LEFT JOIN uses u ON u.run = r.run "
                "GROUP BY r.run ORDER BY r.started"
            ).fetchall()
        return CacheStats(str(self.path), kinds, total, [(r, int(n)) for r, n in runs])

    def last_run(self) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT run FROM runs ORDER BY started DESC LIMIT 1")
            found = row.fetchone()
        return str(found[0]) if found else None

    def _rows(self, run: str | None) -> Iterator[tuple[str, str, str, str, bytes, float]]:
        args: tuple[str, ...] = ()
        if run is None:
            sql = "SELECT * FROM entries ORDER BY created"
        else:
            sql = (
                "SELECT e.* FROM entries e JOIN uses u ON u.key = e.key "
                "WHERE u.run = ? ORDER BY e.created"
            )
            args = (run,)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        yield from rows

    def export(self, dest: str | os.PathLike[str], *, run: str | None = None) -> int:
        """Write the entries (all, or those run `run` used) to a JSONL file; returns count."""
        if run is not None and run not in {r for r, _ in self.stats().runs}:
            raise ConfigError(f"cache export: no run {run!r} in {self.path}")
        tmp = Path(str(dest) + ".part")
        try:
            count = self._write_export(tmp, run)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk or ^C leaves no half-written file
            raise
        tmp.replace(dest)  # never leave a half-written export under the real name
        return count

    def _write_export(self, tmp: Path, run: str | None) -> int:
        count = 0
        with tmp.open("w", encoding="utf-8") as f:
            header = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "run": run}
            f.write(json.dumps(header) + "\n")
            for key, kind, label, meta, value, created in self._rows(run):
                entry = {
                    "key": key,
                    "kind": kind,
                    "label": label,
                    "meta": json.loads(meta),
                    "created": created,
                    "value": _unpack(value),
                }
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
                count += 1
        return count

    def import_file(self, src: str | os.PathLike[str]) -> int:
        """Add the entries of an exported file (keys verified); returns how many."""
        if self.mode != "record":
            raise ConfigError("cache import needs a writable cache (mode record)")
        entries = list(_read_export(Path(src)))
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for e in entries:
                    meta_json = json.dumps(e["meta"], sort_keys=True, ensure_ascii=False)
                    self._db.execute(
                        "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            e["key"],
                            e["kind"],
                            e["label"],
                            meta_json,
                            _pack(e["value"]),
                            float(e["created"]),
                        ),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return len(entries)

    def close(self) -> None:
        with self._lock:
            if self.mode == "record":
                # Leave everything in the main file, so a copy of it alone (a snapshot,
                # maybe read-only, read as immutable) holds every entry.
                with suppress(sqlite3.Error):
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_export(path: Path) -> Iterator[dict[str, Any]]:
    """Parse and check an export file fully before anything is written."""
    try:
        # Lines end at \n only: str.splitlines also splits at U+2028, U+0085 and \x1c-\x1e,
        # which the export writes raw inside strings (ensure_ascii=False) and pages hold.
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise InputFileError(str(path), "file not found") from None
    except UnicodeDecodeError:
        raise InputFileError(str(path), "not UTF-8 text") from None
    if not lines:
        raise InputFileError(str(path), "empty file")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise InputFileError(str(path), "not a search-o1 cache export", line=1)
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
            ok = e["kind"] in ("search", "page") and make_key(e["kind"], e["meta"]) == e["key"]
            _ = e["label"], e["value"], float(e["created"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise InputFileError(str(path), "malformed entry", line=n) from None
        if not ok:
            raise InputFileError(str(path), "entry key does not match its contents", line=n)
        yield e


# ---- ownership ----------------------------------------------------------------------


class CacheSlot:
    """The cache of one pipeline: opened at its first use, closed by `close` only if the
    slot opened it. Given an open Cache, hands that out and never closes it (sharing).

    Opening at first use keeps runs that need no cache (a local corpus) from creating a
    file; the pipeline asks at build time when a web backend is chosen, so a bad file is
    reported before any question runs.
    """

    def __init__(self, opener: Callable[[], Cache | None], given: Cache | None = None) -> None:
        """`opener` makes the run's Cache (None when the run has none), called at most
        once and only when no Cache was `given`."""
        self._opener = opener
        self._cache = given
        self._opened = given is not None
        self._owned = False

    def get(self) -> Cache | None:
        if not self._opened:
            self._cache, self._opened = self._opener(), True
            self._owned = self._cache is not None
        return self._cache

    def close(self) -> None:
        if self._owned and self._cache is not None:
            self._cache.close()
        self._cache, self._opened, self._owned = None, False, False

    def __enter__(self) -> CacheSlot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
