"""What every HTTP client in the package shares (model servers, search APIs, pages).

One user agent, one Retry-After parser, one retry policy, one deadline rule and one
capped body reader, so the model client, the search clients and the endpoint pool back
off, give up and report in the same way.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx

from search_o1.errors import BackendError

__all__ = [
    "USER_AGENT",
    "RetryPolicy",
    "Sleep",
    "deadline",
    "read_capped",
    "retry_after_s",
    "ssl_context",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

USER_AGENT = "search-o1/0.1 (research agent; +https://github.com/search-o1)"


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's roots, SSL_CERT_FILE honoured), built once.

    Loading the roots takes about 45 ms, and every client or transport would otherwise
    load them again: opening a pipeline builds four or five. A context is safe to share.
    """
    return httpx.create_ssl_context()


def retry_after_s(header: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date).

    None when absent or unreadable; never negative.

    >>> retry_after_s("2"), retry_after_s("soon"), retry_after_s(None)
    (2.0, None, None)
    """
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(header).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before trying a failed request again.

    A BackendError with `retryable` set is tried again up to `retries` times. The wait
    is the server's Retry-After when it sent one (capped at `max_wait_s`: a server asking
    for an hour is not waited for), else exponential back-off from `backoff_s`, capped at
    `max_backoff_s`, with jitter so that clients which failed together do not retry
    together. `sleep` is injectable so tests can record waits instead of waiting.

    >>> p = RetryPolicy(backoff_s=1.0, max_backoff_s=4.0, jitter=False)
    >>> [p.delay(n, None) for n in range(4)], p.delay(0, 2.5)
    ([1.0, 2.0, 4.0, 4.0], 2.5)
    """

    retries: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_wait_s: float = 120.0
    jitter: bool = True
    sleep: Sleep = asyncio.sleep

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (0 for the first)."""
        if retry_after is not None:
            return min(retry_after, self.max_wait_s)
        backoff = min(self.max_backoff_s, self.backoff_s * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2) if self.jitter else backoff

    async def call(self, attempt: Callable[[], Awaitable[T]], *, what: str) -> T:
        """Run `attempt` until it succeeds, fails for good, or the retries run out."""
        for tries in itertools.count():
            try:
                return await attempt()
            except BackendError as e:
                if not e.retryable or tries >= self.retries:
                    raise
                wait = self.delay(tries, e.retry_after)
                log.info("%s failed (%s); retry %d in %.2fs", what, e, tries + 1, wait)
                await self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover


@asynccontextmanager
async def deadline(seconds: float | None, error: Callable[[], BackendError]) -> AsyncIterator[None]:
    """Bound a whole request (connect, headers, every body byte) by wall-clock time.

    httpx's read timeout restarts on every byte, so a server that drips one byte a
    second never trips it; this does. On expiry `error()` is raised (not retryable
    unless it says so). None means no deadline.
    """
    if seconds is None:
        yield
        return
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError:
        raise error() from None


async def read_capped(response: httpx.Response, cap: int) -> bytes | None:
    """The body of a streamed response, or None when it is larger than `cap` bytes.

    Stops reading at the cap, whatever Content-Length said (it may be absent or lie).
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
