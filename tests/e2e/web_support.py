"""What the web-search `ask` tests share: a loopback site that speaks each provider's
result format and serves the pages, the `ask` arguments for it, and the check of the
answer (the facts are only in the pages, so a right answer means they were read)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.servers.openai_server import FakeOpenAIServer
from tests.servers.web import Reply, Request, WebServer

QUESTION = "Where was the designer of the Glimmer Bridge born?"
PAGES = {
    "/bridge": (
        "Glimmer Bridge",
        "The Glimmer Bridge spans the river",
        "The Glimmer Bridge, which spans the river Tess, was designed by Orla Venn.",
    ),
    "/venn": (
        "Orla Venn",
        "Orla Venn, architect and engineer",
        "Orla Venn was born in Tessaly in 1931 and studied in the capital.",
    ),
    "/kelp": ("Kelp", "Kelp forests", "Kelp forests grow in cold coastal waters."),
}
ANSWERS = {"glimmer bridge designer": ["/bridge", "/kelp"], "orla venn birthplace": ["/venn"]}


def query_of(req: Request) -> str:
    if req.method == "GET":
        return req.query["q"]
    body = req.json()
    return str(body.get("q") or body.get("query"))


Format = Callable[[list[tuple[str, str, str]]], Any]  # [(title, url, snippet)] -> JSON
FORMATS: dict[str, tuple[str, Format]] = {
    "serper": (
        "/search",
        lambda rs: {"organic": [{"title": t, "link": u, "snippet": s} for t, u, s in rs]},
    ),
    "brave": (
        "/res/v1/web/search",
        lambda rs: {
            "web": {"results": [{"title": t, "url": u, "description": s} for t, u, s in rs]}
        },
    ),
    "tavily": (
        "/search",
        lambda rs: {
            "results": [{"title": t, "url": u, "content": s, "score": 0.5} for t, u, s in rs]
        },
    ),
    "bing": (
        "/v7.0/search",
        lambda rs: {"webPages": {"value": [{"name": t, "url": u, "snippet": s} for t, u, s in rs]}},
    ),
    "searxng": (
        "/search",
        lambda rs: {"results": [{"title": t, "url": u, "content": s} for t, u, s in rs]},
    ),
}


def site_for(provider: str) -> WebServer:
    path, fmt = FORMATS[provider]
    srv = WebServer({})

    def search(req: Request) -> Reply:
        paths = ANSWERS.get(query_of(req).lower(), [])
        return Reply(body=fmt([(PAGES[p][0], srv.url(p), PAGES[p][1]) for p in paths]))

    srv.routes[path] = search
    for p, (title, _, text) in PAGES.items():
        srv.routes[p] = Reply(body=f"<html><title>{title}</title><body><p>{text}</p></body></html>")
    return srv


def ask_args(model: FakeOpenAIServer, endpoint: str, provider: str, cache: Path) -> list[str]:
    return [
        "ask",
        QUESTION,
        "--json",
        "--base-url",
        model.url,
        "--model",
        "m",
        "--reader-model",
        "reader",
        "--chat-template",
        "chatml",
        "--task",
        "multihop",
        "--search",
        provider,
        "--search-endpoint",
        endpoint,
        "--allow-private-hosts",
        "--cache-path",
        str(cache),
    ]


def check_answer(result: dict[str, Any], site: WebServer) -> None:
    assert result["answer"] == "Tessaly", result
    searches = result["searches"]
    assert [s["query"] for s in searches] == ["Glimmer Bridge designer", "Orla Venn birthplace"]
    assert searches[0]["hits"][0]["url"] == site.url("/bridge")
    assert all(d["status"] == "ok" for s in searches for d in s["documents"])
