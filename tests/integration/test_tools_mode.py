"""`--api-mode tools` end to end against loopback servers speaking the tool-call wire
format of a plain chat server, of reasoning-parser servers (vLLM, DeepSeek, OpenRouter,
Gemini) and of OpenAI's reasoning models (hidden thinking, strict fields): the same
two-hop question as marker mode, the same searches, one Reason-in-Documents call per
search, and what each server needs sent back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.servers.tool_server import (
    DEEPSEEK,
    GEMINI,
    OPENAI_REASONING,
    OPENROUTER,
    PLAIN,
    VLLM,
    Flavour,
    Turn,
    terse_tools,
    tool_results,
    tool_server,
    two_hop_tools,
)

from search_o1.engine import ChainLimits, Engine, EngineOptions
from search_o1.llm.openai import OpenAILLM
from search_o1.search.memory import MemorySearch
from search_o1.types import Event, FinishReason, Hit, SearchFinished, SearchStarted, TextDelta

QUESTION = "Where was the designer of the Glimmer Bridge born?"
CORPUS = {
    "Glimmer Bridge designer": [
        Hit("b1", "Glimmer Bridge", "The Glimmer Bridge was designed by Orla Venn.")
    ],
    "Orla Venn birthplace": [Hit("p1", "Orla Venn", "Orla Venn was born in Tessaly in 1931.")],
    "Tessaly": [Hit("x1", "Tessaly", "Tessaly is a river town known for its bridges.")],
}


def _engine(url: str, search: Any = None, **limits: int) -> Engine:
    options = EngineOptions(tools=True, task="multihop", limits=ChainLimits(**limits))
    return Engine(OpenAILLM(url, api_mode="tools"), search or MemorySearch(CORPUS), options=options)


async def _ask(engine: Engine, events: list[Event] | None = None) -> Any:
    try:
        return await engine.run(QUESTION, on_event=None if events is None else events.append)
    finally:
        await engine.llm.aclose()


@pytest.mark.parametrize(
    "flavour", [PLAIN, VLLM, DEEPSEEK, OPENROUTER, GEMINI, OPENAI_REASONING], ids=lambda f: f.name
)
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_two_hop_question_answered_through_tool_calls(flavour: Flavour, streamed: bool) -> None:
    with tool_server(flavour, two_hop_tools, whole=not streamed) as srv:
        events: list[Event] | None = [] if streamed else None
        trace = asyncio.run(_ask(_engine(srv.url, max_searches=10), events))
    assert trace.error is None
    assert (trace.answer, trace.finish_reason) == ("Tessaly", FinishReason.ANSWERED)
    assert [s.query for s in trace.searches] == ["Glimmer Bridge designer", "Orla Venn birthplace"]
    assert [s.hits[0].id for s in trace.searches] == ["b1", "p1"]
    # One Reason-in-Documents call per search, and its facts went back as the tool message.
    assert len(srv.reader_requests) == 2
    assert all(s.reader is not None and s.reader.found for s in trace.searches)
    tools = [m for m in trace.messages if m.role == "tool"]
    assert [m.content for m in tools] == [
        "The Glimmer Bridge was designed by Orla Venn.",
        "Orla Venn was born in Tessaly in 1931.",
    ]
    third = srv.tool_requests[2]
    assert [m["role"] for m in third["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert third["tools"][0]["function"]["name"] == "search"
    # The chain reads as in marker mode: words, the query, the result block.
    assert "<|begin_search_query|>Orla Venn birthplace<|end_search_query|>" in trace.output
    assert "<|begin_search_result|>\nOrla Venn was born in Tessaly" in trace.output
    if flavour.reasoning_fields:
        # Thinking opens <think> and stays open across the calls; the answer closes it.
        assert trace.steps[0].text == "<think>\nI need the designer first."
        assert trace.steps[-1].text.startswith("So it is Tessaly.</think>The designer")
        assert trace.messages[1].reasoning == "I need the designer first."
    if events is not None:
        started = [e.query for e in events if isinstance(e, SearchStarted)]
        assert started == ["Glimmer Bridge designer", "Orla Venn birthplace"]
        assert sum(isinstance(e, SearchFinished) for e in events) == 2
        live = "".join(e.text for e in events if isinstance(e, TextDelta) and not e.inserted)
        assert "\\boxed{Tessaly}" in live
        if flavour.reasoning_fields:
            assert "Now where Orla Venn was born." in live


def test_fields_a_reasoning_model_refuses_are_learned_once_per_client() -> None:
    with tool_server(OPENAI_REASONING, two_hop_tools) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, max_searches=10)))
    assert trace.error is None and trace.answer == "Tessaly"
    # One 400 per field, then every tool turn and Reason-in-Documents call went through.
    assert srv.refused == ["cache_prompt", "max_tokens", "temperature", "top_p"]
    assert len(srv.tool_requests) == 3 and len(srv.reader_requests) == 2
    assert all("max_completion_tokens" in b and "top_p" not in b for b in srv.requests)
    assert trace.usage.completion_tokens > 0


def test_reasoning_and_signatures_go_back_as_each_server_needs() -> None:
    """DeepSeek refuses a tool turn without its reasoning_content (the server checks);
    OpenRouter's reasoning_details and Gemini's signatures come back as sent."""
    for flavour, key in ((DEEPSEEK, "reasoning_content"), (OPENROUTER, "reasoning_details")):
        with tool_server(flavour, two_hop_tools, interleave=True) as srv:
            trace = asyncio.run(_ask(_engine(srv.url), []))
        assert trace.answer == "Tessaly", trace.error
        sent_back = srv.tool_requests[1]["messages"][1]
        assert (
            key in sent_back and sent_back[key] == srv.sent[sent_back["tool_calls"][0]["id"]][key]
        )
    with tool_server(GEMINI, two_hop_tools) as srv:
        trace = asyncio.run(_ask(_engine(srv.url), []))
    call = srv.tool_requests[1]["messages"][1]["tool_calls"][0]
    assert call["extra_content"]["google"]["thought_signature"] == f"sig-{call['id']}"
    assert trace.answer == "Tessaly"


class _Barrier:
    """A search backend whose searches finish only when `width` of them are in flight:
    calls answered one after another would never get there (the test fails, not hangs)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.in_flight = 0
        self.most = 0
        self.ready = asyncio.Event()
        self.queries: list[str] = []

    async def search(self, query: str, *, k: int) -> list[Hit]:
        self.queries.append(query)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight >= self.width:
            self.ready.set()
        await asyncio.wait_for(self.ready.wait(), timeout=30)
        self.in_flight -= 1
        return list(CORPUS.get(query, []))[:k]

    async def aclose(self) -> None:
        return None


def _parallel(body: dict[str, Any]) -> Turn:
    if not body.get("tools"):
        return two_hop_tools(body)
    if not tool_results(body):
        calls = (
            ("search", {"query": "Glimmer Bridge designer"}),
            ("search", {"query": "Orla Venn birthplace"}),
            ("search", {"query": "Glimmer Bridge designer"}),
            ("lookup", {"query": "x"}),
        )
        return Turn("Both facts at once.", "", calls)
    return Turn("", "Born in \\boxed{Tessaly}.")


@pytest.mark.parametrize("interleave", [False, True])
def test_parallel_calls_of_one_turn_are_answered_concurrently(interleave: bool) -> None:
    search = _Barrier(2)
    with tool_server(VLLM, _parallel, interleave=interleave) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, search), []))
    assert trace.answer == "Tessaly", trace.error
    assert search.most == 2 and sorted(search.queries) == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    outcomes = [(s.query, s.outcome) for s in trace.searches]
    assert outcomes == [
        ("Glimmer Bridge designer", "searched"),
        ("Orla Venn birthplace", "searched"),
        ("Glimmer Bridge designer", "repeated"),
        ("x", "failed"),
    ]
    assert len(srv.reader_requests) == 2
    second = srv.tool_requests[1]["messages"]
    ids = [c["id"] for c in second[1]["tool_calls"]]
    assert [m.get("tool_call_id") for m in second[2:]] == ids
    assert second[4]["content"] == second[2]["content"]  # the repeat got the first's facts
    assert "no tool called 'lookup'" in second[5]["content"]


def test_search_limit_applies_and_no_call_is_offered_past_it() -> None:
    def greedy(body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return two_hop_tools(body)
        if body.get("tool_choice") == "none":
            return Turn("", "I must answer: \\boxed{Tessaly}.")
        return Turn(
            "",
            "",
            (("search", {"query": "Glimmer Bridge designer"}), ("search", {"query": "Tessaly"})),
        )

    with tool_server(PLAIN, greedy) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, max_searches=1)))
    assert [(s.query, s.outcome) for s in trace.searches] == [
        ("Glimmer Bridge designer", "searched"),
        ("Tessaly", "limit"),
    ]
    assert [b["tool_choice"] for b in srv.tool_requests] == ["auto", "none"]
    assert trace.answer == "Tessaly"


def test_max_turns_ends_a_chain_that_keeps_calling() -> None:
    def forever(body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return two_hop_tools(body)
        return Turn("", "", (("search", {"query": f"q{len(tool_results(body))}"}),))

    with tool_server(PLAIN, forever) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, max_turns=3, max_searches=10)))
    assert trace.finish_reason == FinishReason.MAX_TURNS
    assert [s.query for s in trace.searches] == ["q0", "q1", "q2"]
    assert len(srv.tool_requests) == 3


def test_a_pool_keeps_one_conversation_on_one_server() -> None:
    from search_o1.llm.pool import PoolLLM

    with tool_server(PLAIN, two_hop_tools) as a, tool_server(PLAIN, two_hop_tools) as b:
        pool = PoolLLM([OpenAILLM(a.url, api_mode="tools"), OpenAILLM(b.url, api_mode="tools")])
        options = EngineOptions(tools=True, task="multihop")
        trace = asyncio.run(_ask(Engine(pool, MemorySearch(CORPUS), options=options)))
        used = [len(s.tool_requests) for s in (a, b)]
    assert trace.answer == "Tessaly"
    assert sorted(used) == [0, 3]  # all three turns on the server that took the first


def test_methods_and_models_without_a_tools_mode_are_refused() -> None:
    from search_o1.errors import ConfigError
    from search_o1.llm.scripted import ScriptedLLM

    options = EngineOptions(tools=True)
    with pytest.raises(ConfigError, match="cannot call tools"):
        asyncio.run(Engine(ScriptedLLM(["x"]), MemorySearch(CORPUS), options=options).run(QUESTION))
    engine = Engine(
        OpenAILLM("http://127.0.0.1:9/v1", api_mode="tools"), MemorySearch(CORPUS), options=options
    )
    with pytest.raises(ConfigError, match="rag-agent method has no tools mode"):
        asyncio.run(engine.run(QUESTION, method="rag-agent"))


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_deepseek_gets_reasoning_content_back_even_when_the_thinking_was_empty(
    streamed: bool,
) -> None:
    """A tool-call turn with no thinking still carries `reasoning_content` ("") back:
    DeepSeek answers its absence with a 400 (the server refuses it), whether the field
    came as "" (whole) or in no delta at all (streamed)."""
    with tool_server(DEEPSEEK, terse_tools, whole=not streamed) as srv:
        events: list[Event] | None = [] if streamed else None
        trace = asyncio.run(_ask(_engine(srv.url), events))
    assert trace.answer == "Tessaly", trace.error
    assert [s.query for s in trace.searches] == ["Glimmer Bridge designer", "Orla Venn birthplace"]
    last = srv.tool_requests[-1]["messages"]
    turns = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    assert [m["reasoning_content"] for m in turns] == ["I need the designer first.", ""]


def test_vllm_is_sent_the_reasoning_field_its_template_reads() -> None:
    """vLLM drops an incoming `reasoning_content` silently (issue #38488) and hands its
    template `reasoning`: the thinking it sent must come back under that name."""
    with tool_server(VLLM, two_hop_tools) as srv:
        trace = asyncio.run(_ask(_engine(srv.url), []))
    assert trace.answer == "Tessaly", trace.error
    assert "I need the designer first." in srv.reasoning_seen
    assert None not in srv.reasoning_seen


def test_a_turn_the_server_aborted_is_asked_again() -> None:
    """finish_reason "abort" (vLLM, SGLang) ends a turn the model did not end: its half
    thought is no answer, so the turn is asked again."""
    with tool_server(VLLM, two_hop_tools, whole=True, aborts=1) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, max_searches=10)))
    assert (trace.answer, trace.finish_reason) == ("Tessaly", FinishReason.ANSWERED)
    assert [s.query for s in trace.searches] == ["Glimmer Bridge designer", "Orla Venn birthplace"]
    assert len(srv.tool_requests) == 4  # the aborted turn, asked again, and two more


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "streamed"])
def test_a_filtered_turn_ends_the_chain_saying_so(whole: bool) -> None:
    """finish_reason "content_filter": half a thought, which asked again would be
    filtered again. The chain ends on a one-line error naming the filter."""
    with tool_server(
        VLLM, two_hop_tools, whole=whole, aborts=1, cut_reason="content_filter"
    ) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, max_searches=10)))
    assert trace.finish_reason is FinishReason.ERROR and trace.answer is None
    assert trace.error and "content filter stopped the reply" in trace.error
    assert "\n" not in trace.error and len(srv.tool_requests) == 1


def test_an_aborted_turn_already_shown_live_is_an_error_not_an_answer() -> None:
    """Streamed, the half thought was shown as it came and cannot be taken back (a
    replay would show it twice): the chain ends on a one-line error, as for a cut
    stream, instead of taking the half thought for the model's last word."""
    with tool_server(VLLM, two_hop_tools, aborts=1) as srv:
        trace = asyncio.run(_ask(_engine(srv.url, max_searches=10)))
    assert trace.finish_reason is FinishReason.ERROR and trace.answer is None
    assert trace.error and "ended the turn early (finish_reason 'abort')" in trace.error
    assert "\n" not in trace.error and len(srv.tool_requests) == 1
