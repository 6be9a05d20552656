"""Tools mode (`--api-mode tools`): the chain of one question when the model searches by
calling a function tool instead of writing query markers.

Hosted reasoning models that cannot continue a half-written chain (OpenAI o-series and
GPT-5, Claude and Gemini through OpenAI-compatible endpoints, DeepSeek and Qwen3 with
tools) can search mid-reasoning only this way. Each turn offers the `search` tool; each
call is answered exactly as a marker query is (same limits, same repeated-query rule,
same search, page reading and Reason-in-Documents), and the refined facts go back as
the `tool` message. Calls of one turn are answered concurrently.

The trace and the live view read as in marker mode: the chain text (`trace.output`)
shows the model's thinking and words, then each call as a marker-wrapped query followed
by its result block; `trace.messages` keeps the conversation exactly as sent, with the
reasoning fields the server asked to get back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from search_o1 import markers as mk
from search_o1.chat import SEARCH_TOOL, ChatMessage, ToolCall, ToolChoice, ToolReply, search_tool
from search_o1.engine_search import answer_mode, refusal, run_search
from search_o1.errors import ConfigError
from search_o1.llm import _reasoning as rsn
from search_o1.llm.tools import ToolLLM, ToolRequest
from search_o1.types import (
    Completion,
    FinishReason,
    SearchFinished,
    SearchRecord,
    SearchStarted,
    Step,
    TextDelta,
    Usage,
)

if TYPE_CHECKING:
    from search_o1.engine import Engine, _Chain


def tool_llm(engine: Engine) -> ToolLLM:
    """The engine's model as a tool-calling one, or a ConfigError saying why not."""
    if not isinstance(engine.llm, ToolLLM):
        raise ConfigError(
            f"--api-mode tools needs a chat server that takes function tools; the "
            f"{engine.llm.name!r} backend cannot call tools"
        )
    return engine.llm


async def run_tools_chain(engine: Engine, chain: _Chain) -> None:
    """Turns until the model answers without calling a tool, or a limit ends the chain."""
    llm = tool_llm(engine)
    opening = chain.prompt.messages[0].content
    chain.trace.messages.append(ChatMessage("user", opening))
    for turn in range(engine.options.limits.max_turns):
        budget = await engine._token_budget(chain)
        if budget is None:
            return
        reply = await _turn(engine, llm, chain, budget, _choice(engine, chain, turn))
        text = _turn_text(chain, reply)
        chain.append(text, generated=True)
        chain.trace.messages.append(reply.message())
        completion = _completion(reply, text)
        if reply.finish != "tool_calls":
            chain.trace.steps.append(Step(turn, text, completion))
            engine._finish_generation(chain, completion)
            return
        records = await answer_calls(engine, chain, reply.tool_calls)
        for i, (call, record) in enumerate(zip(reply.tool_calls, records, strict=True)):
            chain.trace.messages.append(
                ChatMessage("tool", _tool_content(record), tool_call_id=call.id)
            )
            chain.trace.steps.append(Step(turn, text if i == 0 else "", completion, record))
    engine._finish(chain, FinishReason.MAX_TURNS)


def _choice(engine: Engine, chain: _Chain, turn: int) -> ToolChoice:
    """`required` opens a forced-search chain; past the search limit no call is offered."""
    if chain.searches >= engine.options.limits.max_searches:
        return "none"
    if turn == 0 and engine.options.force_search and chain.method.forceable:
        return "required"
    return "auto"


async def _turn(
    engine: Engine, llm: ToolLLM, chain: _Chain, budget: int, choice: ToolChoice
) -> ToolReply:
    request = ToolRequest(
        tuple(chain.trace.messages),
        (search_tool(),),
        choice,
        max_tokens=budget,
        sampling=engine.options.sampling,
    )
    live = _Live(chain)
    async with chain.phase("generate"):
        reply = await llm.converse(request, on_text=live.content, on_reasoning=live.reasoning)
    chain.trace.usage += Usage(reply.prompt_tokens, reply.completion_tokens)
    if reply.prompt_tokens:
        chain.known_tokens = reply.prompt_tokens + reply.completion_tokens
        chain.unreported_chars = 0
    return reply


class _Live:
    """Streams a turn to the live view joined as `_turn_text` joins it."""

    def __init__(self, chain: _Chain) -> None:
        self.chain = chain
        self.joiner = rsn.ChainJoiner(rsn.thinking_open(chain.prompt.continuation))

    def reasoning(self, piece: str) -> None:
        self.chain.emit(TextDelta(self.joiner.reasoning(piece)))

    def content(self, piece: str) -> None:
        self.chain.emit(TextDelta(self.joiner.content(piece)))


def _turn_text(chain: _Chain, reply: ToolReply) -> str:
    """The model's own words of one turn as raw chain text, as a thinking model writes
    them in marker mode: the thinking opens `<think>` (and stays open across tool calls),
    the answer text closes it. The answer may be in either."""
    thinking = rsn.thinking_open(chain.prompt.continuation)
    return rsn.join_reply(thinking, reply.reasoning, reply.content)


def _completion(reply: ToolReply, text: str) -> Completion:
    return Completion(
        text,
        "length" if reply.finish == "length" else "stop",
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_s=reply.latency_s,
    )


def _tool_content(record: SearchRecord) -> str:
    """What goes back as the tool message: the inserted text without the result markers."""
    return mk.last_between(record.inserted, mk.BEGIN_RESULT, mk.END_RESULT) or record.inserted


# ---- answering the calls of one turn -----------------------------------------------------


@dataclass
class _Planned:
    """One call, and how it will be answered: `record` now, or a search to run."""

    query: str
    record: SearchRecord | None = None
    first: int | None = None  # an earlier call of this turn with the same query


async def answer_calls(
    engine: Engine, chain: _Chain, calls: Sequence[ToolCall]
) -> list[SearchRecord]:
    """Answer every call of one turn: searches run concurrently, results go in call order.

    The limits are applied in call order first, as if the calls had come one by one: a
    query already answered (in this chain or earlier in this turn) is "repeated", a call
    past the search limit is told so; only then do the remaining searches start.
    """
    plans = [_plan(engine, chain, call, i, calls) for i, call in enumerate(calls)]
    for plan in plans:
        chain.emit(SearchStarted(plan.query))
    todo = [p for p in plans if p.record is None and p.first is None]
    mode = answer_mode(engine, chain)
    found = await asyncio.gather(*(run_search(engine, chain, p.query, mode=mode) for p in todo))
    for plan, record in zip(todo, found, strict=True):
        plan.record = record
        if record.outcome == "searched":
            chain.results[plan.query] = record.inserted
    records = []
    for plan in plans:
        record = plan.record or _repeat_of(plans[plan.first or 0].record)
        chain.append(mk.BEGIN_QUERY + plan.query + mk.END_QUERY)
        chain.append(record.inserted)
        chain.emit(SearchFinished(record))
        records.append(record)
    return records


def _plan(
    engine: Engine, chain: _Chain, call: ToolCall, index: int, calls: Sequence[ToolCall]
) -> _Planned:
    query = " ".join((call.argument("query") or "").split())
    if call.name != SEARCH_TOOL:
        note = f"There is no tool called {call.name!r}; the only tool is `{SEARCH_TOOL}`."
        return _Planned(query or call.name, _note(query, "failed", note, error=note))
    if not query:
        note = "The search query was empty. Call the search tool with a query, or continue."
        return _Planned(query, _note(query, "empty", note))
    earlier = [j for j in range(index) if _same_query(calls[j], query)]
    if earlier and query not in chain.results:
        return _Planned(query, first=earlier[0])
    # The marker path's one rule: repeated, placeholder, over the limit (either order).
    record = refusal(engine, chain, query)
    if record is None:
        chain.searches += 1
    return _Planned(query, record)


def _same_query(call: ToolCall, query: str) -> bool:
    return call.name == SEARCH_TOOL and " ".join((call.argument("query") or "").split()) == query


def _note(
    query: str, outcome: Literal["empty", "failed"], text: str, *, error: str | None = None
) -> SearchRecord:
    return SearchRecord(query, outcome, inserted=mk.result_block(text), error=error)


def _repeat_of(record: SearchRecord | None) -> SearchRecord:
    assert record is not None  # the first call with this query was planned before it
    return SearchRecord(record.query, "repeated", inserted=record.inserted)
