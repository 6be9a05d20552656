"""The cache: record/replay/off through the real builders, crash safety, export/import, CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.servers.web import Reply, WebServer, web_server

from search_o1.cache import Cache, make_key
from search_o1.cli.cache import command as cache_cli
from search_o1.config import Settings
from search_o1.errors import ConfigError, InputFileError, ReplayMissError
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import build_search, open_pipeline
from search_o1.registry import register, unregister
from search_o1.search.cached import CachedSearch
from search_o1.search.fusion import FusedSearch
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit
from search_o1.wiring import build_documents, open_cache, searches

FACT = "Giacomo Puccini composed Tosca, which premiered in Rome on 14 January 1900."


@pytest.fixture
def serper_site(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebServer]:
    """A Serper-speaking search endpoint that also serves the result pages."""
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    with web_server() as srv:

        def search(req: object) -> Reply:
            organic = [
                {"title": "Tosca", "link": srv.url("/tosca"), "snippet": "Tosca premiered in Rome"},
                {"title": "Gone", "link": srv.url("/gone"), "snippet": "a page that 404s"},
            ]
            return Reply(body={"organic": organic})

        srv.routes["/search"] = search
        srv.routes["/tosca"] = Reply(body=f"<html><body><p>{FACT}</p></body></html>")
        yield srv


def _settings(tmp_path: Path, srv: WebServer, mode: str = "record") -> Settings:
    return Settings(
        search=["serper"],
        search_endpoint=srv.url("/search"),
        allow_private_hosts=True,
        cache=mode,  # type: ignore[arg-type]
        cache_path=str(tmp_path / "cache.sqlite"),
        retries=0,
    )


async def _run(settings: Settings, query: str = "who wrote tosca") -> tuple[list[Hit], list[str]]:
    """One search and its pages, as a pipeline does: one cache for both, closed at the end."""
    cache = open_cache(settings)
    search = build_search(settings, cache=cache)
    docs = build_documents(settings, cache=cache)
    hits = await search.search(query, k=5)
    documents = await docs.read(query, hits)
    await search.aclose()
    await docs.aclose()
    if cache is not None:
        cache.close()
    return hits, [f"{d.status}|{d.text}" for d in documents]


async def test_record_then_replay_offline(tmp_path: Path, serper_site: WebServer) -> None:
    recorded = await _run(_settings(tmp_path, serper_site))
    assert recorded[1][0].startswith("ok|") and FACT in recorded[1][0]
    assert recorded[1][1] == "failed: HTTP 404|a page that 404s"
    requests_made = len(serper_site.requests)
    # Record again: everything but the failed page comes from the cache.
    again = await _run(_settings(tmp_path, serper_site))
    assert again == recorded
    assert [r.path for r in serper_site.requests[requests_made:]] == ["/gone"]
    serper_site.stop()  # from here on any request would fail
    replayed = await _run(_settings(tmp_path, serper_site, "replay"))
    assert replayed[0] == recorded[0]
    assert replayed[1][0] == recorded[1][0]
    # The failure was never stored: replay says so and keeps the snippet, as recorded.
    status, text = replayed[1][1].split("|")
    assert status.startswith("failed: cache replay") and serper_site.url("/gone") in status
    assert text == "a page that 404s"


async def test_replay_miss_names_the_query(tmp_path: Path, serper_site: WebServer) -> None:
    await _run(_settings(tmp_path, serper_site))
    replay = _settings(tmp_path, serper_site, "replay")
    with open_cache(replay) as cache:
        search = build_search(replay, cache=cache)
        with pytest.raises(ReplayMissError, match="a query never recorded"):
            await search.search("a query never recorded", k=5)
        with pytest.raises(ReplayMissError):  # top-k is part of the key
            await search.search("who wrote tosca", k=3)


async def test_failed_search_is_not_cached(tmp_path: Path, serper_site: WebServer) -> None:
    serper_site.routes["/search"] = Reply(500, "down")
    settings = _settings(tmp_path, serper_site)
    with open_cache(settings) as cache:
        search = build_search(settings, cache=cache)
        with pytest.raises(Exception, match="HTTP 500"):
            await search.search("q", k=5)
        assert cache.stats().entries == {}


async def test_off_mode_and_corpus_only_runs_open_no_file(
    tmp_path: Path, serper_site: WebServer, corpus: Path
) -> None:
    assert open_cache(_settings(tmp_path, serper_site, "off")) is None
    local = _settings(tmp_path, serper_site).model_copy(
        update={"search": ["bm25"], "corpus": str(corpus), "backend": "scripted"}
    )
    async with open_pipeline(local) as engine:  # builds search and documents, both lazy
        assert engine.search is not None
        await engine.search.search("tosca", k=1)
    assert not (tmp_path / "cache.sqlite").exists()


async def test_replay_without_a_cache_file(tmp_path: Path, serper_site: WebServer) -> None:
    replay = _settings(tmp_path, serper_site, "replay").model_copy(update={"backend": "scripted"})
    with pytest.raises(ConfigError, match="no cache file"):
        async with open_pipeline(replay):
            pass


def test_each_open_is_its_own_handle(tmp_path: Path, serper_site: WebServer) -> None:
    settings = _settings(tmp_path, serper_site)
    with open_cache(settings) as a, open_cache(settings) as b:
        assert a is not b and a.run_id != b.run_id


async def test_fusion_caches_only_web_backends(tmp_path: Path, serper_site: WebServer) -> None:
    # Built by hand as build_search does, to fuse a MemorySearch with given hits.

    local = MemorySearch({"who wrote tosca": [Hit(id="m1", title="Tosca (local)", text="t")]})
    settings = _settings(tmp_path, serper_site)
    with open_cache(settings) as cache:
        fused = FusedSearch([local, CachedSearch(searches.serper(settings), cache)])
        hits = await fused.search("who wrote tosca", k=3)
        assert [h.title for h in hits] == ["Tosca (local)", "Tosca", "Gone"]
        assert cache.stats().entries == {"search": 1}


def test_ttl_expires_entries(tmp_path: Path) -> None:
    now = [1000.0]
    cache = Cache(tmp_path / "c.sqlite", ttl_s=60, clock=lambda: now[0])
    cache.put("search", {"q": 1}, "q", [1])
    now[0] += 59.9
    assert cache.get("search", {"q": 1}, "q") == [1]
    now[0] += 0.1  # exactly the TTL old: stale
    assert cache.get("search", {"q": 1}, "q") is None


def _age_entries(path: Path, seconds: float) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE entries SET created = created - ?", (seconds,))
    db.close()


async def test_ttl_refetches_in_record_and_still_replays(
    tmp_path: Path, serper_site: WebServer
) -> None:
    recorded = await _run(_settings(tmp_path, serper_site))
    _age_entries(tmp_path / "cache.sqlite", 3600)

    def with_ttl(settings: Settings, ttl_s: float) -> Settings:
        return settings.model_copy(update={"cache_ttl": ttl_s})

    seen = len(serper_site.requests)
    assert await _run(with_ttl(_settings(tmp_path, serper_site), 7200)) == recorded
    assert [r.path for r in serper_site.requests[seen:]] == ["/gone"]  # younger: served
    seen = len(serper_site.requests)
    stale = with_ttl(_settings(tmp_path, serper_site), 60)
    assert await _run(stale) == recorded
    # Older than the TTL: searched and fetched again, and overwritten in place.
    assert sorted(r.path for r in serper_site.requests[seen:]) == ["/gone", "/search", "/tosca"]
    with open_cache(stale) as cache:
        assert cache.ttl_s == 60 and cache.stats().entries == {"search": 1, "page": 1}
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        (oldest,) = db.execute("SELECT MIN(created) FROM entries").fetchone()
    assert time.time() - oldest < 60
    # Replay ignores the TTL: a recording reproduces whatever its age.
    _age_entries(tmp_path / "cache.sqlite", 3600)
    serper_site.stop()
    replayed = await _run(with_ttl(_settings(tmp_path, serper_site, "replay"), 60))
    assert replayed[0] == recorded[0] and replayed[1][0] == recorded[1][0]


_WRITER = textwrap.dedent(
    """
    import sys, time
    from search_o1.cache import Cache
    cache = Cache(sys.argv[1], run_id="crashy")
    for i in range(1000):
        cache.put("page", {"url": f"http://x/{i}"}, f"http://x/{i}", {"text": "p" * 500})
        print(i, flush=True)
        time.sleep(0.01)
    """
)


def test_entries_survive_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    seen = -1
    while seen < 20:
        seen = int(proc.stdout.readline())
    proc.kill()  # SIGKILL: no cleanup, no exit handlers
    proc.wait()
    cache = Cache(path, "replay")
    for i in range(seen + 1):  # every entry reported stored before the kill is there
        assert cache.get("page", {"url": f"http://x/{i}"}, "u") == {"text": "p" * 500}
    assert dict(cache.stats().runs)["crashy"] >= seen + 1


def test_export_import_round_trip(tmp_path: Path) -> None:
    src = Cache(tmp_path / "a.sqlite", run_id="run-1")
    src.put("search", {"backend": "serper", "query": "q1", "k": 5}, "q1", [{"id": "u"}])
    src.put("page", {"url": "http://p/1", "extractor": "1"}, "http://p/1", {"text": "café"})
    other = Cache(tmp_path / "a.sqlite", run_id="run-2")
    other.put("search", {"backend": "serper", "query": "q2", "k": 5}, "q2", [])
    assert src.export(tmp_path / "run1.jsonl", run="run-1") == 2
    assert src.export(tmp_path / "all.jsonl") == 3
    dst = Cache(tmp_path / "b.sqlite")
    assert dst.import_file(tmp_path / "run1.jsonl") == 2
    replay = Cache(tmp_path / "b.sqlite", "replay")
    assert replay.get("page", {"url": "http://p/1", "extractor": "1"}, "u") == {"text": "café"}
    with pytest.raises(ReplayMissError, match="q2"):
        replay.get("search", {"backend": "serper", "query": "q2", "k": 5}, "q2")


def test_export_import_round_trip_of_text_with_unicode_line_breaks(tmp_path: Path) -> None:
    # A page holding U+2028 (common in scripts and editors' output), NEL or a file
    # separator was written raw into the export and split there on import.
    text = {"text": "one\u2028two\u2029three\x85four\x1cfive\x1dsix\x1eseven\x0beight"}
    src = Cache(tmp_path / "a.sqlite")
    src.put("page", {"url": "http://p/1", "extractor": "1"}, "http://p/1", text)
    assert src.export(tmp_path / "x.jsonl") == 1
    dst = Cache(tmp_path / "b.sqlite")
    assert dst.import_file(tmp_path / "x.jsonl") == 1
    assert dst.get("page", {"url": "http://p/1", "extractor": "1"}, "u") == text


def test_import_rejects_bad_files(tmp_path: Path) -> None:
    src = Cache(tmp_path / "a.sqlite")
    src.put("search", {"query": "q"}, "q", ["v"])
    src.export(tmp_path / "x.jsonl")
    lines = (tmp_path / "x.jsonl").read_text().splitlines()
    entry = json.loads(lines[1])
    entry["meta"]["query"] = "tampered"
    (tmp_path / "bad.jsonl").write_text(lines[0] + "\n" + json.dumps(entry) + "\n")
    dst = Cache(tmp_path / "b.sqlite")
    with pytest.raises(InputFileError, match=r"bad\.jsonl:2: entry key does not match"):
        dst.import_file(tmp_path / "bad.jsonl")
    (tmp_path / "junk.jsonl").write_text("hello\n")
    with pytest.raises(InputFileError, match="not a search-o1 cache export"):
        dst.import_file(tmp_path / "junk.jsonl")
    assert dst.stats().entries == {}  # nothing half-imported
    assert make_key("search", {"a": 1, "b": 2}) == make_key("search", {"b": 2, "a": 1})


def test_cli_stats_export_import(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    cache = Cache(db, run_id="r1")
    cache.put("search", {"query": "q"}, "q", [])
    cache.put("page", {"url": "u"}, "u", {"text": "t"})
    cache.close()
    runner = CliRunner()
    res = runner.invoke(cache_cli, ["stats", "--cache-path", str(db)])
    assert (
        res.exit_code == 0 and "searches: 1  pages: 1" in res.output and "run r1: 2" in res.output
    )
    res = runner.invoke(cache_cli, ["stats", "--json", "--cache-path", str(db)])
    assert json.loads(res.output)["entries"] == {"page": 1, "search": 1}
    out = tmp_path / "e.jsonl"
    res = runner.invoke(cache_cli, ["export", str(out), "--run", "last", "--cache-path", str(db)])
    assert res.exit_code == 0 and "exported 2 entries" in res.output
    new = tmp_path / "sub" / "n.sqlite"
    res = runner.invoke(cache_cli, ["import", str(out), "--cache-path", str(new)])
    assert res.exit_code == 0 and "imported 2 entries" in res.output
    res = runner.invoke(cache_cli, ["stats", "--cache-path", str(tmp_path / "none.sqlite")])
    assert res.exit_code != 0 and "no cache at" in str(res.exception)


def _open_handles(path: Path) -> int:
    """How many file descriptors of this process point at `path` (Linux /proc)."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs Linux /proc")
async def test_a_closed_pipeline_leaves_no_sqlite_handle_open(
    tmp_path: Path, serper_site: WebServer
) -> None:
    settings = _settings(tmp_path, serper_site).model_copy(update={"backend": "scripted"})
    db = tmp_path / "cache.sqlite"
    async with open_pipeline(settings) as engine:
        assert isinstance(engine.search, CachedSearch)
        hits = await engine.search.search("who wrote tosca", k=5)
        await engine.documents.read("who wrote tosca", hits)
        cache = engine.search.cache
        assert _open_handles(db) >= 1
    assert _open_handles(db) == 0
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        cache.stats()
    with sqlite3.connect(db) as check:  # and what it recorded is in the main file
        assert check.execute("SELECT COUNT(*) FROM entries").fetchone() == (2,)


async def test_pipelines_share_a_cache_only_when_given_one(
    tmp_path: Path, serper_site: WebServer
) -> None:
    settings = _settings(tmp_path, serper_site).model_copy(update={"backend": "scripted"})
    with Cache(tmp_path / "cache.sqlite", run_id="shared") as cache:
        async with open_pipeline(settings, cache=cache) as second:
            async with open_pipeline(settings, cache=cache) as first:
                assert first.search is not None
                await first.search.search("who wrote tosca", k=5)
            # `first` is closed, and did not close what it was given.
            assert second.search is not None
            hits = await second.search.search("who wrote tosca", k=5)
            docs = await second.documents.read("who wrote tosca", hits)
        assert docs[0].status == "ok" and FACT in docs[0].text
        assert serper_site.hits("/search") == 1  # the second pipeline read the first's entry
        assert cache.stats().runs == [("shared", 2)]
    async with open_pipeline(settings) as own:  # not given one: its own handle and run id
        assert isinstance(own.search, CachedSearch) and own.search.cache.run_id != "shared"


def _silent_model(settings: Settings, *, role: str = "main") -> ScriptedLLM:
    """A model factory for the registry; these tests never call the model."""
    return ScriptedLLM([])


@pytest.fixture(autouse=True)
def _scripted_backend() -> Iterator[None]:
    register("llm", "scripted", _silent_model)
    yield
    unregister("llm", "scripted")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"title": "Tosca", "text": FACT}) + "\n", encoding="utf-8")
    return path
