"""The two-hop question through each model family's real chat template on each server.

The loopback servers render prompts through Jinja templates written after QwQ-32B's,
DeepSeek-R1's and Qwen3's (tests/servers/chat_templates.py), continue chains as vLLM,
SGLang and DeepSeek do, and the scripted model goes wrong, as a real one may, when its
chain is continued outside one open think block. Qwen3's template closes the thinking
before a continued message on vLLM and opens none on SGLang: the client must notice and
continue the way that works (raw completions on vLLM; its own `<think>` on SGLang), or
stop with one line naming the cause and the flag.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.servers.chat_templates import assistant_turn
from tests.servers.reasoning_server import (
    DEEPSEEK,
    SGLANG,
    VLLM,
    Flavour,
    ReasoningServer,
    reasoning_server,
    two_hop_thinker,
)
from tests.two_hop import HITS, QUERIES, QUESTION

from search_o1 import FinishReason, Trace
from search_o1.engine import Engine
from search_o1.llm.openai import OpenAILLM
from search_o1.search.memory import MemorySearch

# Our built-in template per family, for servers that cannot render one (SGLang).
BUILTIN = {"qwq": "qwen-think", "r1": "deepseek", "qwen3": "qwen3"}
FAMILIES = ["qwq", "r1", "qwen3"]


async def run(
    flavour: Flavour,
    family: str,
    *,
    mode: str,
    template: str | None,
    stream: bool = True,
    model: str | None = None,
    **changes: Any,
) -> tuple[Trace, ReasoningServer]:
    with reasoning_server(flavour, two_hop_thinker, template=family, **changes) as server:
        llm = OpenAILLM(
            server.url,
            api_mode=mode,
            chat_template=template,
            retries=0,
            stream=stream,
            model=model,
        )
        trace = await Engine(llm, MemorySearch(HITS)).run(QUESTION, task="multihop")
        await llm.aclose()
    return trace, server


def assert_answered(trace: Trace, server: ReasoningServer) -> None:
    assert trace.finish_reason is FinishReason.ANSWERED, trace.error
    assert [s.query for s in trace.searches] == QUERIES
    assert trace.answer == "Tessaly"
    for prompt in server.prompts:  # every chain the model saw was inside one think block
        assert assistant_turn(prompt).count("<think>") <= 1, prompt


@pytest.mark.parametrize("family", FAMILIES)
async def test_raw_completions_with_the_servers_own_template(family: str) -> None:
    trace, server = await run(VLLM, family, mode="completions", template=None)
    assert_answered(trace, server)
    assert {s.completion.continuation for s in trace.steps} == {"raw"}


@pytest.mark.parametrize(
    ("family", "how"), [("qwq", "continue_final"), ("r1", "continue_final"), ("qwen3", "raw")]
)
async def test_vllm_chat_continues_inside_the_thinking(family: str, how: str) -> None:
    trace, server = await run(VLLM, family, mode="chat", template=None)
    assert_answered(trace, server)
    assert [s.completion.continuation for s in trace.steps] == [None, how, how]


async def test_qwen3_on_a_vllm_without_raw_completions_stops_with_one_line() -> None:
    trace, _ = await run(VLLM, "qwen3", mode="chat", template=None, completions=False)
    assert trace.finish_reason is FinishReason.ERROR and trace.answer is None
    error = trace.error or ""
    assert "closes the thinking" in error and "--api-mode tools" in error
    assert "\n" not in error


@pytest.mark.parametrize("family", FAMILIES)
async def test_sglang_chat_appends_the_chain_inside_the_thinking(family: str) -> None:
    trace, server = await run(SGLANG, family, mode="chat", template=BUILTIN[family])
    assert_answered(trace, server)
    assert [s.completion.continuation for s in trace.steps] == [None, *["continue_final"] * 2]
    continued = [b for b in server.chat_requests if b["messages"][-1]["role"] == "assistant"]
    opened = [b["messages"][-1]["content"].startswith("<think>") for b in continued]
    assert opened == [family == "qwen3"] * 2  # Qwen3's prompt does not open <think>


async def test_sglang_with_no_template_goes_by_a_qwen3_models_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """SGLang renders with a template it cannot show us: with no --chat-template, a
    Qwen3 model's name says its generation prompt opens no <think> (the chain went on
    outside its thinking, and nothing said so); a warning says what was assumed."""
    with caplog.at_level("WARNING", logger="search_o1.llm.openai.client"):
        trace, server = await run(
            SGLANG, "qwen3", mode="chat", template=None, model="Qwen/Qwen3-8B"
        )
    assert_answered(trace, server)
    continued = [b for b in server.chat_requests if b["messages"][-1]["role"] == "assistant"]
    assert [b["messages"][-1]["content"].startswith("<think>") for b in continued] == [True] * 2
    warned = [
        r.getMessage() for r in caplog.records if "looks like a Qwen3 model" in r.getMessage()
    ]
    assert len(warned) == 1 and "--chat-template" in warned[0]


async def test_deepseek_prefix_with_r1s_template() -> None:
    trace, server = await run(DEEPSEEK, "r1", mode="completions", template=None)
    assert_answered(trace, server)
    assert [s.completion.continuation for s in trace.steps] == [None, "prefix", "prefix"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("flavour", [VLLM, SGLANG], ids=["vllm", "sglang"])
async def test_whole_replies_split_as_each_server_splits_them(
    flavour: Flavour, family: str
) -> None:
    """Not streamed, vLLM splits the thinking off the output alone (deepseek_r1: all of
    it before `</think>`; qwen3: only an output with both tags, else all content) and
    SGLang answers `content: ""` with `matched_stop`: the chain is the same."""
    template = BUILTIN[family] if flavour is SGLANG else None
    trace, server = await run(flavour, family, mode="chat", template=template, stream=False)
    assert_answered(trace, server)
    assert trace.output.startswith("<think>\nFirst the designer.")
