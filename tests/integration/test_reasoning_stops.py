"""A query ends where its end marker is, whoever stops: servers that let stop strings pass.

Hosted APIs apply stop strings to the answer only, open vLLM pull requests would hold
them until `</think>`, and some servers ignore them (tests/servers/reasoning_server.py,
`Flavour.stops`). Behind each server the two-hop thinker goes on thinking past its
query and then answers "Nowhere" (`thinks_on`): a client that waits for the server to
stop loses both searches. The client must end the call at the marker, close the stream
(the server counts what it sent after the marker before it saw the client hang up) and
search, streamed or whole, raw completions or chat with the thinking in a field.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.servers.reasoning_server import (
    DEEPSEEK,
    SGLANG,
    VLLM,
    VLLM_010,
    Flavour,
    ReasoningServer,
    reasoning_server,
    thinks_on,
    two_hop_thinker,
)
from tests.two_hop import HITS, QUERIES, QUESTION

from search_o1 import FinishReason, Trace
from search_o1.engine import Engine
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.search.memory import MemorySearch
from search_o1.types import Message, Prompt

END_Q = "<|end_search_query|>"
# Tokens a server may send after the marker before it sees the client hang up.
OVERRUN = 16

# (flavour, changes, api mode): servers whose stop strings do not end a query.
IGNORING = [
    pytest.param(VLLM, {"stops": "none"}, "completions", id="raw-completions"),
    pytest.param(
        VLLM_010, {"stops": "none", "completions": False}, "chat", id="chat-reasoning_content"
    ),
    pytest.param(VLLM, {"stops": "content", "completions": False}, "chat", id="chat-reasoning"),
    pytest.param(SGLANG, {"stops": "none"}, "chat", id="sglang-chat"),
    pytest.param(DEEPSEEK, {}, "completions", id="deepseek-stops-in-content-only"),
]


async def run(
    flavour: Flavour, changes: dict[str, Any], mode: str, *, stream: bool
) -> tuple[Trace, ReasoningServer]:
    with reasoning_server(flavour, thinks_on(two_hop_thinker), **changes) as server:
        llm = OpenAILLM(
            server.url, api_mode=mode, chat_template="qwen-think", retries=0, stream=stream
        )
        trace = await Engine(llm, MemorySearch(HITS)).run(QUESTION, task="multihop")
        await llm.aclose()
    return trace, server


def assert_searched_at_the_markers(trace: Trace) -> None:
    assert trace.finish_reason is FinishReason.ANSWERED, trace.error
    assert [s.query for s in trace.searches] == QUERIES
    assert trace.answer == "Tessaly"
    # Both searching calls were ended by the client, the answering one by the model.
    assert [s.completion.client_stop for s in trace.steps] == [True, True, False]
    assert trace.client_stops == 2
    assert all(s.completion.stop == END_Q for s in trace.steps[:2])
    assert "No result came" not in trace.output


@pytest.mark.parametrize(("flavour", "changes", "mode"), IGNORING)
async def test_a_streamed_query_ends_at_its_marker_and_the_stream_is_closed(
    flavour: Flavour, changes: dict[str, Any], mode: str
) -> None:
    trace, server = await run(flavour, changes, mode, stream=True)
    assert_searched_at_the_markers(trace)
    # The server saw the client hang up soon after each marker: it did not think on
    # to the call's max_tokens.
    assert len(server.overruns) == 2
    assert max(server.overruns) <= OVERRUN, server.overruns


@pytest.mark.parametrize(("flavour", "changes", "mode"), IGNORING)
async def test_a_whole_reply_is_cut_at_its_marker(
    flavour: Flavour, changes: dict[str, Any], mode: str
) -> None:
    trace, server = await run(flavour, changes, mode, stream=False)
    assert_searched_at_the_markers(trace)
    # A whole reply cannot be stopped early: the server generated on, the client
    # dropped it.
    assert len(server.overruns) == 2 and min(server.overruns) > OVERRUN


async def test_a_server_that_ignores_stream_is_cut_at_the_marker_too() -> None:
    changes = {"stops": "none", "streams": False, "completions": False}
    trace, server = await run(VLLM_010, changes, "chat", stream=True)
    assert_searched_at_the_markers(trace)
    assert len(server.overruns) == 2  # one whole body each, cut by the client


async def test_the_live_text_stops_before_the_marker() -> None:
    shown: list[str] = []
    with reasoning_server(VLLM, thinks_on(two_hop_thinker), stops="none") as server:
        llm = OpenAILLM(server.url, chat_template="qwen-think", retries=0)
        request = CompletionRequest(
            Prompt((Message("user", QUESTION),)), stop=[END_Q, "<|end_url|>"], max_tokens=4000
        )
        done = await llm.complete(request, on_text=shown.append)
        await llm.aclose()
    assert done.finish == "stop" and done.stop == END_Q and done.client_stop
    assert done.text == "First the designer. <|begin_search_query|>Glimmer Bridge designer"
    # What was shown live is the text, to the marker and not past it.
    assert "".join(shown) == done.text


@pytest.mark.parametrize("split", [1, 3, 7, 19])
async def test_a_marker_split_across_pieces_is_found(split: int) -> None:
    """The end marker arrives in pieces of every size: it is still found, and no part
    of it is shown."""
    text = "<think>\nLook it up. <|begin_url|>http://x.test/a<|end_url|> and on and on "

    def model(prompt: str) -> str:
        return text + "more " * 200

    shown: list[str] = []
    with reasoning_server(VLLM, model, stops="none", chunk=split) as server:
        llm = OpenAILLM(server.url, chat_template="qwen-think", retries=0)
        request = CompletionRequest(
            Prompt((Message("user", "q"),)), stop=["<|end_url|>"], max_tokens=4000
        )
        done = await llm.complete(request, on_text=shown.append)
        await llm.aclose()
    assert done.stop == "<|end_url|>" and done.client_stop
    assert done.text == "<think>\nLook it up. <|begin_url|>http://x.test/a"
    assert "".join(shown) == done.text
    assert max(server.overruns) <= OVERRUN
