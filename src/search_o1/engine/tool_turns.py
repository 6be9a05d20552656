"""Tools mode (`--api-mode tools`): turns of a chain whose model searches by calling a
function tool instead of writing query markers.

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
from typing import Literal

from search_o1 import markers as mk
from search_o1.engine.answering import QueryAnswerer
from search_o1.engine.loop import Turn
from search_o1.engine.options import EngineOptions
from search_o1.engine.state import ChainState
from search_o1.errors import ConfigError
from search_o1.llm import reasoning as rsn
from search_o1.llm.base import LLM
from search_o1.llm.tools import ToolLLM, ToolRequest
from search_o1.tool_chat import (
    SEARCH_TOOL,
    ChatMessage,
    ToolCall,
    ToolChoice,
    ToolReply,
    search_tool,
)
from search_o1.types import Completion, SearchFinished, SearchRecord, SearchStarted, TextDelta

__all__ = ["ToolTurns", "tool_llm"]


def tool_llm(llm: LLM) -> ToolLLM:
    """`llm` as a tool-calling model, or a ConfigError saying why it is not one."""
    if not isinstance(llm, ToolLLM):
        raise ConfigError(
            f"--api-mode tools needs a chat server that takes function tools; the "
            f"{llm.name!r} backend cannot call tools"
        )
    return llm


class ToolTurns:
    """A `TurnDriver` for chat with a `search` function tool."""

    def __init__(self, llm: ToolLLM, options: EngineOptions, answerer: QueryAnswerer) -> None:
        self.llm = llm
        self.options = options
        self.answerer = answerer

    async def open(self, state: ChainState) -> bool:
        """The conversation starts with the method's opening as the user's message."""
        state.trace.messages.append(ChatMessage("user", state.prompt.messages[0].content))
        return True

    async def turn(self, state: ChainState, index: int, max_tokens: int) -> Turn:
        reply = await self._converse(state, max_tokens, self._choice(state, index))
        text = _turn_text(state, reply)
        state.append(text, generated=True)
        state.trace.messages.append(reply.message())
        completion = _completion(reply, text)
        if reply.finish != "tool_calls":
            return Turn(text, completion)
        records = await self._answer_calls(state, reply.tool_calls)
        for call, record in zip(reply.tool_calls, records, strict=True):
            state.trace.messages.append(
                ChatMessage("tool", _tool_content(record), tool_call_id=call.id)
            )
        return Turn(text, completion, tuple(records))

    def _choice(self, state: ChainState, index: int) -> ToolChoice:
        """`required` opens a forced-search chain; past the search limit no call is offered."""
        if state.searches >= self.options.limits.max_searches:
            return "none"
        if index == 0 and self.options.force_search and state.method.forceable:
            return "required"
        return "auto"

    async def _converse(self, state: ChainState, max_tokens: int, choice: ToolChoice) -> ToolReply:
        request = ToolRequest(
            tuple(state.trace.messages),
            (search_tool(),),
            choice,
            max_tokens=max_tokens,
            sampling=self.options.sampling,
        )
        live = _Live(state)
        async with state.phase("generate"):
            reply = await self.llm.converse(
                request, on_text=live.content, on_reasoning=live.reasoning
            )
        state.count_usage(reply.prompt_tokens, reply.completion_tokens)
        return reply

    async def _answer_calls(
        self, state: ChainState, calls: Sequence[ToolCall]
    ) -> list[SearchRecord]:
        """Answer every call of one turn: searches run concurrently, results go in call
        order.

        The limits are applied in call order first, as if the calls had come one by one:
        a query already answered (in this chain or earlier in this turn) is "repeated", a
        call past the search limit is told so; only then do the remaining searches start.
        """
        plans = [self._plan(state, call, i, calls) for i, call in enumerate(calls)]
        for plan in plans:
            state.emit(SearchStarted(plan.query))
        todo = [p for p in plans if p.record is None and p.first is None]
        mode = self.answerer.mode(state)
        found = await asyncio.gather(
            *(self.answerer.run_search(state, p.query, mode=mode) for p in todo)
        )
        for plan, record in zip(todo, found, strict=True):
            plan.record = record
            if record.outcome == "searched":
                state.results[plan.query] = record.inserted
        records = []
        for plan in plans:
            record = plan.record or _repeat_of(plans[plan.first or 0].record)
            state.append(mk.BEGIN_QUERY + plan.query + mk.END_QUERY)
            state.append(record.inserted)
            state.emit(SearchFinished(record))
            records.append(record)
        return records

    def _plan(
        self, state: ChainState, call: ToolCall, index: int, calls: Sequence[ToolCall]
    ) -> _Planned:
        query = " ".join((call.argument("query") or "").split())
        if call.name != SEARCH_TOOL:
            note = f"There is no tool called {call.name!r}; the only tool is `{SEARCH_TOOL}`."
            return _Planned(query or call.name, _note(query, "failed", note, error=note))
        if not query:
            note = "The search query was empty. Call the search tool with a query, or continue."
            return _Planned(query, _note(query, "empty", note))
        earlier = [j for j in range(index) if _same_query(calls[j], query)]
        if earlier and query not in state.results:
            return _Planned(query, first=earlier[0])
        # The marker path's one rule: repeated, placeholder, over the limit (either order).
        record = self.answerer.refusal(state, query)
        if record is None:
            state.searches += 1
        return _Planned(query, record)


class _Live:
    """Streams a turn to the live view joined as `_turn_text` joins it."""

    def __init__(self, state: ChainState) -> None:
        self.state = state
        self.joiner = rsn.ChainJoiner(rsn.thinking_open(state.prompt.continuation))

    def reasoning(self, piece: str) -> None:
        self.state.emit(TextDelta(self.joiner.reasoning(piece)))

    def content(self, piece: str) -> None:
        self.state.emit(TextDelta(self.joiner.content(piece)))


def _turn_text(state: ChainState, reply: ToolReply) -> str:
    """The model's own words of one turn as raw chain text, as a thinking model writes
    them in marker mode: the thinking opens `<think>` (and stays open across tool calls),
    the answer text closes it. The answer may be in either."""
    thinking = rsn.thinking_open(state.prompt.continuation)
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


@dataclass
class _Planned:
    """One call, and how it will be answered: `record` now, or a search to run."""

    query: str
    record: SearchRecord | None = None
    first: int | None = None  # an earlier call of this turn with the same query


def _same_query(call: ToolCall, query: str) -> bool:
    return call.name == SEARCH_TOOL and " ".join((call.argument("query") or "").split()) == query


def _note(
    query: str, outcome: Literal["empty", "failed"], text: str, *, error: str | None = None
) -> SearchRecord:
    return SearchRecord(query, outcome, inserted=mk.result_block(text), error=error)


def _repeat_of(record: SearchRecord | None) -> SearchRecord:
    assert record is not None  # the first call with this query was planned before it
    return SearchRecord(record.query, "repeated", inserted=record.inserted)
