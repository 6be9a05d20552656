"""Bad cache files as an operator meets them, through `search-o1 ask` with real SQLite
files: not SQLite, damaged in the middle, damaged where only a read finds it, and
read-only (immutable)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.e2e.web_support import ask_args, check_answer, site_for
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.servers.web import WebServer
from tests.two_hop import respond_body as reasoning_model

from search_o1.cache import Cache
from search_o1.cli import cli


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with openai_server(reasoning_model, return_stop=False, models=["m", "reader"]) as srv:
        yield srv


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebServer]:
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    srv = site_for("serper")
    yield srv
    srv.stop()


def _ask(model: FakeOpenAIServer, site: WebServer, cache: Path, *extra: str) -> Any:
    args = [*ask_args(model, site.url("/search"), "serper", cache), *extra]
    return CliRunner().invoke(cli, args)


def _one_line_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cache "), result.stderr
    assert all(n in lines[0] for n in needles), lines[0]
    assert result.stdout == ""


def _record(model: FakeOpenAIServer, site: WebServer, cache: Path) -> None:
    out = _ask(model, site, cache)
    assert out.exit_code == 0, out.output
    check_answer(json.loads(out.stdout), site)


def test_a_file_that_is_not_sqlite(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    cache.write_text("these are my notes, not a database\n" * 200)
    for mode in ("record", "replay"):
        _one_line_error(_ask(model, site, cache, "--cache", mode), str(cache), "move it away")
    assert model.completion_requests == [] and site.requests == []  # before any work


def _pad(cache: Path, entries: int = 300) -> None:
    """Enough incompressible entries that the file has pages well past its schema."""
    with Cache(cache) as c:
        for i in range(entries):
            c.put("page", {"url": f"http://pad/{i}"}, "pad", {"text": os.urandom(900).hex()})


def test_damage_in_the_middle_is_found_before_any_work(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    _record(model, site, cache)
    _pad(cache)
    data = bytearray(cache.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    middle = (len(data) // page // 2) * page
    data[middle : middle + page] = os.urandom(page)  # one page of noise, mid-file
    cache.write_bytes(bytes(data))
    asked, fetched = len(model.completion_requests), len(site.requests)
    for mode in ("record", "replay"):
        _one_line_error(_ask(model, site, cache, "--cache", mode), str(cache), "move it away")
    assert (len(model.completion_requests), len(site.requests)) == (asked, fetched)


def test_damage_met_mid_run_fails_that_search_only(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    _record(model, site, cache)
    # Damage the stored bytes of one search result: the file's structure stays sound, so
    # only reading that entry finds it, mid-run.
    with sqlite3.connect(cache) as db:
        (blob,) = db.execute("SELECT value FROM entries WHERE label = 'Glimmer Bridge designer'")
        blob = blob[0]
    db.close()
    data = cache.read_bytes()
    at = data.index(blob) + len(blob) // 2
    cache.write_bytes(data[:at] + bytes(b ^ 0xFF for b in data[at : at + 8]) + data[at + 8 :])
    trace_file = tmp_path / "trace.json"
    out = _ask(model, site, cache, "--trace-out", str(trace_file))
    assert out.exit_code == 0, out.output
    steps = json.loads(trace_file.read_text())["steps"]
    searches = [s["search"] for s in steps if s.get("search")]
    assert searches[0]["outcome"] == "failed" and str(cache) in searches[0]["error"]
    assert json.loads(out.stdout)["finish_reason"] != "error"  # the chain went on


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths to make unwritable, even for root: immutable (chattr +i) where allowed."""
    paths: list[Path] = []
    yield paths
    for path in reversed(paths):
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
        path.chmod(0o755 if path.is_dir() else 0o644)


def _protect(paths: list[Path], *targets: Path) -> None:
    for target in targets:
        done = subprocess.run(["chattr", "+i", str(target)], capture_output=True)
        paths.append(target)
        if done.returncode != 0:
            if os.geteuid() == 0:
                pytest.skip("cannot make a file read-only for root here (chattr +i refused)")
            target.chmod(0o555 if target.is_dir() else 0o444)


def test_a_read_only_cache_replays_and_refuses_to_record(
    model: FakeOpenAIServer, site: WebServer, tmp_path: Path, read_only: list[Path]
) -> None:
    folder = tmp_path / "snapshot"
    cache = folder / "cache.sqlite"
    _record(model, site, cache)
    assert sorted(p.name for p in folder.iterdir()) == ["cache.sqlite"]  # all in one file
    before = hashlib.sha256(cache.read_bytes()).hexdigest()
    _protect(read_only, cache, folder)
    site.stop()  # replay must not need the network
    out = _ask(model, site, cache, "--cache", "replay")
    assert out.exit_code == 0, out.output
    check_answer(json.loads(out.stdout), site)
    assert hashlib.sha256(cache.read_bytes()).hexdigest() == before  # no usage log written
    _one_line_error(_ask(model, site, cache), str(cache), "read-only", "--cache replay")
