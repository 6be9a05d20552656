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
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from search_o1.chat import ToolReply
from search_o1.errors import BackendError
from search_o1.llm import tools as tool_wire
from search_o1.llm._openai_discovery import discover
from search_o1.llm._openai_stream import is_streamed, read_stream, read_whole
from search_o1.tokens import estimate_tokens
from search_o1.types import TextSink

if TYPE_CHECKING:
    from search_o1.llm.openai import OpenAILLM

log = logging.getLogger(__name__)
# Reads one turn off the connection: (client, url, body, on_text, on_reasoning) -> reply.
PostTurn = Callable[["OpenAILLM", str, dict[str, Any], TextSink, TextSink], Awaitable[ToolReply]]


async def converse(
    llm: OpenAILLM,
    request: tool_wire.ToolRequest,
    *,
    on_text: TextSink | None = None,
    on_reasoning: TextSink | None = None,
) -> ToolReply:
    """POST one chat-completions tools request (see `run_turn`)."""
    info = await discover(llm)
    stream = on_text is not None or on_reasoning is not None

    def body() -> dict[str, Any]:
        sent = tool_wire.tool_body(
            request, model=llm.model, stream=stream, kind=info.kind, extras=llm._fields.extras
        )
        return llm._fields.apply(sent, kind=info.kind)

    url = llm.base_url + "/chat/completions"
    return await run_turn(llm, url, body, _post_once, (on_text, on_reasoning), "messages")


async def run_turn(
    llm: OpenAILLM,
    url: str,
    body: Callable[[], dict[str, Any]],
    post: PostTurn,
    sinks: tuple[TextSink | None, TextSink | None],
    sent_key: str,
) -> ToolReply:
    """One tools turn with the client's retries, whatever its wire (`post` reads it):
    a refused field is learned and the turn resent, unless text was already shown live
    (`sinks`: answer text, thinking); usage is estimated from `body()[sent_key]` when
    the server sent none."""
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
            return await post(llm, url, body(), sink(sinks[0]), sink(sinks[1]))
        except BackendError as e:
            if not shown and llm._learn(url, e):
                return await attempt()
            raise llm._unless_shown(e, shown) from None

    reply = await llm.retry.call(attempt, what=url)
    return _measured(reply, body()[sent_key], started)


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
    llm: OpenAILLM, url: str, body: dict[str, Any], on_text: TextSink, on_reasoning: TextSink
) -> ToolReply:
    async with llm._deadline(url), llm._open(url, body) as response:
        if response.status_code != 200:
            await response.aread()
            raise llm._http_error(url, response)
        if is_streamed(body, response):
            state = tool_wire.ToolStreamState(on_reasoning)
            await read_stream(url, response, on_text, stall_s=llm.stall_timeout_s, state=state)
            return state.tool_reply()
        reply = await read_whole(url, response, tool_wire.parse_tool_reply)
        if body.get("stream"):
            for show, piece in ((on_reasoning, reply.reasoning), (on_text, reply.content)):
                if piece:
                    show(piece)
        return reply
