"""`OpenAILLM.converse`: one chat turn with function tools, over the client's connection.

The request, retry, deadline and error handling are the client's own (one retry policy,
one deadline per request, the same typed errors); only the body (llm/tools.py) and the
reply differ from a text completion: a streamed reply is read by the same SSE reader
with a `ToolStreamState`, a whole one by `parse_tool_reply`. `run_turn` is shared with
the Responses API's wire (_openai_responses), which differs only in body and reply.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from search_o1.chat import ToolReply
from search_o1.errors import BackendError
from search_o1.llm import _openai_wire as wire
from search_o1.llm import tools as tool_wire
from search_o1.llm._openai_discovery import discover
from search_o1.llm._openai_stream import is_streamed, malformed, read_stream, read_whole
from search_o1.tokens import estimate_tokens
from search_o1.types import TextSink

if TYPE_CHECKING:
    from search_o1.llm.openai import OpenAILLM


class TurnState(Protocol):
    """What every wire's stream state is besides a `wire.StreamState`: a turn's reply."""

    def tool_reply(self) -> ToolReply: ...


# A wire's request body: (request, model, stream, server kind, send our extensions) -> JSON.
BodyOf = Callable[[tool_wire.ToolRequest, str | None, bool, wire.ServerKind, bool], dict[str, Any]]


@dataclass(frozen=True)
class TurnWire:
    """One wire of a tools turn: where it goes, its body, and how its reply is read (a
    stream state for SSE, a parser for one body); `sent` names the body's conversation."""

    path: str
    body: BodyOf
    stream_state: Callable[[TextSink], wire.StreamState]
    parse: Callable[[Any], ToolReply]
    sent: str


def _chat_body(
    request: tool_wire.ToolRequest, model: str | None, stream: bool, kind: wire.ServerKind,
    extras: bool,
) -> dict[str, Any]:  # fmt: skip
    return tool_wire.tool_body(request, model=model, stream=stream, kind=kind, extras=extras)


CHAT = TurnWire(
    "/chat/completions", _chat_body, tool_wire.ToolStreamState, tool_wire.parse_tool_reply,
    "messages",
)  # fmt: skip


async def converse(
    llm: OpenAILLM,
    request: tool_wire.ToolRequest,
    turn: TurnWire,
    *,
    on_text: TextSink | None = None,
    on_reasoning: TextSink | None = None,
) -> ToolReply:
    """POST one tools turn over `turn`'s wire (see `run_turn`)."""
    info = await discover(llm)
    stream = on_text is not None or on_reasoning is not None

    def body() -> dict[str, Any]:
        sent = turn.body(request, llm.model, stream, info.kind, llm._fields.extras)
        return llm._fields.apply(sent, kind=info.kind)

    return await run_turn(llm, llm.base_url + turn.path, body, turn, (on_text, on_reasoning))


async def run_turn(
    llm: OpenAILLM,
    url: str,
    body: Callable[[], dict[str, Any]],
    turn: TurnWire,
    sinks: tuple[TextSink | None, TextSink | None],
) -> ToolReply:
    """One tools turn with the client's retries, whatever its wire (`turn` reads it):
    a refused field is learned and the turn resent, unless text was already shown live
    (`sinks`: answer text, thinking); usage is estimated from the conversation sent
    when the server sent none."""
    started = time.monotonic()
    shown: list[str] = []

    def sink(target: TextSink | None) -> TextSink:
        def show(piece: str) -> None:
            if target is not None:
                shown.append(piece)
                target(piece)

        return show

    async def attempt() -> ToolReply:
        try:
            return await _post_once(llm, url, body(), turn, (sink(sinks[0]), sink(sinks[1])))
        except BackendError as e:
            if not shown and llm._learn(url, e):
                return await attempt()
            raise llm._unless_shown(e, shown) from None

    reply = await llm.retry.call(attempt, what=url)
    return _measured(reply, body()[turn.sent], started)


def _measured(reply: ToolReply, messages: Any, started: float) -> ToolReply:
    """`reply` with its latency, and token counts estimated where the server sent none."""
    sent = reply.reasoning + reply.content + "".join(c.arguments for c in reply.tool_calls)
    return dataclasses.replace(
        reply,
        prompt_tokens=reply.prompt_tokens or estimate_tokens(json.dumps(messages)),
        completion_tokens=reply.completion_tokens or estimate_tokens(sent),
        latency_s=time.monotonic() - started,
    )


async def _post_once(
    llm: OpenAILLM, url: str, body: dict[str, Any], turn: TurnWire, sinks: tuple[TextSink, TextSink]
) -> ToolReply:
    on_text, on_reasoning = sinks
    async with llm._deadline(url), llm._open(url, body) as response:
        if response.status_code != 200:
            await response.aread()
            raise llm._http_error(url, response)
        if is_streamed(body, response):
            state = turn.stream_state(on_reasoning)
            await read_stream(url, response, on_text, stall_s=llm.stall_timeout_s, state=state)
            try:
                return cast(TurnState, state).tool_reply()
            except ValueError as e:
                raise malformed(url, e) from None
        reply = await read_whole(url, response, turn.parse)
        if body.get("stream"):  # a server that ignored `stream`: show the turn at once
            for show, piece in ((on_reasoning, reply.reasoning), (on_text, reply.content)):
                if piece:
                    show(piece)
        return reply
