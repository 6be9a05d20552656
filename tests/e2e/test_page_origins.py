"""A real headless Chromium (Debian's, driven by Playwright) attacking `serve` and `view`
from elsewhere: a page on another origin, and a hostile name that resolves to this
machine (DNS rebinding, made with Chromium's own resolver rules). Both are refused; the
server's own page still works, and every response says how it may be used."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from tests.e2e.page_support import MARKS, chromium, fresh_page
from tests.serve_support import QUESTION, scripted_engine, write_run_dir

from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread
from search_o1.serve.view import create_view_app

EVIL = "evil.example"

pytestmark = MARKS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # DNS rebinding without DNS: the hostile name resolves to this machine.
    with chromium(f"--host-resolver-rules=MAP {EVIL} 127.0.0.1") as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with fresh_page(browser) as opened:
        yield opened


@pytest.fixture(scope="module")
def other_site() -> Iterator[str]:
    """A page on another origin (another port is another origin)."""

    async def blank(request: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>elsewhere</title><p>hello</p>")

    with serve_in_thread(Starlette(routes=[Route("/", blank)])) as url:
        yield url


# Sent from the other site's page: the kinds of request a page may send anywhere without
# asking first (no-cors), and one that needs a CORS preflight. Each reports what it saw.
ATTACK = """async ([url, body]) => {
  const out = {};
  const tries = {
    plain: {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body},
    form: {method: "POST", mode: "no-cors",
           headers: {"Content-Type": "application/x-www-form-urlencoded"}, body},
    json: {method: "POST", headers: {"Content-Type": "application/json"}, body},
    read: {method: "GET"},
  };
  for (const [name, init] of Object.entries(tries)) {
    const target = name === "read" ? url.replace("/v1/chat/completions", "/health") : url;
    try {
      const r = await fetch(target, init);
      out[name] = r.type === "opaque" ? "opaque" : "read " + r.status + " " + await r.text();
    } catch (e) {
      out[name] = "blocked";
    }
  }
  return out;
}"""


def test_a_page_on_another_origin_cannot_drive_serve(page: Any, other_site: str) -> None:
    engine, llm = scripted_engine()
    body = json.dumps({"model": "search-o1", "messages": [{"role": "user", "content": QUESTION}]})
    with serve_in_thread(create_app(engine)) as url:
        page.goto(other_site + "/")
        seen = page.evaluate(ATTACK, [url + "/v1/chat/completions", body])
        # The page learns nothing, and the model was never asked: no credits spent.
        assert not any(v.startswith("read") for v in seen.values()), seen
        assert llm.requests == []
        # The server's own page, on its own origin, still asks and answers.
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=serve]")
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        page.wait_for_selector("#answer:not([hidden])")
    assert llm.requests != []


def test_an_allowed_origin_may_call_serve(page: Any, other_site: str) -> None:
    engine, llm = scripted_engine()
    body = json.dumps({"model": "search-o1", "messages": [{"role": "user", "content": QUESTION}]})
    with serve_in_thread(create_app(engine, cors_origins=[other_site])) as url:
        page.goto(other_site + "/")
        seen = page.evaluate(ATTACK, [url + "/v1/chat/completions", body])
    assert seen["json"].startswith("read 200"), seen
    assert seen["read"].startswith("read 200"), seen
    assert llm.requests != []


def test_a_foreign_host_is_refused_by_serve_and_view(page: Any, tmp_path: Path) -> None:
    engine, llm = scripted_engine()
    run_dir = write_run_dir(tmp_path / "run")
    apps = {"serve": create_app(engine), "view": create_view_app(run_dir)}
    for name, app in apps.items():
        with serve_in_thread(app) as url:
            port = url.rsplit(":", 1)[1]
            rebound = f"http://{EVIL}:{port}"
            response = page.goto(rebound + "/")
            assert response.status == 421, name
            assert "does not answer to Host" in page.inner_text("body")
            for path in ("/health", "/api/run", "/api/run/items/0", "/api/mode"):
                status = page.evaluate("async (u) => (await fetch(u)).status", rebound + path)
                assert status == 421, (name, path)
            own = page.goto(url + "/")
            assert own.status == 200
            headers = own.headers
            assert "frame-ancestors 'none'" in headers["content-security-policy"]
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["x-frame-options"] == "DENY"
    assert llm.requests == []


FRAME = """(u) => new Promise((done) => {
  const frame = document.createElement("iframe");
  frame.onload = () => done();
  frame.src = u;
  document.body.append(frame);
})"""


def test_another_site_cannot_frame_the_page(page: Any, other_site: str, tmp_path: Path) -> None:
    with serve_in_thread(create_view_app(write_run_dir(tmp_path / "run"))) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=view]")  # it loads on its own
        page.goto(other_site + "/")
        page.evaluate(FRAME, url + "/")
        framed = page.frames[1]
        assert framed.query_selector("#item-count") is None
        assert not framed.url.startswith(url)


# A browser MCP client on another origin: initialize, read the session id back, list the
# tools in that session, end it. Each step needs what the CORS preflight allows.
MCP_SESSION = """async (url) => {
  const base = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Mcp-Protocol-Version": "2025-06-18"};
  const rpc = (id, method, params) => JSON.stringify({jsonrpc: "2.0", id, method, params});
  const init = await fetch(url, {method: "POST", headers: base, body: rpc(1, "initialize", {
    protocolVersion: "2025-06-18", capabilities: {},
    clientInfo: {name: "page", version: "0"}})});
  const session = init.headers.get("Mcp-Session-Id");
  await init.text();
  const headers = {...base, "Mcp-Session-Id": session};
  await fetch(url, {method: "POST", headers,
    body: JSON.stringify({jsonrpc: "2.0", method: "notifications/initialized"})});
  const listed = await fetch(url, {method: "POST", headers, body: rpc(2, "tools/list", {})});
  const text = await listed.text();
  const ended = await fetch(url, {method: "DELETE", headers});
  return {init: init.status, session, listed: listed.status, text, ended: ended.status};
}"""


def test_an_allowed_origin_may_hold_an_mcp_session(page: Any, other_site: str) -> None:
    engine, _ = scripted_engine()
    with serve_in_thread(create_app(engine, cors_origins=[other_site])) as url:
        page.goto(other_site + "/")
        seen = page.evaluate(MCP_SESSION, url + "/mcp")
    assert seen["init"] == 200 and seen["session"], seen
    assert seen["listed"] == 200 and '"name":"ask"' in seen["text"].replace(" ", ""), seen
    assert seen["ended"] == 200, seen
