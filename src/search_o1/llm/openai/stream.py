"""Reading one streamed (SSE) completion off the connection, and the ways it can break.

A stream is complete when it sent `[DONE]` or a `finish_reason`, and at least one
choice. Anything else is a fault, reported as a BackendError the client may act on:
- a stream with no choice at all (retryable): a 200 that is not a completion;
- `StreamCut` (retryable): the connection dropped mid-body, or the body ended with
  neither, i.e. a proxy or server cut it. It carries the text received so far, so a
  raw-prompt client can keep it and continue the generation from there.
- a stall (not retryable): the stream began and then sent nothing for `stall_s`
  seconds; a stuck server, not a slow one, so it is reported rather than resent.

Stop strings are applied here too, whoever else does (`StopWatch`): the moment one
appears in the chain text the reading stops and the reply says so (`client_stop`); the
caller then closes the response, which tells the server to stop generating.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import suppress
from typing import Any, Protocol, TypeVar

import httpx

from search_o1.errors import BackendError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import errors, wire
from search_o1.llm.reasoning import ChainJoiner
from search_o1.text_safety import scrub
from search_o1.types import TextSink

BACKEND = "openai"


class Decoder(Protocol):
    """Splits a streamed body into its JSON payloads (SSE `data:` lines, NDJSON lines)."""

    def feed(self, chunk: bytes) -> list[bytes]: ...

    def flush(self) -> list[bytes]: ...


# How long to wait for the end of a streamed body after its `[DONE]` (see drain).
_DRAIN_S = 0.25


class StreamCut(BackendError):
    """A stream that broke off before its end; `partial` is what arrived, `pieces` how
    many text pieces (about one token each) it held."""

    def __init__(self, url: str, why: str, partial: wire.Reply, pieces: int) -> None:
        super().__init__(BACKEND, f"{url}: {why}", retryable=True)
        self.partial = partial
        self.pieces = pieces


class StopWatch:
    """Watches one reply's chain text for stop strings as it arrives; passes on the text
    before the first one.

    Whether a server applies a stop string inside the thinking differs (vLLM does
    today; hosted APIs apply stops to the answer only, and open vLLM pull requests would
    too; some servers ignore them), so the client applies them itself: a query ends
    where its end marker is, whoever stops. A tail that could be the start of a stop
    string is held back until the next piece decides it, so the text passed on never
    holds one. Lone surrogates are passed on as U+FFFD (a live display could not print
    them).
    """

    def __init__(self, stops: Sequence[str], sink: TextSink) -> None:
        self._stops = tuple(s for s in stops if s)
        self._sink = sink
        self._held = ""
        self.hit: str | None = None  # the stop string found, once found

    def feed(self, piece: str) -> bool:
        """Take the next piece; True once a stop string has appeared."""
        if self.hit is not None:
            return True
        text = self._held + piece
        found = [(i, s) for s in self._stops if (i := text.find(s)) >= 0]
        if found:
            cut, self.hit = min(found)
            self._held = ""
            self._pass(text[:cut])
            return True
        keep = max((_partial(text, s) for s in self._stops), default=0)
        self._held = text[len(text) - keep :] if keep else ""
        self._pass(text[: len(text) - keep])
        return False

    def flush(self) -> None:
        """The reply ended without a stop string: pass on what was held back."""
        if self.hit is None:
            self._pass(self._held)
        self._held = ""

    def _pass(self, text: str) -> None:
        if text:
            self._sink(scrub(text))


def _partial(text: str, stop: str) -> int:
    """The length of the longest end of `text` that begins `stop` (0: none).

    >>> _partial("abc<|end", "<|end_search_query|>"), _partial("abc", "<|end|>")
    (5, 0)
    """
    for size in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:size]):
            return size
    return 0


async def read_stream(
    url: str,
    response: httpx.Response,
    on_text: TextSink,
    *,
    stall_s: float | None,
    thinking: bool = False,
    state: wire.StreamState | None = None,
    stops: Sequence[str] = (),
    decoder: Decoder | None = None,
) -> wire.Reply:
    """The reply in `response`'s SSE body, text pieces passed to `on_text` as they come
    (with `thinking`, reasoning deltas joined into the chain text; see llm.reasoning).
    `state`: a StreamState of another kind (tools mode's), read the same way.
    `stops`: the reading ends where one appears in the chain text (the reply's
    `client_stop` names it; the caller closes the response, so the server stops).
    `decoder`: how the body splits into JSON payloads (default: SSE)."""
    state = state or wire.StreamState(ChainJoiner(thinking))
    watch = StopWatch(stops, on_text)
    sse = decoder or wire.SseDecoder()
    chunks = response.aiter_bytes()
    try:
        done = await _pump(url, chunks, state, sse, watch, stall_s)
    except TimeoutError:
        message = f"{url}: stream stalled: nothing for {stall_s:g} s (raise --stall-timeout?)"
        raise BackendError(BACKEND, message) from None
    except httpx.TimeoutException:
        raise  # the read timeout: the client reports it as such
    except httpx.TransportError as e:
        why = f"connection lost mid-stream ({type(e).__name__})"
        raise StreamCut(url, why, state.reply(), _pieces(state)) from None
    if watch.hit is not None:
        return dataclasses.replace(state.reply(), client_stop=watch.hit)
    watch.flush()
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
    sse: Decoder,
    watch: StopWatch,
    stall_s: float | None,
) -> bool:
    """Feed the body to `state`; True when `[DONE]` came or a stop string appeared. The
    stall clock starts with the first byte: before it, a long prompt may still be being
    read (the read timeout covers that wait)."""
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
            if apply(url, state, sse.feed(chunk), watch):
                return True
        apply(url, state, sse.flush(), watch)
    return False


def _pieces(state: wire.StreamState) -> int:
    return sum(1 for part in state.parts if part)


def apply(url: str, state: wire.StreamState, payloads: list[bytes], watch: StopWatch) -> bool:
    """Feed SSE payloads to `state`; True at the `[DONE]` sentinel or a stop string."""
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
        if piece and watch.feed(piece):
            return True
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
    """Invalid JSON where a completion was expected, or a turn the server cut short: a
    server fault, retried like a 5xx. A filtered reply is no fault: it is not retried."""
    if isinstance(error, wire.Filtered):
        return BackendError(BACKEND, f"{url}: {error}")
    what = "" if isinstance(error, wire.CutByServer) else "malformed response from the server: "
    return BackendError(BACKEND, f"{url}: {what}{error}", retryable=True)


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
