"""Multi-hop search through reasoning-model servers, one wire format each, on loopback.

The same scripted thinker sits behind every server (tests/servers/reasoning_server.py):
it writes its queries inside `<think>`, so a client reading only `content` would see no
query at all. Every server must give the same searches and the same answer as raw
completions, with the continuation it supports recorded in the trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.servers.reasoning_server import (
    DEEPSEEK,
    HIDDEN,
    OPENROUTER,
    SGLANG,
    VLLM,
    VLLM_010,
    VLLM_011,
    Flavour,
    ReasoningServer,
    answer_searcher,
    reasoning_server,
    two_hop_thinker,
)
from tests.two_hop import HITS, QUERIES, QUESTION

from search_o1 import ConfigError, FinishReason, Trace, load_settings, open_pipeline
from search_o1.engine import Engine
from search_o1.llm.openai import OpenAILLM
from search_o1.search.memory import MemorySearch
from search_o1.types import Event, Message, Prompt, TextDelta

from search_o1.llm.base import CompletionRequest  # isort: skip

CORPUS = [
    {
        "id": "b1",
        "title": "Glimmer Bridge",
        "text": "The Glimmer Bridge was designed by Orla Venn.",
    },
    {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly in 1931."},
    {"id": "x1", "title": "Kelp", "text": "Kelp forests grow in cold coastal waters."},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in CORPUS) + "\n", encoding="utf-8")
    return path


async def ask(server: ReasoningServer, corpus: Path, **settings: Any) -> tuple[Trace, str]:
    """Run the question through the pipeline; (trace, the live view's text)."""
    config = {"base_url": [server.url], "corpus": str(corpus), "task": "multihop"}
    config |= {"cache": "off", "retries": 0, "chat_template": "qwen-think", **settings}
    shown: list[str] = []

    def on_event(event: Event) -> None:
        if isinstance(event, TextDelta):
            shown.append(event.text)

    async with open_pipeline(load_settings(config)) as engine:
        trace = await engine.run(QUESTION, on_event=on_event)
    return trace, "".join(shown)


def assert_answered(trace: Trace) -> None:
    assert trace.finish_reason is FinishReason.ANSWERED, trace.error
    assert [s.query for s in trace.searches] == QUERIES
    assert [s.hits[0].id for s in trace.searches] == ["b1", "p1"]
    assert trace.answer == "Tessaly"


def assert_one_think_per_prompt(server: ReasoningServer) -> None:
    """No prompt the model saw opened its thinking twice or continued past `</think>`."""
    for prompt in server.prompts:
        turn = prompt.rsplit("<|im_start|>assistant\n", 1)[-1]
        assert turn.count("<think>") <= 1, turn


async def test_raw_completions_is_the_reference(corpus: Path) -> None:
    with reasoning_server(VLLM, two_hop_thinker) as server:
        trace, _ = await ask(server, corpus)
    assert_answered(trace)
    assert {s.completion.continuation for s in trace.steps} == {"raw"}
    assert (
        not server.chat_requests and ("/v1/completions", server.requests[-1][1]) in server.requests
    )
    assert_one_think_per_prompt(server)


# (flavour, changes, api mode asked for, the continuation the client should settle on)
NO_RAW = {"completions": False}  # chat-only: switched to chat on the 404 of /completions
CHAT_SERVERS = [
    pytest.param(VLLM_010, NO_RAW, "completions", "continue_final", id="vllm-0.10"),
    pytest.param(VLLM_011, NO_RAW, "completions", "continue_final", id="vllm-0.11-both"),
    pytest.param(VLLM, NO_RAW, "completions", "continue_final", id="vllm-reasoning"),
    pytest.param(VLLM, {}, "chat", "continue_final", id="vllm-chat-mode"),
    pytest.param(SGLANG, {}, "chat", "continue_final", id="sglang"),
    # SGLang's 404 body is its own ErrorResponse ({"object": "error", "message"}).
    pytest.param(SGLANG, NO_RAW, "completions", "continue_final", id="sglang-chat-only"),
    pytest.param(DEEPSEEK, {}, "completions", "prefix", id="deepseek"),
    # On loopback the host is not openrouter.ai: an unknown server, asked with vLLM's
    # flags, which OpenRouter-style prefill ignores; the host rule is tested below.
    pytest.param(OPENROUTER, {}, "completions", "continue_final", id="openrouter"),
]


@pytest.mark.parametrize(("flavour", "changes", "mode", "how"), CHAT_SERVERS)
async def test_chat_servers_search_inside_the_thinking(
    corpus: Path, flavour: Flavour, changes: dict[str, Any], mode: str, how: str
) -> None:
    with reasoning_server(flavour, two_hop_thinker, **changes) as server:
        trace, shown = await ask(server, corpus, api_mode=mode)
    assert_answered(trace)
    # The first call continues nothing; every call after a search says how it continued.
    assert trace.steps[0].completion.continuation is None
    assert {s.completion.continuation for s in trace.steps[1:]} == {how}
    # The thinking is kept: in the chain, in the trace and in the live view.
    assert trace.output.startswith("<think>\nFirst the designer.")
    assert trace.output.count("<think>") == 1 and trace.output.count("</think>") == 1
    assert "<think>\nFirst the designer." in shown and "</think>" in shown
    assert_one_think_per_prompt(server)


@pytest.mark.parametrize(("flavour", "changes", "mode", "how"), CHAT_SERVERS)
async def test_chat_servers_without_streaming(
    flavour: Flavour, changes: dict[str, Any], mode: str, how: str
) -> None:
    search = MemorySearch(HITS)
    with reasoning_server(flavour, two_hop_thinker, **changes) as server:
        llm = OpenAILLM(
            server.url, api_mode=mode, chat_template="qwen-think", retries=0, stream=False
        )
        trace = await Engine(llm, search).run(QUESTION, task="multihop")
        await llm.aclose()
    assert_answered(trace)
    assert {s.completion.continuation for s in trace.steps[1:]} == {how}
    assert not any(b.get("stream") for _, b in server.requests)
    assert trace.output.startswith("<think>\nFirst the designer.")
    assert_one_think_per_prompt(server)


async def test_deepseek_prefix_goes_to_beta_with_the_thinking(corpus: Path) -> None:
    with reasoning_server(DEEPSEEK, two_hop_thinker) as server:
        await ask(server, corpus)
    continued = [(p, b) for p, b in server.requests if p.startswith("/beta/")]
    assert len(continued) == 2
    last = continued[0][1]["messages"][-1]
    assert last["prefix"] is True and last["content"] == ""
    assert last["reasoning_content"].startswith("First the designer. <|begin_search_query|>")


async def test_vllm_continuation_sends_the_pair_of_flags(corpus: Path) -> None:
    with reasoning_server(VLLM, two_hop_thinker, completions=False) as server:
        await ask(server, corpus)
    continued = [b for b in server.chat_requests if b["messages"][-1]["role"] == "assistant"]
    assert continued and all(b["continue_final_message"] for b in continued)
    assert all(b["add_generation_prompt"] is False for b in continued)
    assert continued[0]["messages"][-1]["content"].startswith("<think>\nFirst the designer.")


async def test_prefill_continues_a_plain_trailing_message() -> None:
    chain = "<think>\nFirst the designer. <|begin_search_query|>Glimmer Bridge designer"
    chain += "<|end_search_query|>\n\n<|begin_search_result|>\nThe Glimmer Bridge was "
    chain += "designed by Orla Venn.\n<|end_search_result|>\n\n"
    with reasoning_server(OPENROUTER, two_hop_thinker) as server:
        llm = OpenAILLM(server.url, api_mode="chat", retries=0, continuation="prefill")
        prompt = Prompt((Message("user", QUESTION),), chain)
        done = await llm.complete(CompletionRequest(prompt, stop=["<|end_search_query|>"]))
        await llm.aclose()
    body = server.chat_requests[-1]
    assert body["messages"][-1] == {"role": "assistant", "content": chain}
    assert "continue_final_message" not in body
    assert done.continuation == "prefill"
    assert done.text == "Now where Orla Venn was born. <|begin_search_query|>Orla Venn birthplace"


async def test_non_streamed_reply_is_joined_the_same_way() -> None:
    with reasoning_server(VLLM_011, two_hop_thinker, completions=False) as server:
        llm = OpenAILLM(server.url, api_mode="chat", retries=0, stream=False)
        request = CompletionRequest(
            Prompt((Message("user", QUESTION),)), stop=["<|end_search_query|>"], max_tokens=200
        )
        done = await llm.complete(request)
        await llm.aclose()
    assert done.text == "<think>\nFirst the designer. <|begin_search_query|>Glimmer Bridge designer"
    assert done.stop == "<|end_search_query|>"


async def test_hidden_thinking_fails_with_one_clear_line(corpus: Path) -> None:
    with (
        reasoning_server(HIDDEN, two_hop_thinker) as server,
        pytest.raises(ConfigError, match=r"returns none of it.*--api-mode tools"),
    ):
        await ask(server, corpus, api_mode="chat")


async def test_refused_continuation_without_completions_is_one_clear_error(
    corpus: Path,
) -> None:
    with reasoning_server(VLLM, two_hop_thinker, completions=False, continuation="refuse") as srv:
        trace, _ = await ask(srv, corpus, api_mode="chat")
    assert trace.finish_reason is FinishReason.ERROR and trace.answer is None
    assert trace.error and "cannot continue a chain after a search" in trace.error
    assert "--api-mode tools" in trace.error and "\n" not in trace.error


async def test_refused_continuation_falls_back_to_raw_completions(corpus: Path) -> None:
    with reasoning_server(VLLM, two_hop_thinker, continuation="refuse") as server:
        trace, _ = await ask(server, corpus, api_mode="chat")
    assert_answered(trace)
    assert [s.completion.continuation for s in trace.steps] == [None, "raw", "raw"]


@pytest.mark.parametrize(("flavour", "changes", "mode", "how"), CHAT_SERVERS)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_search_after_the_thinking_closed_is_continued_as_answer_text(
    flavour: Flavour, changes: dict[str, Any], mode: str, how: str, stream: bool
) -> None:
    """A query written after `</think>` gets its result inside the thinking (the engine
    drops that `</think>`), so every continued chain is inside one open think block,
    which is what SGLang's parser (all before a `</think>` is reasoning, whatever the
    prompt) and vLLM's whole-reply split (the output alone) take it to be."""
    with reasoning_server(flavour, answer_searcher, **changes) as server:
        llm = OpenAILLM(
            server.url, api_mode=mode, chat_template="qwen-think", retries=0, stream=stream
        )
        trace = await Engine(llm, MemorySearch(HITS)).run(QUESTION, task="multihop")
        await llm.aclose()
    assert_answered(trace)
    assert trace.steps[0].completion.text.startswith("<think>\nI will look both up.\n</think>")
    assert trace.output.startswith("<think>\nI will look both up.\n\n\nFirst the designer.")
    assert trace.output.count("<think>") == 1 and "</think>" not in trace.output
    assert_one_think_per_prompt(server)
