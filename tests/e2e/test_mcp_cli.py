"""MCP both ways, as users run it.

- `search-o1 mcp` started by the official SDK's stdio client, over a loopback model
  server scripted as the two-hop reasoner and a JSONL corpus: ask (with progress),
  search, retrieve, typed results; and a cancelled ask whose model request stops.
- `search-o1 ask --search mcp`: an MCP search server written with the SDK (in
  tests/servers) as the search backend, over stdio and over HTTP, live and then
  replayed from the cache without the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tests.e2e.ask_support import model_flags
from tests.servers import mcp_search_server
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.two_hop import ANSWER, QUERIES, QUESTION, respond_body, write_corpus

from search_o1.mcp.models import AskResult, RetrieveResult, SearchResult
from search_o1.serve.background import serve_in_thread

EXE = Path(sys.executable).with_name("search-o1")
SEARCH_SERVER = Path(mcp_search_server.__file__)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with openai_server(respond_body, return_stop=False) as srv:
        yield srv


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path)


def child_env(tmp_path: Path) -> dict[str, str]:
    """What the stdio child needs beyond the SDK's safe default environment."""
    env = {"SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
    if "PYTHONPATH" in os.environ:  # a source checkout run without installing
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def mcp_params(model: FakeOpenAIServer, corpus: Path, tmp_path: Path) -> StdioServerParameters:
    args = ["mcp", *model_flags(model.url, corpus)]
    return StdioServerParameters(
        command=str(EXE), args=args, env=child_env(tmp_path), cwd=str(tmp_path)
    )


def test_stdio_ask_search_retrieve(model: FakeOpenAIServer, corpus: Path, tmp_path: Path) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async def session() -> tuple[Any, Any, Any, set[str], Any]:
        async with Client(mcp_params(model, corpus, tmp_path)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            ask = await client.call_tool(
                "ask", {"question": QUESTION}, progress_callback=on_progress
            )
            search = await client.call_tool("search", {"query": QUERIES[0]})
            retrieve = await client.call_tool("retrieve", {"query": "Kelp forests", "k": 1})
            blank = await client.call_tool("ask", {"question": " "})
            return ask, search, retrieve, names, blank

    ask, search, retrieve, names, blank = anyio.run(session)
    # A refusal is a tool error that says why, over stdio as over HTTP.
    assert blank.is_error and blank.content[0].text.endswith("the question is empty")
    assert names == {"ask", "search", "retrieve"}
    answer = AskResult.model_validate(ask.structured_content)
    assert answer.answer == ANSWER
    assert [(s.id, s.title) for s in answer.sources] == [
        ("b1", "Glimmer Bridge"),
        ("p1", "Orla Venn"),
    ]
    assert [s.query for s in answer.searches] == QUERIES
    assert [m for _, m in progress] == [
        f"searching: {QUERIES[0]}",
        f"searched: {QUERIES[0]} (2 hits)",
        f"searching: {QUERIES[1]}",
        f"searched: {QUERIES[1]} (2 hits)",
    ]
    facts = SearchResult.model_validate(search.structured_content)
    assert facts.facts == "The Glimmer Bridge was designed by Orla Venn. [1]"
    assert [s.id for s in facts.sources] == ["b1"]
    assert RetrieveResult.model_validate(retrieve.structured_content).hits[0].id == "x2"
    # The model server saw the reader's requests too: the whole pipeline ran.
    assert (
        sum(
            "**Current search query**" in (b.get("prompt") or "") for b in model.completion_requests
        )
        == 3
    )


def test_stdio_cancelled_ask_stops_its_model_request(corpus: Path, tmp_path: Path) -> None:
    release = threading.Event()
    arrived = threading.Event()

    def held(body: dict[str, Any]) -> str:
        arrived.set()
        release.wait(30)  # the first request hangs until the test lets go
        return respond_body(body)

    with openai_server(held, return_stop=False) as model:

        async def ask_then_cancel() -> None:
            async with Client(mcp_params(model, corpus, tmp_path)) as client:
                async with anyio.create_task_group() as tg:

                    async def ask() -> None:
                        await client.call_tool("ask", {"question": QUESTION})

                    tg.start_soon(ask)
                    await anyio.to_thread.run_sync(arrived.wait)
                    tg.cancel_scope.cancel()
                # Answered after the cancellation was handled: the server is still ours.
                await client.call_tool("retrieve", {"query": "Kelp", "k": 1})
                sent = len(model.completion_requests)
                release.set()  # the hung request now ends on the server's side
                # A request sent after this would come from the cancelled chain.
                await client.call_tool("retrieve", {"query": "Kelp", "k": 1})
                assert len(model.completion_requests) == sent == 1

        anyio.run(ask_then_cancel)


# ---------------------------------------------------------------- --search mcp


def ask_run(
    model: FakeOpenAIServer, tmp_path: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`search-o1 ask QUESTION --json --search mcp FLAGS` over the loopback model."""
    return subprocess.run(
        [
            str(EXE),
            "ask",
            QUESTION,
            "--json",
            *model_flags(model.url),
            "--search",
            "mcp",
            "--no-fetch",
            "--cache-path",
            str(tmp_path / "cache.sqlite"),
            *flags,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx"), **(env or {})},
        cwd=tmp_path,
        timeout=120,
    )


def ask_cli(
    model: FakeOpenAIServer, tmp_path: Path, *flags: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    out = ask_run(model, tmp_path, *flags, env=env)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def hit_ids(result: dict[str, Any]) -> list[list[str]]:
    return [[h["id"] for h in s["hits"]] for s in result["searches"]]


def test_search_mcp_over_stdio_live_then_replayed(
    model: FakeOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    server = f"{sys.executable} {SEARCH_SERVER} {corpus} --log {log}"
    live = ask_cli(model, tmp_path, "--mcp-server", server)  # three tools: `search` is used
    assert live["answer"] == ANSWER
    assert [s["query"] for s in live["searches"]] == QUERIES
    assert hit_ids(live) == [["b1"], ["b1", "p1"]]
    assert live["searches"][0]["hits"][0]["url"] == "https://corpus.test/b1"
    assert log.read_text().splitlines() == QUERIES
    replayed = ask_cli(model, tmp_path, "--mcp-server", server, "--cache", "replay")
    assert hit_ids(replayed) == hit_ids(live) and replayed["answer"] == ANSWER
    assert log.read_text().splitlines() == QUERIES  # the server was not called again


def test_search_mcp_resource_links_and_plain_text(
    model: FakeOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    server = f"{sys.executable} {SEARCH_SERVER} {corpus}"
    links = ask_cli(model, tmp_path, "--mcp-server", server, "--mcp-tool", "links")
    assert hit_ids(links)[0] == ["https://corpus.test/b1"]
    assert links["searches"][0]["hits"][0]["title"] == "Glimmer Bridge"
    plain = ask_cli(model, tmp_path, "--mcp-server", server, "--mcp-tool", "plain")
    assert plain["answer"] == ANSWER  # the text blocks were read as documents
    assert plain["searches"][0]["hits"][0]["title"] == "Glimmer Bridge"


def test_search_mcp_listing_in_one_text_block(
    model: FakeOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    server = f"{sys.executable} {SEARCH_SERVER} {corpus}"
    listed = ask_cli(model, tmp_path, "--mcp-server", server, "--mcp-tool", "listing")
    # One hit per listed result, each with its URL, not one hit holding the whole list.
    assert hit_ids(listed) == [
        ["https://corpus.test/b1"],
        ["https://corpus.test/b1", "https://corpus.test/p1"],
    ]
    assert listed["answer"] == ANSWER
    assert [s["url"] for s in listed["sources"]] == [
        "https://corpus.test/b1",
        "https://corpus.test/p1",
    ]


def test_search_mcp_over_http(model: FakeOpenAIServer, corpus: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    with serve_in_thread(mcp_search_server.http_app(corpus, log)) as url:
        result = ask_cli(model, tmp_path, "--mcp-server", url + "/mcp", "--mcp-tool", "search")
    assert result["answer"] == ANSWER and hit_ids(result) == [["b1"], ["b1", "p1"]]
    assert log.read_text().splitlines() == QUERIES


def test_search_mcp_over_http_with_a_key(
    model: FakeOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    flags = ("--mcp-tool", "search", "--mcp-key-env", "SEARCH_TOKEN")
    with serve_in_thread(mcp_search_server.http_app(corpus, log, key="s3cret")) as url:
        target = ("--mcp-server", url + "/mcp", *flags)
        result = ask_cli(model, tmp_path, *target, env={"SEARCH_TOKEN": "s3cret"})
        assert result["answer"] == ANSWER and hit_ids(result) == [["b1"], ["b1", "p1"]]
        # Not from the cache: the token is not part of what a search is cached under.
        uncached = (*target, "--cache", "off")
        wrong = ask_run(model, tmp_path, *uncached, env={"SEARCH_TOKEN": "nope"})
        unset = ask_run(model, tmp_path, "--mcp-server", url + "/mcp", "--cache", "off")
        unset_env = ask_run(model, tmp_path, *uncached)
    assert log.read_text().splitlines() == QUERIES  # only the keyed run reached the tool
    for run, hint in ((wrong, "check the token"), (unset, "pass its token with --mcp-key-env")):
        assert run.returncode == 0, run.stderr  # a failed search is told to the model
        steps = json.loads(run.stdout)["trace"]["steps"]
        errors = [step["search"]["error"] for step in steps if step["search"]]
        assert errors and all(f"(HTTP 401: {hint})" in e for e in errors), errors
    assert unset_env.returncode == 2
    assert "--mcp-key-env names SEARCH_TOKEN, which is not set" in unset_env.stderr
