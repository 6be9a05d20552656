"""One tools turn (`OpenAILLM.converse`) over the client's connection, whatever its wire.

The request, retry, deadline and error handling are the client's own (one retry policy,
one deadline per request, the same typed errors); only the body (llm/tools.py) and the
reply differ from a text completion: a streamed reply is read by the same SSE reader
with the wire's stream state, a whole one by its parser. `CHAT` is chat completions'
wire (tool_wire); the Responses API's (responses.py) differs only in body and reply.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from search_o1.errors import BackendError
from search_o1.llm.openai import tool_wire, wire
from search_o1.llm.openai.connection import Connection
from search_o1.llm.openai.discovery import Discovery
from search_o1.llm.openai.errors import unless_shown
from search_o1.llm.openai.fields import FieldLearner
from search_o1.llm.openai.stream import is_streamed, malformed, read_stream, read_whole
from search_o1.llm.tools import ToolRequest
from search_o1.text_safety import scrub
from search_o1.tokens import estimate_tokens
from search_o1.tool_chat import ToolReply
from search_o1.types import TextSink


class TurnState(Protocol):
    """What every wire's stream state is besides a `wire.StreamState`: a turn's reply."""

    def tool_reply(self) -> ToolReply: ...


# A wire's request body: (request, model, stream, server kind, send our extensions) -> JSON.
BodyOf = Callable[[ToolRequest, str | None, bool, wire.ServerKind, bool], dict[str, Any]]


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
    request: ToolRequest, model: str | None, stream: bool, kind: wire.ServerKind, extras: bool
) -> dict[str, Any]:
    return tool_wire.tool_body(request, model=model, stream=stream, kind=kind, extras=extras)


CHAT = TurnWire(
    "/chat/completions",
    _chat_body,
    tool_wire.ToolStreamState,
    tool_wire.parse_tool_reply,
    "messages",
)


@dataclass(frozen=True)
class TurnParts:
    """The client's parts a tools turn goes through: its connection, what the server is,
    and the fields it refused."""

    connection: Connection
    discovery: Discovery
    fields: FieldLearner


async def converse(
    parts: TurnParts,
    request: ToolRequest,
    turn: TurnWire,
    *,
    on_text: TextSink | None = None,
    on_reasoning: TextSink | None = None,
) -> ToolReply:
    """POST one tools turn over `turn`'s wire, with the client's retries: a refused field
    is learned and the turn resent, unless text was already shown live; usage is
    estimated from the conversation sent when the server sent none."""
    info = await parts.discovery.info()
    stream = on_text is not None or on_reasoning is not None
    conn, fields = parts.connection, parts.fields
    url = conn.base_url + turn.path
    started = time.monotonic()
    shown: list[str] = []

    def body() -> dict[str, Any]:
        sent = turn.body(request, parts.discovery.model, stream, info.kind, fields.extras)
        return fields.apply(sent, kind=info.kind)

    def sink(target: TextSink | None) -> TextSink:
        def show(piece: str) -> None:
            if target is not None:
                shown.append(piece)
                target(piece)

        return show

    async def attempt() -> ToolReply:
        try:
            sinks = (sink(on_text), sink(on_reasoning))
            return await _post_once(parts, url, body(), turn, sinks)
        except BackendError as e:
            if not shown and fields.learn(url, e):
                return await attempt()
            raise unless_shown(e, shown) from None

    reply = await conn.retry.call(attempt, what=url)
    return _measured(reply, body()[turn.sent], started)


def _measured(reply: ToolReply, messages: Any, started: float) -> ToolReply:
    """`reply` with its latency, token counts estimated where the server sent none, and
    lone surrogates in its text made U+FFFD (they could not be written out later)."""
    sent = reply.reasoning + reply.content + "".join(c.arguments for c in reply.tool_calls)
    calls = tuple(dataclasses.replace(c, arguments=scrub(c.arguments)) for c in reply.tool_calls)
    return dataclasses.replace(
        reply,
        content=scrub(reply.content),
        reasoning=scrub(reply.reasoning),
        tool_calls=calls,
        prompt_tokens=reply.prompt_tokens or estimate_tokens(json.dumps(messages)),
        completion_tokens=reply.completion_tokens or estimate_tokens(sent),
        latency_s=time.monotonic() - started,
    )


async def _post_once(
    parts: TurnParts,
    url: str,
    body: dict[str, Any],
    turn: TurnWire,
    sinks: tuple[TextSink, TextSink],
) -> ToolReply:
    on_text, on_reasoning = sinks
    conn = parts.connection
    async with conn.deadline(url), conn.open(url, body) as response:
        if response.status_code != 200:
            await response.aread()
            raise conn.http_error(url, response, parts.discovery.model)
        if is_streamed(body, response):
            state = turn.stream_state(on_reasoning)
            await read_stream(url, response, on_text, stall_s=conn.stall_timeout_s, state=state)
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
