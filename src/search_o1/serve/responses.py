"""The two ways a chat completion goes out: one JSON body, or a stream of SSE chunks.

Both watch the connection while the run works: when the client goes away, the run task
is cancelled at once (which cancels the model request it is waiting on), rather than
being noticed only at the next write, which could be minutes into a long generation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from search_o1.errors import ConfigError
from search_o1.serve import chat_completions as wire
from search_o1.serve.runs import Run
from search_o1.sources import answer_sources
from search_o1.types import FinishReason, SearchFinished, SearchStarted, TextDelta, Trace


async def _wait_disconnect(receive: Receive) -> None:
    """Returns when the client disconnects (the request body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _failure(run: Run) -> tuple[int, dict[str, Any]] | None:
    """(status, error body) when the run did not produce a usable trace, else None."""
    error = run.task.exception()
    if isinstance(error, ConfigError):
        return 400, wire.error_body(str(error), type="invalid_request_error")
    if error is not None:
        return 500, wire.error_body(
            "internal error while running the question", type="server_error"
        )
    trace = run.task.result()
    if trace.finish_reason is FinishReason.ERROR:
        message = f"the model server failed: {trace.error or 'unknown error'}"
        return 502, wire.error_body(message, type="server_error", code="upstream_error")
    overflow = trace.prompt_too_long
    if overflow is not None:  # as vLLM answers a prompt over its window: the client's to fix
        return 400, wire.error_body(
            overflow, type="invalid_request_error", code="context_length_exceeded"
        )
    return None


class CompletionResponse(Response):
    """Non-streaming: wait for the run (or the client leaving), then one JSON body."""

    def __init__(self, run: Run, maker: wire.ChunkMaker) -> None:
        self.run = run
        self.maker = maker
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watcher = asyncio.create_task(_wait_disconnect(receive))
        try:
            await asyncio.wait({self.run.task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
        if not self.run.task.done():  # the client left first: nobody will read an answer
            self.run.cancel()
            await asyncio.gather(self.run.task, return_exceptions=True)
            return
        await self._body()(scope, receive, send)

    def _body(self) -> Response:
        failure = _failure(self.run)
        if failure is not None:
            return JSONResponse(failure[1], status_code=failure[0])
        trace = self.run.task.result()
        body = wire.completion_body(
            trace,
            completion_id=self.maker.completion_id,
            model=self.maker.model,
            created=self.maker.created,
            queued_s=self.run.ticket.queued_s,
        )
        return JSONResponse(body)


class EventStreamResponse(Response):
    """Streaming: reasoning deltas, search events, the answer, usage, then [DONE]."""

    media_type = "text/event-stream"

    def __init__(self, run: Run, maker: wire.ChunkMaker, *, include_usage: bool) -> None:
        self.run = run
        self.maker = maker
        self.include_usage = include_usage
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),  # proxies must not hold the stream back
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        watcher = asyncio.create_task(_wait_disconnect(receive))
        watcher.add_done_callback(lambda t: None if t.cancelled() else self.run.cancel())
        try:
            async for data in self._chunks():
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write; the finally below cancels the run
        finally:
            watcher.cancel()
            if not self.run.task.done():
                self.run.cancel()
            await asyncio.gather(self.run.task, return_exceptions=True)

    async def _chunks(self) -> AsyncIterator[bytes]:
        m = self.maker
        yield wire.sse(m.chunk({"role": "assistant"}))
        async for event in self.run.events():
            if isinstance(event, TextDelta) and event.text:
                yield wire.sse(m.chunk({"reasoning_content": event.text}))
            elif isinstance(event, SearchStarted):
                started = {"type": "search_started", "query": event.query}
                yield wire.sse(m.chunk(extension=started))
            elif isinstance(event, SearchFinished):
                yield wire.sse(m.chunk(extension=wire.search_event(event.record)))
        if self.run.task.cancelled():
            return
        failure = _failure(self.run)
        if failure is not None:
            # Headers went out long ago; OpenAI clients raise on an `error` chunk.
            body = failure[1]
            body["error"]["code"] = body["error"]["code"] or failure[0]
            yield wire.sse(body)
            yield wire.DONE
            return
        async for data in self._ending(self.run.task.result()):
            yield data

    async def _ending(self, trace: Trace) -> AsyncIterator[bytes]:
        m = self.maker
        content = wire.answer_text(trace)
        sources = answer_sources(trace)
        cited = wire.citations(sources)
        delta = {"content": content, "annotations": wire.url_annotations(content, sources)}
        # `citations` rides on every chunk from the answer on, as Perplexity's stream
        # has it: clients read it off whichever chunk they keep, often the last.
        yield wire.sse({**m.chunk(delta), "citations": cited})
        done = wire.done_event(trace, queued_s=self.run.ticket.queued_s)
        finish = m.chunk(finish=wire.finish_reason(trace), extension=done)
        yield wire.sse({**finish, "citations": cited})
        if self.include_usage:
            yield wire.sse({**m.usage_chunk(trace), "citations": cited})
        yield wire.DONE
