"""Each web search provider against a local server speaking its documented wire format."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from tests.serve_support import scripted_engine
from tests.servers.web import Reply, Request, web_server
from tests.wire import Wire

from search_o1._http import RetryPolicy
from search_o1.config import Settings
from search_o1.errors import BackendError, ConfigError
from search_o1.search.bing import BingSearch
from search_o1.search.brave import BraveSearch
from search_o1.search.http import HTTPSearch
from search_o1.search.retriever import RetrieverSearch
from search_o1.search.searxng import SearxngSearch
from search_o1.search.serper import SerperSearch
from search_o1.search.tavily import TavilySearch
from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread
from search_o1.types import Hit
from search_o1.wiring import searches

KEY = "sekret-KEY-123"
RESULTS = [
    ("Tosca - Wikipedia", "https://en.wikipedia.org/wiki/Tosca", "Tosca is an opera by Puccini."),
    ("Puccini", "https://example.org/puccini", "Giacomo Puccini was born in <b>Lucca</b>."),
]


@dataclass
class Provider:
    cls: type[HTTPSearch]
    env: str | None
    path: str
    method: str
    check: Callable[[Request, str, int], None]  # asserts on the request
    respond: Callable[[list[tuple[str, str, str]]], Any]  # results -> provider JSON


def _serper_check(r: Request, q: str, k: int) -> None:
    assert r.headers["x-api-key"] == KEY
    assert r.json() == {"q": q, "num": k, "gl": "us", "hl": "en"}


def _brave_check(r: Request, q: str, k: int) -> None:
    assert r.headers["x-subscription-token"] == KEY
    assert r.query == {"q": q, "count": str(k)}


def _tavily_check(r: Request, q: str, k: int) -> None:
    assert r.headers["authorization"] == f"Bearer {KEY}"
    body = r.json()
    assert body["query"] == q and body["max_results"] == k


def _bing_check(r: Request, q: str, k: int) -> None:
    assert r.headers["ocp-apim-subscription-key"] == KEY
    assert r.query["q"] == q and r.query["count"] == str(k) and r.query["mkt"] == "en-US"


def _searxng_check(r: Request, q: str, k: int) -> None:
    assert r.query["q"] == q and r.query["format"] == "json"


def _retriever_check(r: Request, q: str, k: int) -> None:
    assert r.json() == {"queries": [q], "topk": k, "return_scores": True}


PROVIDERS = {
    "serper": Provider(
        SerperSearch,
        "SERPER_API_KEY",
        "/search",
        "POST",
        _serper_check,
        lambda rs: {
            "organic": [
                {"title": t, "link": u, "snippet": s, "position": i + 1, "date": "Jan 1, 2024"}
                for i, (t, u, s) in enumerate(rs)
            ]
        },
    ),
    "brave": Provider(
        BraveSearch,
        "BRAVE_API_KEY",
        "/res/v1/web/search",
        "GET",
        _brave_check,
        lambda rs: {
            "type": "search",
            "web": {
                "results": [
                    {"title": t, "url": u, "description": s, "page_age": "2024-01-01T00:00:00"}
                    for t, u, s in rs
                ]
            },
        },
    ),
    "tavily": Provider(
        TavilySearch,
        "TAVILY_API_KEY",
        "/search",
        "POST",
        _tavily_check,
        lambda rs: {
            "query": "q",
            "results": [
                {"title": t, "url": u, "content": s, "score": 0.9 - i / 10}
                for i, (t, u, s) in enumerate(rs)
            ],
        },
    ),
    "bing": Provider(
        BingSearch,
        "BING_API_KEY",
        "/v7.0/search",
        "GET",
        _bing_check,
        lambda rs: (
            {
                "_type": "SearchResponse",
                "webPages": {
                    "value": [
                        {
                            "name": t,
                            "url": u,
                            "snippet": s,
                            "datePublished": "2024-01-01T00:00:00.0000000Z",
                        }
                        for t, u, s in rs
                    ]
                },
            }
            if rs
            else {"_type": "SearchResponse"}
        ),
    ),
    "searxng": Provider(
        SearxngSearch,
        None,
        "/search",
        "GET",
        _searxng_check,
        lambda rs: {
            "query": "q",
            "results": [
                {"title": t, "url": u, "content": s, "engine": "x", "score": 1.0} for t, u, s in rs
            ],
        },
    ),
    "retriever": Provider(
        RetrieverSearch,
        None,
        "/retrieve",
        "POST",
        _retriever_check,
        lambda rs: {
            "result": [
                [
                    {"document": {"id": str(i), "contents": f'"{t}"\n{s}'}, "score": 10.0 - i}
                    for i, (t, u, s) in enumerate(rs)
                ]
            ]
        },
    ),
}


def _backend(name: str, server_base: str, **kw: Any) -> HTTPSearch:
    p = PROVIDERS[name]
    kw.setdefault("retry", RetryPolicy(retries=kw.pop("retries", 2), backoff_s=0.01))
    kw.setdefault("rate_per_s", 0)  # no spacing in tests
    return p.cls(endpoint=server_base + p.path, api_key=KEY if p.env else None, **kw)


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_request_and_response_fields(provider: str) -> None:
    p = PROVIDERS[provider]
    with web_server({p.path: Reply(body=p.respond(RESULTS))}) as srv:
        backend = _backend(provider, srv.base)
        hits = await backend.search("who wrote tosca", k=7)
        await backend.aclose()
    (req,) = srv.requests
    assert req.method == p.method
    p.check(req, "who wrote tosca", 7)
    assert [h.title for h in hits] == ["Tosca - Wikipedia", "Puccini"]
    assert all(h.source == provider for h in hits)
    if provider == "retriever":
        assert hits[0] == Hit(
            id="0", title=RESULTS[0][0], text=RESULTS[0][2], score=10.0, source="retriever"
        )
        return
    assert [h.url for h in hits] == [u for _, u, _ in RESULTS]
    assert hits[0].id == hits[0].url
    assert hits[1].snippet == "Giacomo Puccini was born in Lucca."  # tags stripped
    if provider in ("serper", "brave", "bing"):
        assert hits[0].date


async def test_results_are_cut_to_k(provider: str) -> None:
    p = PROVIDERS[provider]
    with web_server({p.path: Reply(body=p.respond(RESULTS * 3))}) as srv:
        hits = await _backend(provider, srv.base).search("q", k=2)
    assert len(hits) == 2


async def test_empty_results(provider: str) -> None:
    p = PROVIDERS[provider]
    with web_server({p.path: Reply(body=p.respond([]))}) as srv:
        assert await _backend(provider, srv.base).search("nothing", k=5) == []


async def test_401_is_clear_and_not_retried(provider: str) -> None:
    p = PROVIDERS[provider]
    with (
        web_server({p.path: Reply(401, {"message": "invalid key"})}) as srv,
        pytest.raises(BackendError) as e,
    ):
        await _backend(provider, srv.base).search("q", k=3)
    assert e.value.status == 401 and not e.value.retryable
    assert "not authorised" in str(e.value)
    if p.env:
        assert p.env in str(e.value) and KEY not in str(e.value)
    assert len(srv.requests) == 1


def _wired(name: str, wire: Wire, **policy: Any) -> HTTPSearch:
    """A provider answering from `wire` (no server, no real waits)."""
    p = PROVIDERS[name]
    return p.cls(
        endpoint="http://search.test" + p.path,
        api_key=KEY if p.env else None,
        rate_per_s=0,
        transport=wire.transport,
        retry=wire.policy(**policy),
    )


async def test_429_honours_retry_after(provider: str) -> None:
    p = PROVIDERS[provider]
    wire = Wire(
        [
            httpx.Response(429, text="slow down", headers={"Retry-After": "1"}),
            httpx.Response(200, json=p.respond(RESULTS)),
        ]
    )
    # A long back-off: had Retry-After been ignored the wait would be 2.5 s or more.
    hits = await _wired(provider, wire, retries=2, backoff_s=5.0).search("q", k=3)
    assert len(hits) == 2 and len(wire.requests) == 2
    assert len(wire.sleeps) == 1 and 0.9 <= wire.sleeps[0] < 2.5


async def test_persistent_500_raises_after_retries(provider: str) -> None:
    p = PROVIDERS[provider]
    wire = Wire([httpx.Response(500, text=f"upstream broke (key={KEY})")])
    with pytest.raises(BackendError) as e:
        await _wired(provider, wire, retries=2).search("q", k=3)
    assert e.value.status == 500 and e.value.retryable
    assert len(wire.requests) == 3 and len(wire.sleeps) == 2
    if p.env:
        assert KEY not in str(e.value)  # an echoed key is scrubbed


async def test_a_dripping_search_api_fails_at_its_deadline() -> None:
    """Headers at once, then one byte at a time: the read timeout never trips; the
    deadline does, and the failure is not retried (it would drip again)."""
    p = PROVIDERS["serper"]
    with web_server({p.path: Reply(body=p.respond(RESULTS), drip_s=0.05)}) as srv:
        backend = _backend("serper", srv.base, deadline_s=0.3)
        with pytest.raises(BackendError, match=r"no complete answer within 0\.3 s") as e:
            await backend.search("q", k=3)
        await backend.aclose()
    assert not e.value.retryable and len(srv.requests) == 1


@pytest.mark.parametrize("length", [True, False], ids=["declared", "undeclared"])
async def test_an_oversized_search_body_is_refused(length: bool) -> None:
    """The cap holds whether or not the server declares the size (pages are capped too)."""
    p = PROVIDERS["serper"]
    big = p.respond(RESULTS * 200)
    with web_server({p.path: Reply(body=big, length=length)}) as srv:
        backend = _backend("serper", srv.base, max_bytes=10_000)
        with pytest.raises(BackendError, match="response over 10000 bytes"):
            await backend.search("q", k=3)
        await backend.aclose()


async def test_malformed_json(provider: str) -> None:
    p = PROVIDERS[provider]
    with (
        web_server({p.path: Reply(body="{not json", content_type="application/json")}) as srv,
        pytest.raises(BackendError, match="malformed JSON"),
    ):
        await _backend(provider, srv.base).search("q", k=3)


async def test_wrong_shape_is_a_typed_error(provider: str) -> None:
    p = PROVIDERS[provider]
    bad: Any = (
        {"result": "nope"}
        if provider == "retriever"
        else {
            "organic": [{"title": "no link"}],
            "web": {"results": [{"x": 1}]},
            "results": [{"title": "no url"}],
            "webPages": {"value": [{"name": "n"}]},
        }
    )
    with (
        web_server({p.path: Reply(body=bad)}) as srv,
        pytest.raises(BackendError, match="unexpected response shape"),
    ):
        await _backend(provider, srv.base).search("q", k=3)


async def test_unreachable_endpoint_names_it() -> None:
    with web_server() as srv:
        base = srv.base
    backend = _backend("serper", base, retries=0)
    with pytest.raises(BackendError) as e:
        await backend.search("q", k=3)
    assert e.value.retryable and base in str(e.value)


@pytest.mark.parametrize("name", [n for n, p in PROVIDERS.items() if p.env])
def test_missing_key_names_the_variable(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = PROVIDERS[name].env
    assert env is not None
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ConfigError, match=env):
        getattr(searches, name)(Settings(search=[name]))


def test_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    backend = searches.brave(Settings(search=["brave"]))
    assert backend.endpoint == BraveSearch.default_endpoint
    assert KEY not in repr(backend.cache_identity())


@pytest.mark.parametrize("name", ["searxng", "retriever"])
def test_self_hosted_backends_need_an_endpoint(name: str) -> None:
    with pytest.raises(ConfigError, match="--search-endpoint"):
        getattr(searches, name)(Settings(search=[name]))


async def test_searxng_accepts_instance_root() -> None:
    p = PROVIDERS["searxng"]
    with web_server({"/search": Reply(body=p.respond(RESULTS))}) as srv:
        backend = SearxngSearch(endpoint=srv.base + "/", rate_per_s=0)
        assert len(await backend.search("q", k=5)) == 2


async def test_rate_limit_spaces_requests() -> None:
    p = PROVIDERS["serper"]
    with web_server({p.path: Reply(body=p.respond(RESULTS))}) as srv:
        backend = _backend("serper", srv.base, rate_per_s=20)
        start = time.monotonic()
        for _ in range(5):
            await backend.search("q", k=2)
        elapsed = time.monotonic() - start
    assert elapsed >= 4 / 20 - 0.01


def test_cache_identity_keeps_no_secret_from_the_endpoint() -> None:
    endpoint = "https://user:pw@proxy.example/search?token=zzsecret"
    backend = SerperSearch(endpoint=endpoint, api_key=KEY)
    identity = repr(backend.cache_identity())
    assert "proxy.example/search?sha256=" in identity
    for secret in ("pw", "zzsecret", KEY):
        assert secret not in identity


async def test_retriever_key_reaches_a_protected_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    """`search-o1 serve --auth-key-env` guards /retrieve; $RETRIEVER_API_KEY opens it."""
    engine, _ = scripted_engine()
    with serve_in_thread(create_app(engine, api_key=KEY)) as url:
        settings = Settings(search=["retriever"], search_endpoint=url + "/retrieve", retries=0)
        monkeypatch.delenv("RETRIEVER_API_KEY", raising=False)
        anonymous = searches.retriever(settings)  # optional: no key, no error
        with pytest.raises(BackendError) as e:
            await anonymous.search("Tosca", k=2)
        await anonymous.aclose()
        assert e.value.status == 401 and "check $RETRIEVER_API_KEY" in str(e.value)
        monkeypatch.setenv("RETRIEVER_API_KEY", KEY)
        keyed = searches.retriever(settings)
        hits = await keyed.search("Tosca", k=2)
        await keyed.aclose()
    assert [(h.id, h.title) for h in hits] == [("w1", "Tosca"), ("w2", "Giacomo Puccini")]
    assert KEY not in repr(keyed.cache_identity())


async def test_retriever_sends_the_key_as_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    p = PROVIDERS["retriever"]
    monkeypatch.setenv("RETRIEVER_API_KEY", KEY)
    with web_server({p.path: Reply(body={"result": [[]]})}) as srv:
        backend = RetrieverSearch(endpoint=srv.url(p.path), rate_per_s=0)
        assert await backend.search("q", k=3) == []
        await backend.aclose()
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"
