"""The cache: record/replay/off through the real builders, crash safety, export/import, CLI."""

from __future__ import annotations

import json
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

from search_o1.cache import Cache, close_caches, make_key, open_cache
from search_o1.cli.cache import command as cache_cli
from search_o1.config import Settings
from search_o1.errors import ConfigError, InputFileError, ReplayMissError
from search_o1.fetch import build_documents
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.factory import build_search
from search_o1.search.fusion import FusedSearch
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit

FACT = "Giacomo Puccini composed Tosca, which premiered in Rome on 14 January 1900."


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    yield
    close_caches()


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
    search = build_search(settings)
    docs = build_documents(settings)
    hits = await search.search(query, k=5)
    documents = await docs.read(query, hits)
    await search.aclose()
    await docs.aclose()
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
    close_caches()
    replayed = await _run(_settings(tmp_path, serper_site, "replay"))
    assert replayed[0] == recorded[0]
    assert replayed[1][0] == recorded[1][0]
    # The failure was never stored: replay says so and keeps the snippet, as recorded.
    status, text = replayed[1][1].split("|")
    assert status.startswith("failed: cache replay") and serper_site.url("/gone") in status
    assert text == "a page that 404s"


async def test_replay_miss_names_the_query(tmp_path: Path, serper_site: WebServer) -> None:
    await _run(_settings(tmp_path, serper_site))
    close_caches()
    search = build_search(_settings(tmp_path, serper_site, "replay"))
    with pytest.raises(ReplayMissError, match="a query never recorded"):
        await search.search("a query never recorded", k=5)
    with pytest.raises(ReplayMissError):  # top-k is part of the key
        await search.search("who wrote tosca", k=3)


async def test_failed_search_is_not_cached(tmp_path: Path, serper_site: WebServer) -> None:
    serper_site.routes["/search"] = Reply(500, "down")
    search = build_search(_settings(tmp_path, serper_site))
    with pytest.raises(Exception, match="HTTP 500"):
        await search.search("q", k=5)
    cache = open_cache(_settings(tmp_path, serper_site))
    assert cache is not None and cache.stats().entries == {}


def test_off_mode_and_corpus_only_runs_open_no_file(tmp_path: Path, serper_site: WebServer) -> None:
    assert open_cache(_settings(tmp_path, serper_site, "off")) is None
    build_search(_settings(tmp_path, serper_site, "off"))
    build_documents(_settings(tmp_path, serper_site))
    assert not (tmp_path / "cache.sqlite").exists()


def test_replay_without_a_cache_file(tmp_path: Path, serper_site: WebServer) -> None:
    with pytest.raises(ConfigError, match="no cache file"):
        build_search(_settings(tmp_path, serper_site, "replay"))


def test_one_shared_cache_per_path(tmp_path: Path, serper_site: WebServer) -> None:
    a = open_cache(_settings(tmp_path, serper_site))
    b = open_cache(_settings(tmp_path, serper_site))
    assert a is b and a is not None and a.run_id


async def test_fusion_caches_only_web_backends(tmp_path: Path, serper_site: WebServer) -> None:
    # Built by hand as build_search does (the memory backend has no settings factory).
    from search_o1.search.cached import CachedSearch
    from search_o1.search.serper import SerperSearch

    local = MemorySearch({"who wrote tosca": [Hit(id="m1", title="Tosca (local)", text="t")]})
    settings = _settings(tmp_path, serper_site)
    cache = open_cache(settings)
    assert cache is not None
    fused = FusedSearch([local, CachedSearch(SerperSearch.from_settings(settings), cache)])
    hits = await fused.search("who wrote tosca", k=3)
    assert [h.title for h in hits] == ["Tosca (local)", "Tosca", "Gone"]
    assert cache.stats().entries == {"search": 1}


def test_ttl_expires_entries(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite", ttl_s=0.05)
    cache.put("search", {"q": 1}, "q", [1])
    assert cache.get("search", {"q": 1}, "q") == [1]
    time.sleep(0.06)
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
    close_caches()
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
    cache = open_cache(stale)
    assert (
        cache is not None
        and cache.ttl_s == 60
        and cache.stats().entries
        == {
            "search": 1,
            "page": 1,
        }
    )
    close_caches()
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


async def test_closing_one_pipeline_leaves_the_shared_cache_open(
    tmp_path: Path, serper_site: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from search_o1 import registry
    from search_o1.pipeline import open_pipeline

    monkeypatch.setitem(registry.LLM_BACKENDS, "scripted", f"{__name__}:_silent_model")
    settings = _settings(tmp_path, serper_site).model_copy(update={"backend": "scripted"})
    async with open_pipeline(settings) as second:
        async with open_pipeline(settings) as first:
            assert first.search is not None
            await first.search.search("who wrote tosca", k=5)
        # `first` is closed; `second` still reads and writes the same cache.
        assert second.search is not None
        hits = await second.search.search("who wrote tosca", k=5)
        docs = await second.documents.read("who wrote tosca", hits)
    assert docs[0].status == "ok" and FACT in docs[0].text
    cache = open_cache(settings)
    assert cache is not None and sum(cache.stats().entries.values()) >= 2


def _silent_model(settings: Settings, *, role: str = "main") -> ScriptedLLM:
    """A model factory for the registry; these tests never call the model."""
    return ScriptedLLM([])
