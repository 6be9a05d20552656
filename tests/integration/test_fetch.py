"""The page fetcher and document step against real local pages (and the SSRF guard)."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.servers.web import Reply, WebServer, make_pdf, web_server

from search_o1.config import Settings
from search_o1.fetch import (
    FetchConfig,
    FetchError,
    HostPolicy,
    PageFetcher,
    WebDocuments,
)
from search_o1.types import Hit
from search_o1.wiring import build_documents

FACT = "Giacomo Puccini composed Tosca, which premiered in Rome on 14 January 1900."
BOILER = "<nav><a href='/'>Home</a> | <a href='/news'>News</a> | Subscribe now!</nav>"
FILLER = " ".join(
    f"The opera house restored its {n}th balcony using traditional plaster methods."
    for n in range(4, 30)
)
ARTICLE = f"""<!doctype html><html><head><title>Tosca history</title>
<script>var tracking = "SCRIPT-NOISE";</script><style>.x{{color:red}}</style></head>
<body>{BOILER}<div class="ad">BUY CHEAP TICKETS NOW</div>
<article><h1>The history of Tosca</h1><p>{FILLER}</p><p>{FACT}</p><p>{FILLER}</p></article>
<footer>Copyright 2024 Opera News. All rights reserved. Cookie settings.</footer>
</body></html>"""


def _routes(srv_base: str) -> dict[str, Reply]:
    latin = "<html><body><p>Le caf\xe9 de Z\xfcrich \xe9tait c\xe9l\xe8bre pour son cr\xe8me br\xfbl\xe9e et ses g\xe2teaux.</p></body></html>"  # noqa: E501
    return {
        "/article": Reply(body=ARTICLE),
        "/doc.pdf": Reply(body=make_pdf(FACT), content_type="application/pdf"),
        "/plain.txt": Reply(body=FACT, content_type="text/plain"),
        "/r1": Reply(302, headers={"Location": "/r2"}),
        "/r2": Reply(301, headers={"Location": srv_base + "/article"}),
        "/loop": Reply(302, headers={"Location": "/loop"}),
        "/to-private": Reply(302, headers={"Location": "http://10.0.0.1/admin"}),
        "/to-metadata": Reply(302, headers={"Location": "http://169.254.169.254/latest"}),
        "/to-file": Reply(302, headers={"Location": "file:///etc/passwd"}),
        "/big": Reply(body=b"x" * 300_000, content_type="text/plain"),
        "/big-unsized": Reply(body=b"x" * 300_000, content_type="text/plain", length=False),
        "/slow": Reply(body=ARTICLE, delay_s=2.0),
        "/drip": Reply(body=ARTICLE, drip_s=0.05),
        "/latin1": Reply(
            body=latin.encode("latin-1"), content_type="text/html; charset=ISO-8859-1"
        ),
        "/meta-charset": Reply(
            body=('<html><head><meta charset="windows-1252"></head>' + latin[6:]).encode("cp1252"),
            content_type="text/html",
        ),
        "/image": Reply(body=b"\x89PNG\r\n\x1a\n....", content_type="image/png"),
        "/empty": Reply(body="<html><body><script>x()</script></body></html>"),
    }


@pytest.fixture
def site() -> WebServer:
    with web_server() as srv:
        srv.routes.update(_routes(srv.base))
        yield srv


def _fetcher(**kw: object) -> PageFetcher:
    cfg = FetchConfig(**{"read_timeout_s": 1.0, "total_timeout_s": 3.0, **kw})  # type: ignore[arg-type]
    return PageFetcher(cfg, HostPolicy(allow_private=True))


async def _fail_reason(fetcher: PageFetcher, url: str) -> str:
    with pytest.raises(FetchError) as e:
        await fetcher.fetch(url)
    return e.value.reason


async def test_article_main_text_without_boilerplate(site: WebServer) -> None:
    page = await _fetcher().fetch(site.url("/article"))
    assert FACT in page.text
    for noise in ("SCRIPT-NOISE", "BUY CHEAP TICKETS", "Cookie settings", "Subscribe now"):
        assert noise not in page.text
    assert site.requests[0].headers["user-agent"].startswith("search-o1/")


async def test_pdf_and_plain_text(site: WebServer) -> None:
    fetcher = _fetcher()
    assert FACT in (await fetcher.fetch(site.url("/doc.pdf"))).text
    assert (await fetcher.fetch(site.url("/plain.txt"))).text == FACT


async def test_redirect_chain(site: WebServer) -> None:
    page = await _fetcher().fetch(site.url("/r1"))
    assert FACT in page.text and page.url == site.url("/article")
    assert [r.path for r in site.requests] == ["/r1", "/r2", "/article"]


async def test_redirect_loop_is_bounded(site: WebServer) -> None:
    reason = await _fail_reason(_fetcher(max_redirects=3), site.url("/loop"))
    assert reason == "more than 3 redirects" and site.hits("/loop") == 4


async def test_private_hosts_blocked_without_opt_in(site: WebServer) -> None:
    reason = await _fail_reason(PageFetcher(), site.url("/article"))
    assert reason.startswith("blocked: private address 127.0.0.1")
    assert site.requests == []
    with pytest.raises(FetchError, match="blocked"):
        await PageFetcher().fetch("http://localhost:1/")  # resolved, then refused


@pytest.mark.parametrize("path", ["/to-private", "/to-metadata", "/to-file"])
async def test_redirect_to_private_address_is_refused(site: WebServer, path: str) -> None:
    # The test server stands in for a public site: only its own address:port is trusted.
    policy = HostPolicy(allowed=frozenset({f"127.0.0.1:{site.port}"}))
    fetcher = PageFetcher(FetchConfig(read_timeout_s=1.0), policy)
    reason = await _fail_reason(fetcher, site.url(path))
    assert reason.startswith("blocked:")  # refused before any connection was tried
    assert site.hits(path) == 1


async def test_dns_answers_are_checked_at_connect(site: WebServer) -> None:
    """A name that resolves to a private address is refused, also after a redirect."""
    names = {"news.example": ["127.0.0.1"], "intranet.example": ["10.1.2.3"]}

    async def resolver(host: str, port: int) -> list[str]:
        return names[host]

    trusted = frozenset({f"127.0.0.1:{site.port}"})
    fetcher = PageFetcher(FetchConfig(), HostPolicy(allowed=trusted, resolver=resolver))
    page = await fetcher.fetch(f"http://news.example:{site.port}/article")
    assert FACT in page.text
    assert site.requests[-1].headers["host"] == f"news.example:{site.port}"
    site.routes["/to-intranet"] = Reply(302, headers={"Location": "http://intranet.example/"})
    reason = await _fail_reason(fetcher, f"http://news.example:{site.port}/to-intranet")
    assert reason == "blocked: intranet.example resolves to private address 10.1.2.3"
    with web_server({"/": Reply(body="secret")}) as other:  # another loopback port
        site.routes["/to-other"] = Reply(302, headers={"Location": other.url("/")})
        reason = await _fail_reason(fetcher, site.url("/to-other"))
        assert reason.startswith("blocked:") and other.requests == []


@pytest.mark.parametrize("path", ["/big", "/big-unsized"])
async def test_byte_cap(site: WebServer, path: str) -> None:
    reason = await _fail_reason(_fetcher(max_bytes=100_000), site.url(path))
    assert reason.startswith("too large")


async def test_slow_server_times_out(site: WebServer) -> None:
    start = time.monotonic()
    assert await _fail_reason(_fetcher(read_timeout_s=0.15), site.url("/slow")) == "timeout"
    # A server dripping bytes never trips the read timeout; the total deadline stops it.
    reason = await _fail_reason(
        _fetcher(read_timeout_s=1.0, total_timeout_s=0.25), site.url("/drip")
    )
    assert reason == "timeout"
    assert time.monotonic() - start < 2.0


@pytest.mark.parametrize("path", ["/latin1", "/meta-charset"])
async def test_non_utf8_pages(site: WebServer, path: str) -> None:
    page = await _fetcher().fetch(site.url(path))
    assert "Le café de Zürich était célèbre pour son crème brûlée" in page.text


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/missing", "HTTP 404"),
        ("/image", "unsupported content type image/png"),
        ("/empty", "empty page"),
    ],
)
async def test_failures_have_reasons(site: WebServer, path: str, reason: str) -> None:
    assert await _fail_reason(_fetcher(), site.url(path)) == reason


async def test_connection_refused() -> None:
    with web_server() as srv:
        url = srv.url("/gone")
    assert (await _fail_reason(_fetcher(), url)).startswith("connection error")


# ---- the document step -------------------------------------------------------------


def _hit(url: str | None, snippet: str = "", text: str = "") -> Hit:
    return Hit(id=url or "c1", title="t", url=url, snippet=snippet, text=text)


async def test_documents_statuses(site: WebServer) -> None:
    settings = Settings(allow_private_hosts=True, cache="off", max_doc_chars=200)
    docs = build_documents(settings)
    corpus_text = "Lucca is a city in Tuscany. " * 20 + FACT + " Filler words here." * 20
    hits = [
        _hit(site.url("/article"), snippet="Tosca premiered in Rome on 14 January 1900"),
        _hit(site.url("/missing"), snippet="a snippet kept"),
        _hit(None, text=corpus_text),
    ]
    ok, failed, corpus = await docs.read("where was Tosca by Puccini premiered", hits)
    await docs.aclose()
    assert ok.status == "ok" and FACT in ok.text and len(ok.text) <= 2 * 200 + len(FACT) + 2
    assert (failed.status, failed.text) == ("failed: HTTP 404", "a snippet kept")
    assert corpus.status == "ok" and FACT in corpus.text and len(corpus.text) <= 200


async def test_no_fetch_keeps_snippets(site: WebServer) -> None:
    docs = build_documents(Settings(fetch=False, cache="off", allow_private_hosts=True))
    (doc,) = await docs.read("q", [_hit(site.url("/article"), snippet="snip")])
    assert (doc.status, doc.text) == ("snippet-only", "snip") and site.requests == []


async def test_blocked_by_default_in_documents(site: WebServer) -> None:
    docs = build_documents(Settings(cache="off"))
    (doc,) = await docs.read("q", [_hit(site.url("/article"), snippet="snip")])
    assert doc.status.startswith("failed: blocked") and doc.text == "snip"


async def test_concurrency_limits_and_single_flight() -> None:
    with web_server() as srv:
        for n in range(12):
            srv.routes[f"/p{n}"] = Reply(body=f"<p>{FACT} page {n}</p>", delay_s=0.1)
        fetcher = PageFetcher(
            FetchConfig(max_concurrency=8, per_host=3), HostPolicy(allow_private=True)
        )
        docs = WebDocuments(fetcher)
        hits = [_hit(srv.url(f"/p{n}")) for n in range(12)] + [_hit(srv.url("/p0"))]
        results = await docs.read("tosca", hits)
        await docs.aclose()
    assert all(d.status == "ok" for d in results)
    assert srv.hits("/p0") == 1  # the repeated URL was downloaded once
    assert srv.max_in_flight <= 3  # one host: the per-host limit holds
    assert srv.max_in_flight >= 2  # yet pages of that host were fetched in parallel


async def test_global_limit_across_hosts() -> None:
    with web_server() as a, web_server() as b:
        for srv in (a, b):
            for n in range(6):
                srv.routes[f"/p{n}"] = Reply(body=f"<p>{FACT}</p>", delay_s=0.08)
        fetcher = PageFetcher(
            FetchConfig(max_concurrency=4, per_host=4), HostPolicy(allow_private=True)
        )
        urls = [s.url(f"/p{n}") for s in (a, b) for n in range(6)]
        pages = await asyncio.gather(*(fetcher.fetch(u) for u in urls))
        await fetcher.aclose()
    assert len(pages) == 12
    assert a.max_in_flight + b.max_in_flight <= 8 and max(a.max_in_flight, b.max_in_flight) <= 4
