"""One line per HTTP request: method, path, status, and for a question its searches,
tokens and seconds, so whoever runs `serve` sees each request as it ends.

The chat route leaves its run in the request's state (`RUN_KEY`); this middleware reads
the finished trace from it once the response has gone out (a stream: its last chunk).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from search_o1.text_safety import terminal_text
from search_o1.types import Trace

__all__ = ["RUN_KEY", "RequestLog", "request_line"]

RUN_KEY = "search_o1_run"  # the key under scope["state"] where the chat route puts its run


def request_line(
    method: str, path: str, status: int | None, seconds: float, trace: Trace | None = None
) -> str:
    """The log line of one request.

    >>> request_line("GET", "/v1/models", 200, 0.0012)
    'GET /v1/models 200 · 0.0s'
    >>> request_line("POST", "/v1/chat/completions", None, 3.14)
    'POST /v1/chat/completions (client left) · 3.1s'

    The path is the client's (percent-escapes decoded), printed on the operator's
    terminal: its control codes show as U+FFFD.

    >>> request_line("GET", "/\x1b[2J", 404, 0.0)
    'GET /\ufffd[2J 404 · 0.0s'
    """
    shown = terminal_text(path)
    parts = [f"{method} {shown} {status if status is not None else '(client left)'}"]
    if trace is not None:
        generated, read = trace.usage.completion_tokens, trace.reader_usage.completion_tokens
        finish = trace.finish_reason.value if trace.finish_reason else "unfinished"
        parts += [
            f"searches {trace.searches_summary}",
            f"tokens {generated} generated, {read} by the reader",
            f"finish {finish}",
        ]
    parts.append(f"{seconds:.1f}s")
    return " · ".join(parts)


class RequestLog:
    """Calls `emit` with `request_line(...)` after each HTTP request."""

    def __init__(self, app: ASGIApp, *, emit: Callable[[str], None]) -> None:
        self.app = app
        self.emit = emit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            trace = _trace(scope.get("state", {}).get(RUN_KEY))
            seconds = time.monotonic() - started
            self.emit(request_line(scope["method"], scope["path"], status, seconds, trace))


def _trace(run: Any) -> Trace | None:
    """The run's trace when it finished (not cancelled, no exception), else None."""
    task = getattr(run, "task", None)
    if task is None or not task.done() or task.cancelled() or task.exception() is not None:
        return None
    trace: Trace = task.result()
    return trace
