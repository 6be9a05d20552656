"""Reading one streamed (SSE) completion off the connection, and the ways it can break.

A stream is complete when it sent `[DONE]` or a `finish_reason`, and at least one
choice. Anything else is a fault, reported as a BackendError the client may act on:
- a stream with no choice at all (retryable): a 200 that is not a completion;
- `StreamCut` (retryable): the connection dropped mid-body, or the body ended with
  neither, i.e. a proxy or server cut it. It carries the text received so far, so a
  raw-prompt client can keep it and continue the generation from there.
- a stall (not retryable): the stream began and then sent nothing for `stall_s`
  seconds; a stuck server, not a slow one, so it is reported rather than resent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from typing import Any, TypeVar

import httpx

from search_o1.errors import BackendError
from search_o1.llm._reasoning import ChainJoiner
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import errors, wire
from search_o1.types import TextSink

BACKEND = "openai"
# How long to wait for the end of a streamed body after its `[DONE]` (see drain).
_DRAIN_S = 0.25


class StreamCut(BackendError):
    """A stream that broke off before its end; `partial` is what arrived, `pieces` how
    many text pieces (about one token each) it held."""

    def __init__(self, url: str, why: str, partial: wire.Reply, pieces: int) -> None:
        super().__init__(BACKEND, f"{url}: {why}", retryable=True)
        self.partial = partial
        self.pieces = pieces


async def read_stream(
    url: str,
    response: httpx.Response,
    on_text: TextSink,
    *,
    stall_s: float | None,
    thinking: bool = False,
    state: wire.StreamState | None = None,
) -> wire.Reply:
    """The reply in `response`'s SSE body, text pieces passed to `on_text` as they come
    (with `thinking`, reasoning deltas joined into the chain text; see _reasoning).
    `state`: a StreamState of another kind (tools mode's), read the same way."""
    state = state or wire.StreamState(ChainJoiner(thinking))
    sse = wire.SseDecoder()
    chunks = response.aiter_bytes()
    try:
        done = await _pump(url, chunks, state, sse, on_text, stall_s)
    except TimeoutError:
        message = f"{url}: stream stalled: nothing for {stall_s:g} s (raise --stall-timeout?)"
        raise BackendError(BACKEND, message) from None
    except httpx.TimeoutException:
        raise  # the read timeout: the client reports it as such
    except httpx.TransportError as e:
        why = f"connection lost mid-stream ({type(e).__name__})"
        raise StreamCut(url, why, state.reply(), _pieces(state)) from None
    if done:
        await drain(chunks)
    reply = state.reply()
    if not state.parts and reply.finish_reason is None:
        # A well-formed stream without a single choice: no completion, a server fault.
        message = f"{url}: the stream held no completion (no choices)"
        raise BackendError(BACKEND, message, status=200, retryable=True)
    if not done and reply.finish_reason is None:
        why = "stream ended without a finish_reason or [DONE] (cut off)"
        raise StreamCut(url, why, reply, _pieces(state))
    return reply


async def _pump(
    url: str,
    chunks: AsyncIterator[bytes],
    state: wire.StreamState,
    sse: wire.SseDecoder,
    on_text: TextSink,
    stall_s: float | None,
) -> bool:
    """Feed the body to `state`; True when `[DONE]` came. The stall clock starts with
    the first byte: before it, a long prompt may still be being read (the read timeout
    covers that wait)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None) as guard:
        last = -1.0
        async for chunk in chunks:
            now = loop.time()
            # Moving the timer costs a heap operation: do it at most 8 times per period,
            # so a stall is declared after between 7/8 and all of `stall_s`.
            if stall_s is not None and now - last > stall_s / 8:
                guard.reschedule(now + stall_s)
                last = now
            if apply(url, state, sse.feed(chunk), on_text):
                return True
        apply(url, state, sse.flush(), on_text)
    return False


def _pieces(state: wire.StreamState) -> int:
    return sum(1 for part in state.parts if part)


def apply(url: str, state: wire.StreamState, payloads: list[bytes], on_text: TextSink) -> bool:
    """Feed SSE payloads to `state`; True at the `[DONE]` sentinel."""
    for data in payloads:
        if not data:
            continue
        if data == b"[DONE]":
            return True
        try:
            piece = state.feed(json.loads(data))
        except wire.StreamError as e:
            raise BackendError(BACKEND, f"{url}: error in stream: {e}") from None
        except ValueError as e:
            raise malformed(url, e) from None
        if piece:
            on_text(piece)
    return False


async def drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the body's end that follows `[DONE]` (the chunked-encoding terminator).

    httpcore keeps a connection for reuse only when its response was read to the end;
    stopping at `[DONE]` made every streamed request open a new TCP connection. A server
    that holds the stream open after `[DONE]` is cut off after a moment, as before.
    """
    with suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(_DRAIN_S):
            async for _ in chunks:
                pass


def malformed(url: str, error: Exception) -> BackendError:
    """Invalid JSON where a completion was expected: a server fault, retried like a 5xx."""
    return BackendError(
        BACKEND, f"{url}: malformed response from the server: {error}", retryable=True
    )


class Kept:
    """The text of streams cut off midway, kept to be continued (raw prompts only)."""

    def __init__(self) -> None:
        self.text = ""
        self.tokens = 0

    def add(self, cut: StreamCut) -> None:
        self.text += cut.partial.text
        self.tokens += cut.pieces

    def resume(self, request: CompletionRequest, sent: str) -> tuple[CompletionRequest, str]:
        """The request that continues after the kept text: same prompt bytes plus it."""
        if not self.text:
            return request, sent
        left = max(1, request.max_tokens - self.tokens)
        return dataclasses.replace(request, max_tokens=left), sent + self.text

    def join(self, reply: wire.Reply) -> wire.Reply:
        """The continued reply as one: kept text first, token counts shared out."""
        if not self.text:
            return reply
        prompt = reply.prompt_tokens and max(1, reply.prompt_tokens - self.tokens)
        done = reply.completion_tokens
        return dataclasses.replace(
            reply,
            text=self.text + reply.text,
            prompt_tokens=prompt,
            completion_tokens=None if done is None else done + self.tokens,
        )


T = TypeVar("T")


def is_streamed(body: dict[str, Any], response: httpx.Response) -> bool:
    """Whether to read an SSE stream: some servers ignore `stream` and send one JSON body."""
    ctype = response.headers.get("content-type", "")
    return bool(body.get("stream")) and "json" not in ctype and "html" not in ctype


async def read_whole(url: str, response: httpx.Response, parse: Callable[[Any], T]) -> T:
    """A one-body answer, parsed; an HTML page or a body `parse` rejects is a BackendError."""
    await response.aread()
    if wire.is_html(response.headers.get("content-type", ""), response.text):
        raise errors.not_a_completion(url, response)
    try:
        return parse(response.json())
    except ValueError as e:
        raise malformed(url, e) from None
