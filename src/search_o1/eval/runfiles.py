"""The files of a run directory: results.jsonl (append-only), config.json, metrics.json.

results.jsonl is the source of truth: one record per finished item, appended and flushed
as it finishes, so a crash loses only the items in flight. A torn last line (a crash in
mid-write, a full disk) is cut off on the next open, or at once when the write fails.

Only the evaluating process writes it, and only one at a time (`lock_run_dir`): bytes
that appear behind its back are cut off before its next line, and an id's first
complete line is its record; a later line naming the same id is refused, so nothing
appended from outside can replace a score.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from search_o1.errors import ConfigError, InputFileError, SearchO1Error
from search_o1.text_safety import scrub as scrub_text

RESULTS = "results.jsonl"
CONFIG = "config.json"
METRICS = "metrics.json"
SUMMARY = "summary.md"
LOCK = ".lock"
_SECRET_NAME = re.compile(r"key|token|secret|password|auth", re.IGNORECASE)
_PACKAGES = ("search-o1", "httpx", "pydantic", "math-verify", "bm25s", "numpy", "rich", "click")


class RunFileError(SearchO1Error):
    """A run file could not be written (a full disk, a read-only folder)."""


def write_failed(path: Path, error: OSError) -> RunFileError:
    """One line: what could not be written, why, and that a rerun resumes."""
    why = "the disk is full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else error.strerror
    return RunFileError(
        f"cannot write {path}: {why or error}; finished items are kept: free space "
        "(or fix the folder) and rerun the same command to resume"
    )


def read_records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """id -> record for every complete line of results.jsonl.

    An id's first line is its record: the evaluator writes one line per item, so a later
    line naming the same id came from elsewhere and is refused.
    """
    path = run_dir / RESULTS
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # a torn final line: the item was in flight, it will rerun
            with contextlib.suppress(json.JSONDecodeError):
                record = json.loads(line)
                if isinstance(record, dict) and "id" in record:
                    records.setdefault(str(record["id"]), record)
    return records


def _cut_torn_tail(path: Path) -> None:
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


class ResultsFile:
    """results.jsonl open for appending by this process, one whole line at a time.

    It remembers where its own writes end: bytes someone else appended are cut off
    before the next line (and counted in `foreign_bytes`), and a line that fails midway
    (a full disk) is cut back off before the error is raised.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / RESULTS
        try:
            _cut_torn_tail(self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as e:
            raise write_failed(self.path, e) from None
        self._end = os.fstat(self._fd).st_size
        self.foreign_bytes = 0

    def append(self, record: Mapping[str, Any]) -> None:
        # Text from outside is made valid where it enters; this is the last fence, so a
        # stray surrogate can never make a record unwritable.
        line = scrub_text(json.dumps(record, ensure_ascii=False)) + "\n"
        data = line.encode("utf-8")
        try:
            self._drop_foreign()
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._end)  # no torn line left behind
            raise write_failed(self.path, e) from None
        self._end += len(data)

    def _drop_foreign(self) -> None:
        size = os.fstat(self._fd).st_size
        if size != self._end:
            self.foreign_bytes += abs(size - self._end)
            os.ftruncate(self._fd, self._end)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._drop_foreign()
        os.close(self._fd)

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_results(run_dir: Path) -> ResultsFile:
    """results.jsonl for appending, first cutting off a torn final line."""
    return ResultsFile(run_dir)


def append_record(f: ResultsFile, record: Mapping[str, Any]) -> None:
    f.append(record)


def write_text(path: Path, text: str) -> None:
    """Write atomically: a reader never sees half a file, a failed write leaves no tmp."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(scrub_text(text), encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise write_failed(path, e) from None


def write_json(path: Path, data: Any) -> None:
    """Write atomically: a reader never sees half a file."""
    write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


class RunLocked(ConfigError):
    """Another process is writing this run directory."""


@contextlib.contextmanager
def lock_run_dir(run_dir: Path) -> Iterator[None]:
    """Hold the run directory for this process; a second holder is refused in one line.

    The lock (flock on `.lock`) goes away with the process however it ends, so a
    killed run never leaves a stale one.
    """
    path = run_dir / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise write_failed(path, e) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise RunLocked(
                f"{run_dir} is being written by another eval"
                f"{f' (pid {holder})' if holder else ''}; wait for it to finish, or pass "
                "another --out"
            ) from None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def check_unlocked(run_dir: Path) -> None:
    """Refuse early (before any model loads) when another eval holds `run_dir`."""
    if (run_dir / LOCK).exists():
        with lock_run_dir(run_dir):
            pass


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(str(path), "missing: is this a run directory?") from None
    except json.JSONDecodeError as e:
        raise InputFileError(str(path), f"invalid JSON: {e.msg}", e.lineno) from None
    if not isinstance(data, dict):
        raise InputFileError(str(path), "expected a JSON object")
    return data


REDACTED = "REDACTED"


def _scrub_url(value: str) -> str:
    """Drop user:password@ from a URL and the values of secret-looking query parameters
    (`?token=`, `?api_key=`); other strings pass unchanged.

    >>> _scrub_url("http://u:p@h:1/search?q=x&token=s3cret")
    'http://h:1/search?q=x&token=REDACTED'
    """
    with contextlib.suppress(ValueError):
        parts = urlsplit(value)
        if not (parts.scheme and parts.netloc):
            return value
        if parts.username or parts.password:
            host = parts.hostname or ""
            parts = parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(_SECRET_NAME.search(k) for k, _ in pairs):
            hidden = [(k, REDACTED if _SECRET_NAME.search(k) else v) for k, v in pairs]
            parts = parts._replace(query=urlencode(hidden))
        return urlunsplit(parts)
    return value


def scrub_argv(argv: list[str]) -> list[str]:
    """The command line safe to write: every URL in it (alone or as `--flag=URL`) scrubbed.

    >>> scrub_argv(["--base-url", "http://u:p@h/v1", "--search-endpoint=http://h/?key=k"])
    ['--base-url', 'http://h/v1', '--search-endpoint=http://h/?key=REDACTED']
    """
    out = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        is_flag_value = arg.startswith("--") and bool(eq)
        out.append(f"{flag}={_scrub_url(value)}" if is_flag_value else _scrub_url(arg))
    return out


def scrub(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings safe to write: string values under secret-looking names are dropped.

    Counts such as `max_tokens` stay (numbers are never secrets); API keys are never
    settings anyway, this is a second fence.

    >>> scrub({"max_tokens": 5, "api_key_env": "X", "base_url": ["http://u:p@h:1/v1"]})
    {'max_tokens': 5, 'base_url': ['http://h:1/v1']}
    """
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if _SECRET_NAME.search(name) and not isinstance(value, int | float | bool):
            continue
        if isinstance(value, str):
            value = _scrub_url(value)
        elif isinstance(value, list):
            value = [_scrub_url(v) if isinstance(v, str) else v for v in value]
        out[name] = value
    return out


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def environment() -> dict[str, Any]:
    """Python, platform, package versions and the git commit of this checkout."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "git_commit": _git_commit(),
    }


def check_same_run(run_dir: Path, identity: Mapping[str, Any]) -> None:
    """Refuse to resume into a directory that holds a different run."""
    path = run_dir / CONFIG
    if not path.exists():
        return
    old = read_json(path).get("run", {})
    for key, value in identity.items():
        if key in old and old[key] != value:
            raise ConfigError(
                f"{run_dir} holds a run with {key}={old[key]!r}, not {value!r}; "
                "use another --out or remove it"
            )


def check_run_dir(out: Path) -> None:
    """Refuse an existing folder that holds files but no run (it would be written into)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; pass a folder for the run")
    if not out.is_dir() or (out / CONFIG).exists() or (out / RESULTS).exists():
        return
    if any(p.name != LOCK for p in out.iterdir()):
        raise ConfigError(f"--out {out} holds other files and no run; pass a new or empty folder")


def check_same_settings(run_dir: Path, settings: Mapping[str, Any]) -> None:
    """Refuse to resume a run whose result-changing settings differ from `settings`.

    Only settings recorded on both sides are compared (an older run may lack new ones).
    """
    path = run_dir / CONFIG
    if not path.exists():
        return
    old = read_json(path).get("settings") or {}
    new = scrub(settings)
    changed = [
        f"{name} {old[name]!r} -> {value!r}"
        for name, value in new.items()
        if name in old and old[name] != value
    ]
    if changed:
        raise ConfigError(
            f"{run_dir} was run with other settings ({'; '.join(changed)}); resuming would "
            "mix results: rerun with the run's settings (its config.json), or pass a new --out"
        )
