"""`--api-mode tools` over OpenAI's Responses API (`--tools-api`), against a loopback
server speaking its wire format whole and streamed: the same two-hop question as over
chat completions, the reasoning items sent back unchanged (the server refuses a call
without its reasoning), Reason-in-Documents still on chat completions, which wire
`auto` picks, and failures as typed errors."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from tests.servers.responses_server import responses_server
from tests.servers.tool_server import PLAIN, tool_server, two_hop_tools

from search_o1.engine import ChainLimits, Engine, EngineOptions
from search_o1.errors import BackendError
from search_o1.llm.openai import OpenAILLM
from search_o1.llm.tools import ToolRequest
from search_o1.search.memory import MemorySearch
from search_o1.tool_chat import ChatMessage, ToolCall, ToolReply, search_tool
from search_o1.types import Event, FinishReason, Hit, SearchStarted, TextDelta

QUESTION = "Where was the designer of the Glimmer Bridge born?"
CORPUS = {
    "Glimmer Bridge designer": [
        Hit("b1", "Glimmer Bridge", "The Glimmer Bridge was designed by Orla Venn.")
    ],
    "Orla Venn birthplace": [Hit("p1", "Orla Venn", "Orla Venn was born in Tessaly in 1931.")],
}
SEARCHES = ["Glimmer Bridge designer", "Orla Venn birthplace"]


def _engine(llm: OpenAILLM) -> Engine:
    options = EngineOptions(tools=True, task="multihop", limits=ChainLimits(max_searches=10))
    return Engine(llm, MemorySearch(CORPUS), options=options)


async def _ask(llm: OpenAILLM, events: list[Event] | None = None) -> Any:
    try:
        on_event = None if events is None else events.append
        return await _engine(llm).run(QUESTION, on_event=on_event)
    finally:
        await llm.aclose()


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_two_hop_question_over_the_responses_api(streamed: bool) -> None:
    with responses_server(two_hop_tools, whole=not streamed) as srv:
        llm = OpenAILLM(srv.url, api_mode="tools", tools_api="responses")
        events: list[Event] | None = [] if streamed else None
        trace = asyncio.run(_ask(llm, events))
    assert trace.error is None
    assert (trace.answer, trace.finish_reason) == ("Tessaly", FinishReason.ANSWERED)
    assert [s.query for s in trace.searches] == SEARCHES
    assert [s.hits[0].id for s in trace.searches] == ["b1", "p1"]
    # Three turns on /v1/responses; one Reason-in-Documents call per search on chat.
    assert len(srv.turns) == 3 and len(srv.reader_requests) == 2
    assert not srv.refused
    assert all(s.reader is not None and s.reader.found for s in trace.searches)
    for body in srv.turns:
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"summary": "auto"} and body["max_output_tokens"] > 0
        assert body["tools"][0] == {"type": "function", **_flat_search_tool()}
    # The reasoning items (encrypted) went back unchanged, before their calls, in order.
    third = srv.turns[2]["input"]
    assert [i.get("type", i.get("role")) for i in third] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert third[1] == srv.sent["call_1_0"] and third[4] == srv.sent["call_2_0"]
    assert third[1]["encrypted_content"].startswith("gAAAA")
    assert third[3] == {
        "type": "function_call_output",
        "call_id": "call_1_0",
        "output": "The Glimmer Bridge was designed by Orla Venn.",
    }
    # The reasoning summary stays in the trace, and the chain reads as in marker mode.
    assert trace.messages[1].reasoning == "I need the designer first."
    assert trace.messages[1].echo["output"][0]["id"] == "rs_1"
    assert trace.steps[0].text == "<think>\nI need the designer first."
    assert "<|begin_search_query|>Orla Venn birthplace<|end_search_query|>" in trace.output
    assert trace.usage.completion_tokens > 0
    if events is not None:
        assert [e.query for e in events if isinstance(e, SearchStarted)] == SEARCHES
        live = "".join(e.text for e in events if isinstance(e, TextDelta) and not e.inserted)
        assert "Now where Orla Venn was born." in live  # the summary, shown as it came
        assert "\\boxed{Tessaly}" in live


def _flat_search_tool() -> dict[str, Any]:
    tool = search_tool()
    spec = {"name": tool.name, "description": tool.description}
    return spec | {"parameters": dict(tool.parameters), "strict": False}


def test_the_server_refuses_calls_sent_back_without_their_reasoning() -> None:
    """What makes the echo necessary: the same turn rebuilt from its calls alone is a 400."""

    async def turns(llm: OpenAILLM) -> tuple[ToolReply, ToolReply]:
        try:
            first = await llm.converse(_request(()))
            tool = ChatMessage(
                "tool", CORPUS["Glimmer Bridge designer"][0].text, tool_call_id="call_1_0"
            )
            rebuilt = ChatMessage("assistant", tool_calls=first.tool_calls)  # no echo
            with pytest.raises(BackendError, match="without its required 'reasoning' item"):
                await llm.converse(_request((rebuilt, tool)))
            return first, await llm.converse(_request((first.message(), tool)))
        finally:
            await llm.aclose()

    with responses_server(two_hop_tools) as srv:
        llm = OpenAILLM(srv.url, api_mode="tools", tools_api="responses", retries=0)
        first, reply = asyncio.run(turns(llm))
    assert first.tool_calls == (ToolCall("call_1_0", "search", first.tool_calls[0].arguments),)
    assert first.finish == "tool_calls" and first.reasoning == "I need the designer first."
    assert reply.tool_calls[0].argument("query") == "Orla Venn birthplace"
    assert srv.refused == [
        "Item 'None' of type 'function_call' was provided without its "
        "required 'reasoning' item: 'rs_1'."
    ]


def _request(after: tuple[ChatMessage, ...]) -> ToolRequest:
    return ToolRequest((ChatMessage("user", QUESTION), *after), tools=(search_tool(),))


def test_unverified_organisation_loses_the_summary_once_per_client() -> None:
    with responses_server(two_hop_tools, verified=False) as srv:
        llm = OpenAILLM(srv.url, api_mode="tools", tools_api="responses")
        trace = asyncio.run(_ask(llm, []))
    assert trace.error is None and trace.answer == "Tessaly"
    assert srv.refused == ["reasoning.summary"]  # one 400, then no more asking
    assert len(srv.turns) == 3 and all("reasoning" not in b for b in srv.turns)
    # Without a summary there is no thinking to show, but the encrypted items still went back.
    assert srv.turns[2]["input"][1] == srv.sent["call_1_0"]
    assert trace.messages[1].reasoning == ""


def test_auto_uses_chat_completions_off_openai() -> None:
    with tool_server(PLAIN, two_hop_tools) as srv:  # it has no /v1/responses at all
        trace = asyncio.run(_ask(OpenAILLM(srv.url, api_mode="tools", tools_api="auto")))
    assert trace.error is None and trace.answer == "Tessaly"
    assert len(srv.tool_requests) == 3 and "messages" in srv.tool_requests[0]


class _ToLoopback(httpx.AsyncBaseTransport):
    """Sends what is addressed to api.openai.com to a loopback server instead, so the
    client believes (and discovery finds) that it talks to OpenAI."""

    def __init__(self, url: str) -> None:
        self.target = httpx.URL(url)
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        url = request.url.copy_with(
            scheme=self.target.scheme, host=self.target.host, port=self.target.port
        )
        sent = httpx.Request(request.method, url, headers=request.headers, content=request.content)
        return await self.inner.handle_async_request(sent)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_auto_uses_the_responses_api_on_api_openai_com() -> None:
    with responses_server(two_hop_tools, strict=True) as srv:
        llm = OpenAILLM(
            "https://api.openai.com/v1",
            model="tool-model",
            api_mode="tools",
            transport=_ToLoopback(srv.url),
        )
        trace = asyncio.run(_ask(llm))
    assert trace.error is None and trace.answer == "Tessaly"
    assert len(srv.turns) == 3 and len(srv.reader_requests) == 2
    # A reasoning model's refused sampling fields are learned once, as over chat.
    assert srv.refused == ["temperature", "top_p"]
    assert all("temperature" not in b and "top_p" not in b for b in srv.turns)


def test_chat_forced_on_api_openai_com_stays_on_chat_completions() -> None:
    with tool_server(PLAIN, two_hop_tools) as srv:
        llm = OpenAILLM(
            "https://api.openai.com/v1",
            model="tool-model",
            api_mode="tools",
            tools_api="chat",
            transport=_ToLoopback(srv.url),
        )
        trace = asyncio.run(_ask(llm))
    assert trace.error is None and trace.answer == "Tessaly"
    assert len(srv.tool_requests) == 3


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("failed", "error in stream: server_error: The model failed mid-answer."),
        ("error", "error in stream: rate_limit_exceeded: Slow down."),
        ("html", "answered with an HTML page titled 'Bad gateway'"),
    ],
)
def test_failures_are_typed_backend_errors(fault: Any, words: str) -> None:
    with responses_server(two_hop_tools, fault=fault) as srv:
        llm = OpenAILLM(srv.url, api_mode="tools", tools_api="responses", retries=0)

        async def turn() -> None:
            try:
                await llm.converse(_request(()), on_text=lambda _: None)
            finally:
                await llm.aclose()

        with pytest.raises(BackendError) as caught:
            asyncio.run(turn())
    assert words in str(caught.value)
    assert caught.value.retryable is (fault == "html")  # a proxy's page may pass
