"""Page-reader service mode and robots.txt, against real local servers.

The reader is a Jina-Reader-style service on 127.0.0.1 (tests/servers/web.py
`page_reader`) that really reads the pages of a second local server.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.servers.web import Reply, WebServer, page_reader, web_server

from search_o1.config import Settings
from search_o1.errors import ConfigError
from search_o1.fetch import FetchConfig, FetchError, HostPolicy, PageFetcher
from search_o1.fetch import robots as robots_mod
from search_o1.types import Hit
from search_o1.wiring import build_documents, open_cache

FACT = "Giacomo Puccini composed Tosca, which premiered in Rome on 14 January 1900."
PAGE = f"<html><body><nav>Home | News</nav><p>{FACT}</p></body></html>"
KEY = "reader-key-42"


@pytest.fixture
def site() -> Iterator[WebServer]:
    with web_server({"/article": Reply(body=PAGE), "/plain": Reply(body=FACT)}) as srv:
        yield srv


@pytest.fixture
def reader() -> Iterator[WebServer]:
    with web_server({"*": page_reader()}) as srv:
        yield srv


def _reader_fetcher(reader_url: str, policy: HostPolicy | None = None, **kw: object) -> PageFetcher:
    kw = {"read_timeout_s": 1.0, "total_timeout_s": 3.0, **kw}
    config = FetchConfig(reader_url=reader_url, **kw)  # type: ignore[arg-type]
    return PageFetcher(config, policy or HostPolicy(allow_private=True))


async def _reason(fetcher: PageFetcher, url: str) -> str:
    with pytest.raises(FetchError) as e:
        await fetcher.fetch(url)
    await fetcher.aclose()
    return e.value.reason


def _hit(url: str, snippet: str = "snip") -> Hit:
    return Hit(id=url, title="t", url=url, snippet=snippet)


# ---- reader service mode -------------------------------------------------------------


async def test_reader_reads_the_page_for_us(
    site: WebServer, reader: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAGE_READER_API_KEY", KEY)
    reader.routes["*"] = page_reader(key=KEY)
    fetcher = _reader_fetcher(reader.base + "/")  # a trailing slash is not doubled
    page = await fetcher.fetch(site.url("/article?lang=en"))
    await fetcher.aclose()
    assert FACT in page.text and "URL Source" in page.text
    assert page.url == site.url("/article?lang=en")  # the page's address, not the reader's
    (req,) = reader.requests
    assert req.path == "/" + site.url("/article") and req.query == {"lang": "en"}
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["accept"] == "text/plain"
    assert req.headers["user-agent"].startswith("search-o1/")
    assert "x-robots-txt" not in req.headers
    # The page was read by the service, never by us.
    assert [r.headers["user-agent"].startswith("Python-urllib") for r in site.requests] == [True]


async def test_reader_without_a_key_sends_none(
    site: WebServer, reader: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAGE_READER_API_KEY", raising=False)
    page = await _reader_fetcher(reader.base).fetch(site.url("/plain"))
    assert page.text.endswith(FACT) and "authorization" not in reader.requests[0].headers
    reader.routes["*"] = page_reader(key=KEY)  # a protected service: the 401 is data
    assert await _reason(_reader_fetcher(reader.base), site.url("/plain")) == (
        "page reader: HTTP 401"
    )


async def test_reader_on_a_private_host_needs_the_opt_in(reader: WebServer) -> None:
    fetcher = _reader_fetcher(reader.base, HostPolicy())
    reason = await _reason(fetcher, "https://en.wikipedia.org/wiki/Tosca")
    assert reason == "blocked: page reader: private address 127.0.0.1"
    assert reader.requests == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "blocked: scheme 'file' is not http(s)"),
        ("ftp://example.org/x", "blocked: scheme 'ftp' is not http(s)"),
        ("http://10.0.0.1/admin", "blocked: private address 10.0.0.1"),
        ("http://169.254.169.254/latest", "blocked: private address 169.254.169.254"),
    ],
)
async def test_page_urls_are_checked_before_they_are_passed_on(
    reader: WebServer, url: str, reason: str
) -> None:
    # The reader itself is trusted explicitly; the page addresses still are not.
    policy = HostPolicy(allowed=frozenset({f"127.0.0.1:{reader.port}"}))
    assert await _reason(_reader_fetcher(reader.base, policy), url) == reason
    assert reader.requests == []


async def test_reader_failures_are_data(site: WebServer, reader: WebServer) -> None:
    assert await _reason(_reader_fetcher(reader.base), site.url("/missing")) == (
        "page reader: HTTP 422"
    )
    reader.routes["*"] = Reply(body="x" * 50_000, content_type="text/plain")
    reason = await _reason(_reader_fetcher(reader.base, max_bytes=10_000), site.url("/plain"))
    assert reason.startswith("too large")
    reader.routes["*"] = Reply(body=FACT, content_type="text/plain", delay_s=1.0)
    fetcher = _reader_fetcher(reader.base, read_timeout_s=0.2)
    assert await _reason(fetcher, site.url("/plain")) == "timeout"
    reader.routes["*"] = Reply(302, headers={"Location": "http://10.0.0.1/"})
    assert await _reason(_reader_fetcher(reader.base), site.url("/plain")) == (
        "page reader: HTTP 302"
    )
    with web_server() as gone:
        url = gone.base
    reason = await _reason(_reader_fetcher(url), site.url("/plain"))
    assert reason.startswith("connection error")


@pytest.mark.parametrize(
    "url", ["ftp://reader.example/", "not a url", "http:///x", "https://r.example/?token=x"]
)
def test_a_bad_reader_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="page reader URL"):
        PageFetcher(FetchConfig(reader_url=url))


def test_reader_identity_keeps_no_secret() -> None:
    fetcher = PageFetcher(FetchConfig(reader_url="https://u:zzsecret@r.example/read/"))
    assert fetcher.cache_identity() == {"reader": "https://r.example/read"}  # one form
    assert PageFetcher().cache_identity() == {}


def _settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(
        allow_private_hosts=True,
        cache_path=str(tmp_path / "c.sqlite"),
        **kw,  # type: ignore[arg-type]
    )


async def _statuses(settings: Settings, hits: list[Hit]) -> list[str]:
    cache = open_cache(settings)
    docs = build_documents(settings, cache=cache)
    documents = await docs.read("where did Tosca premiere", hits)
    await docs.aclose()
    if cache is not None:
        cache.close()
    return [d.status for d in documents]


async def test_reader_pages_are_cached_by_reader_and_failures_are_not(
    tmp_path: Path, site: WebServer, reader: WebServer
) -> None:
    hits = [_hit(site.url("/article")), _hit(site.url("/missing"))]
    via_reader = _settings(tmp_path, page_service=reader.base)
    for _ in range(2):
        statuses = await _statuses(via_reader, hits)
        assert statuses == ["ok", "failed: page reader: HTTP 422"]
    paths = [r.path for r in reader.requests]
    assert paths.count("/" + site.url("/article")) == 1  # the second run read the cache
    assert paths.count("/" + site.url("/missing")) == 2  # a failure is never cached
    # Another reader, or none, extracts differently: neither reuses that entry.
    other = _settings(tmp_path, page_service=reader.base + "/v2")
    assert await _statuses(other, hits[:1]) == ["failed: page reader: HTTP 422"]
    assert await _statuses(_settings(tmp_path), hits[:1]) == ["ok"]
    assert site.hits("/article") == 2  # the reader's read, then our own direct fetch
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        metas = sorted(m for (m,) in db.execute("SELECT meta FROM entries WHERE kind='page'"))
    assert len(metas) == 2 and f'"reader": "{reader.base}"' in metas[0]
    assert '"reader"' not in metas[1]


async def test_reader_passes_robots_on_to_the_service(site: WebServer, reader: WebServer) -> None:
    fetcher = _reader_fetcher(reader.base, respect_robots=True)
    await fetcher.fetch(site.url("/article"))
    await fetcher.aclose()
    assert reader.requests[0].headers["x-robots-txt"].startswith("search-o1/")
    assert site.hits("/robots.txt") == 0  # in reader mode we never contact the page host


# ---- robots.txt ----------------------------------------------------------------------

ROBOTS = """# comments and unknown lines are ignored
User-agent: search-o1
Disallow: /private
Allow: /

User-agent: *
Disallow: /
"""


def _robots_fetcher(**kw: object) -> PageFetcher:
    kw = {"read_timeout_s": 1.0, "total_timeout_s": 3.0, **kw}
    config = FetchConfig(respect_robots=True, **kw)  # type: ignore[arg-type]
    return PageFetcher(config, HostPolicy(allow_private=True))


async def test_robots_rules_are_obeyed_and_fetched_once(site: WebServer) -> None:
    site.routes["/robots.txt"] = Reply(body=ROBOTS, content_type="text/plain", delay_s=0.1)
    site.routes["/private/page"] = Reply(body=PAGE)
    fetcher = _robots_fetcher()
    pages = await asyncio.gather(*(fetcher.fetch(site.url("/article")) for _ in range(4)))
    assert all(FACT in p.text for p in pages)
    assert await _reason(fetcher, site.url("/private/page")) == "disallowed by robots.txt"
    assert site.hits("/robots.txt") == 1 and site.hits("/private/page") == 0
    assert site.requests[0].headers["user-agent"].startswith("search-o1/")


async def test_every_redirect_hop_is_checked(site: WebServer) -> None:
    site.routes["/robots.txt"] = Reply(body=ROBOTS, content_type="text/plain")
    site.routes["/old"] = Reply(301, headers={"Location": "/private/page"})
    assert await _reason(_robots_fetcher(), site.url("/old")) == "disallowed by robots.txt"
    assert site.hits("/private/page") == 0


@pytest.mark.parametrize("status", [404, 403, 410])
async def test_unavailable_robots_allows_everything(site: WebServer, status: int) -> None:
    # RFC 9309: any 4xx means "no robots.txt" (stdlib robotparser.read() would refuse
    # everything for 401/403; we follow the RFC).
    site.routes["/robots.txt"] = Reply(status, "no")
    page = await _robots_fetcher().fetch(site.url("/article"))
    assert FACT in page.text


async def test_unreachable_robots_refuses_for_a_while(
    site: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.routes["/robots.txt"] = Reply(503, "busy")
    fetcher = _robots_fetcher()
    reason = await _reason(fetcher, site.url("/article"))
    assert reason == "robots.txt unreachable (HTTP 503)" and site.hits("/article") == 0
    await _reason(fetcher, site.url("/plain"))
    assert site.hits("/robots.txt") == 1  # the refusal is remembered...
    monkeypatch.setattr(robots_mod, "REFUSAL_TTL_S", 0.0)
    site.routes["/robots.txt"] = Reply(404, "none")
    page = await fetcher.fetch(site.url("/article"))  # ...for REFUSAL_TTL_S only
    await fetcher.aclose()
    assert FACT in page.text and site.hits("/robots.txt") == 2


async def test_robots_timeout_and_connection_errors_refuse(site: WebServer) -> None:
    site.routes["/robots.txt"] = Reply(body=ROBOTS, delay_s=5.0)
    start = time.monotonic()
    reason = await _reason(_robots_fetcher(read_timeout_s=0.2), site.url("/article"))
    assert reason == "robots.txt unreachable (timeout)" and time.monotonic() - start < 4.0
    with web_server() as gone:
        url = gone.url("/article")
    assert (await _reason(_robots_fetcher(), url)).startswith(
        "robots.txt unreachable (connection error"
    )


async def test_huge_robots_is_read_up_to_the_cap(site: WebServer) -> None:
    filler = "# padding\n" * (robots_mod.ROBOTS_MAX_BYTES // 10 + 10)
    site.routes["/robots.txt"] = Reply(body=ROBOTS + filler, content_type="text/plain")
    site.routes["/private/page"] = Reply(body=PAGE)
    fetcher = _robots_fetcher()
    assert FACT in (await fetcher.fetch(site.url("/article"))).text
    assert await _reason(fetcher, site.url("/private/page")) == "disallowed by robots.txt"


async def test_robots_off_by_default_and_refusals_are_data_never_cached(
    tmp_path: Path, site: WebServer
) -> None:
    site.routes["/robots.txt"] = Reply(body="User-agent: *\nDisallow: /article\n")
    assert await _statuses(_settings(tmp_path), [_hit(site.url("/article"))]) == ["ok"]
    assert site.hits("/robots.txt") == 0
    (tmp_path / "c.sqlite").unlink()
    polite = _settings(tmp_path, respect_robots=True)
    with open_cache(polite) as cache:
        docs = build_documents(polite, cache=cache)
        (doc,) = await docs.read("q", [_hit(site.url("/article"), snippet="kept snippet")])
        await docs.aclose()
    assert (doc.status, doc.text) == ("failed: disallowed by robots.txt", "kept snippet")
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM entries").fetchone() == (0,)
