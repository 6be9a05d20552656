"""`/mcp` on `search-o1 serve`, driven by the official MCP SDK's client over real HTTP.

The engine is the scripted two-hop reasoner over a local BM25 corpus: the answers,
searches and sources are known. One test cancels an `ask` mid-chain and checks that its
model request was cancelled and no other was sent.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.two_hop import ANSWER, QUERIES, QUESTION, respond_prompt, two_hop_engine
from tests.waiting import wait_until

from search_o1.errors import BackendError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.scripted import ScriptedLLM
from search_o1.mcp.models import AskResult, RetrieveResult, SearchResult
from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread
from search_o1.types import Completion, TextSink

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def served() -> Iterator[str]:
    with serve_in_thread(create_app(two_hop_engine())) as url:
        yield url + "/mcp"


def run(coro: Any) -> Any:
    return anyio.run(lambda: coro)


async def _tools_and_ask(url: str) -> tuple[Any, Any, list[tuple[float, str | None]]]:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async with Client(url) as client:
        listed = await client.list_tools()
        result = await client.call_tool(
            "ask", {"question": QUESTION}, progress_callback=on_progress
        )
    return listed, result, progress


def test_tools_have_typed_input_and_output_schemas(served: str) -> None:
    listed, _, _ = asyncio.run(_tools_and_ask(served))
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"ask", "search", "retrieve"}
    ask = tools["ask"]
    assert ask.input_schema["required"] == ["question"]
    assert {"method", "task", "max_searches", "max_turns", "max_total_tokens"} <= set(
        ask.input_schema["properties"]
    )
    assert ask.output_schema is not None
    assert {"answer", "sources", "searches", "finish_reason"} <= set(ask.output_schema["required"])
    assert tools["retrieve"].input_schema["properties"]["k"]["maximum"] == 100
    assert tools["search"].output_schema is not None
    assert "facts" in tools["search"].output_schema["properties"]


def test_ask_answers_with_both_hops_as_sources_and_reports_progress(served: str) -> None:
    _, result, progress = asyncio.run(_tools_and_ask(served))
    assert not result.is_error
    answer = AskResult.model_validate(result.structured_content)
    assert answer.answer == ANSWER and answer.finish_reason == "answered"
    assert [s.query for s in answer.searches] == QUERIES
    assert [(s.n, s.id) for s in answer.sources] == [(1, "b1"), (2, "p1")]
    assert answer.sources[0].quote == "The Glimmer Bridge was designed by Orla Venn."
    assert answer.sources[1].quote == "Orla Venn was born in Tessaly in 1931."
    # Two notifications per search (started, finished), in order, increasing.
    assert [done for done, _ in progress] == [1, 2, 3, 4]
    assert progress[0][1] == f"searching: {QUERIES[0]}"
    assert progress[3][1] is not None and progress[3][1].startswith(f"searched: {QUERIES[1]}")


def test_search_returns_the_facts_and_their_source(served: str) -> None:
    async def call() -> Any:
        async with Client(served) as client:
            return await client.call_tool("search", {"query": QUERIES[1]})

    result = SearchResult.model_validate(asyncio.run(call()).structured_content)
    assert result.found and "born in Tessaly" in result.facts
    assert [(s.n, s.id, s.title) for s in result.sources] == [(1, "p1", "Orla Venn")]


def test_retrieve_returns_raw_hits(served: str) -> None:
    async def call() -> Any:
        async with Client(served) as client:
            return await client.call_tool("retrieve", {"query": "Orla Venn born", "k": 2})

    result = RetrieveResult.model_validate(asyncio.run(call()).structured_content)
    assert [h.id for h in result.hits] == ["p1", "b1"]
    assert result.hits[0].text.startswith("Orla Venn is an engineer.")
    assert result.hits[0].score is not None and result.hits[0].score > 0


def test_bad_arguments_are_a_tool_error_not_a_crash(served: str) -> None:
    async def call() -> Any:
        async with Client(served) as client:
            return await client.call_tool("ask", {"question": QUESTION, "method": "nope"})

    result = asyncio.run(call())
    assert result.is_error
    assert "unknown method 'nope'" in result.content[0].text


def test_mcp_needs_the_key_when_the_server_has_one() -> None:
    app = create_app(two_hop_engine(), api_key="sekret")

    async def call(key: str | None) -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(url + "/mcp", http_client=http)
            async with Client(transport) as client:
                return await client.call_tool("retrieve", {"query": "Orla Venn", "k": 1})

    with serve_in_thread(app) as url:
        ok = asyncio.run(call("sekret"))
        assert RetrieveResult.model_validate(ok.structured_content).hits[0].id == "p1"
        raw = httpx2.post(url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert raw.status_code == 401
        with pytest.raises(BaseException) as refused:
            asyncio.run(call("wrong"))
        # The SDK's client says no more than this; the raw request above shows the 401.
        assert "error response" in " ".join(str(e) for e in leaves(refused.value))


def leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in leaves(inner)]
    return [e]


class HeldLLM(ScriptedLLM):
    """The two-hop model, holding its first request until it is cancelled."""

    def __init__(self) -> None:
        super().__init__(respond_prompt)
        self.started = 0
        self.cancelled = 0
        self.first_started = threading.Event()

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        self.started += 1
        if self.started == 1:
            self.first_started.set()
            try:
                await asyncio.Event().wait()  # only cancellation ends it
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return await super().complete(request, on_text=on_text)


def test_a_cancelled_ask_stops_its_model_request() -> None:
    llm = HeldLLM()
    app = create_app(two_hop_engine(llm))

    async def ask_then_cancel(url: str) -> list[str]:
        async with Client(url) as client:
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    await client.call_tool("ask", {"question": QUESTION})

                tg.start_soon(ask)
                await anyio.to_thread.run_sync(llm.first_started.wait)
                tg.cancel_scope.cancel()  # the client abandons the call
            # The session is still usable: the server went on serving it.
            after = await client.call_tool("retrieve", {"query": "Kelp", "k": 1})
            return [h["id"] for h in after.structured_content["hits"]]

    with serve_in_thread(app) as url:
        assert asyncio.run(ask_then_cancel(url + "/mcp")) == ["x2"]
        wait_until(lambda: llm.cancelled == 1, "the model request cancelled")
        stats = app.state.serve.limiter.stats
        wait_until(lambda: stats.running == 0 and stats.queued == 0, "no run left")
    assert llm.started == 1  # no reader call, no second turn after the cancellation


def test_mcp_follows_the_browser_guard_like_v1(served: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    rebound = httpx2.post(served, json=body, headers={"Host": "evil.test"})
    assert rebound.status_code == 421
    other_site = httpx2.post(served, json=body, headers={"Origin": "https://evil.test"})
    assert other_site.status_code == 403
    form = httpx2.post(served, content=b"x=1", headers={"Content-Type": "text/plain"})
    assert form.status_code == 415


def test_a_refused_ask_is_a_tool_error_that_says_why(served: str) -> None:
    # The engine refuses a blank question; the refusal must reach the client as a tool
    # error naming it, not as the SDK's reasonless "unexpected" error.
    async def call() -> Any:
        async with Client(served) as client:
            return await client.call_tool("ask", {"question": "   "})

    result = asyncio.run(call())
    assert result.is_error
    assert result.content[0].text == "Error executing tool ask: the question is empty"


def test_a_search_whose_reader_found_nothing_has_no_sources(served: str) -> None:
    async def call() -> Any:
        async with Client(served) as client:
            return await client.call_tool("search", {"query": "Kelp forests"})

    result = SearchResult.model_validate(asyncio.run(call()).structured_content)
    assert result.facts == "No helpful information found."
    assert not result.found and result.sources == []


def test_a_busy_server_refuses_an_ask_saying_so() -> None:
    llm = HeldLLM()
    app = create_app(two_hop_engine(llm), max_concurrency=1, max_queue=0)

    async def second_while_first_runs(url: str) -> Any:
        async with Client(url) as client:
            async with anyio.create_task_group() as tg:

                async def first() -> None:
                    await client.call_tool("ask", {"question": QUESTION})

                tg.start_soon(first)
                await anyio.to_thread.run_sync(llm.first_started.wait)
                refused = await client.call_tool("ask", {"question": QUESTION})
                tg.cancel_scope.cancel()
            return refused

    with serve_in_thread(app) as url:
        refused = asyncio.run(second_while_first_runs(url + "/mcp"))
    assert refused.is_error
    assert refused.content[0].text.startswith("Error executing tool ask: the server is busy")


class FailingSecondTurnLLM(ScriptedLLM):
    """The two-hop model, whose server goes down after the first search was read."""

    def __init__(self) -> None:
        super().__init__(respond_prompt)
        self.turns = 0

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        if request.role != "reader":
            self.turns += 1
            if self.turns == 2:
                raise BackendError("openai", "connection refused", retryable=True)
        return await super().complete(request, on_text=on_text)


def test_a_run_a_failing_server_ended_is_a_tool_error_with_its_searches() -> None:
    app = create_app(two_hop_engine(FailingSecondTurnLLM()))

    async def call(url: str) -> Any:
        async with Client(url) as client:
            return await client.call_tool("ask", {"question": QUESTION})

    with serve_in_thread(app) as url:
        result = asyncio.run(call(url + "/mcp"))
    assert result.is_error
    assert result.content[0].text == "the run failed: openai: connection refused"
    failed = AskResult.model_validate(result.structured_content)
    assert failed.finish_reason == "error" and failed.answer is None
    assert [s.query for s in failed.searches] == QUERIES[:1]
    assert [s.id for s in failed.sources] == ["b1"]
