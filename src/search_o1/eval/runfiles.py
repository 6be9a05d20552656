"""The files of a run directory: results.jsonl (append-only), config.json, metrics.json.

results.jsonl is the source of truth: one record per finished item, appended and flushed
as it finishes, so a crash loses only the items in flight. A torn last line (a crash in
mid-write) is cut off on the next open.
"""

from __future__ import annotations

import contextlib
import json
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from search_o1.errors import ConfigError, InputFileError

RESULTS = "results.jsonl"
CONFIG = "config.json"
METRICS = "metrics.json"
SUMMARY = "summary.md"
_SECRET_NAME = re.compile(r"key|token|secret|password|auth", re.IGNORECASE)
_PACKAGES = ("search-o1", "httpx", "pydantic", "math-verify", "bm25s", "numpy", "rich", "click")


def read_records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """id -> record for every complete line of results.jsonl (a later line wins)."""
    path = run_dir / RESULTS
    records: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return records
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # a torn final line: the item was in flight, it will rerun
            with contextlib.suppress(json.JSONDecodeError):
                record = json.loads(line)
                if isinstance(record, dict) and "id" in record:
                    records[str(record["id"])] = record
    return records


def open_results(run_dir: Path) -> IO[str]:
    """results.jsonl for appending, first cutting off a torn final line."""
    path = run_dir / RESULTS
    if path.exists():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
    return path.open("a", encoding="utf-8")


def append_record(f: IO[str], record: Mapping[str, Any]) -> None:
    f.write(json.dumps(record, ensure_ascii=False) + "\n")
    f.flush()


def write_json(path: Path, data: Any) -> None:
    """Write atomically: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


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


def _scrub_url(value: str) -> str:
    """Drop user:password@ from a URL; other strings pass unchanged."""
    with contextlib.suppress(ValueError):
        parts = urlsplit(value)
        if parts.scheme and (parts.username or parts.password):
            host = parts.hostname or ""
            netloc = f"{host}:{parts.port}" if parts.port else host
            return urlunsplit(parts._replace(netloc=netloc))
    return value


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
    if any(out.iterdir()):
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
