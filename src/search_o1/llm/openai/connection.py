"""One model server's HTTP side: the pooled client, the retry policy, deadlines and errors.

Every request the OpenAI client makes (discovery's GETs, completions, tools turns, chat
template rendering) goes through one `Connection`, so they share one connection pool,
one retry policy, one deadline rule and the same typed errors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx

from search_o1._http import RetryPolicy, deadline
from search_o1.errors import BackendError
from search_o1.llm.openai import errors
from search_o1.llm.openai.transport import http_client
from search_o1.text_safety import scrub_count

log = logging.getLogger(__name__)


class Connection:
    """The HTTP client of one server (`base_url`, without a trailing slash).

    `deadline_s` bounds a whole request, `stall_timeout_s` the silence inside a started
    stream; `retry` says what is tried again. The API key is kept only for the header and
    to redact error texts that quote it.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout: httpx.Timeout,
        max_connections: int,
        retry: RetryPolicy,
        deadline_s: float | None,
        stall_timeout_s: float | None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url
        self.retry = retry
        self.deadline_s = deadline_s
        self.stall_timeout_s = stall_timeout_s
        self._secret = api_key
        self._client = http_client(api_key, timeout, max_connections, transport)

    @property
    def client(self) -> httpx.AsyncClient:
        """The pooled client itself (chat template rendering posts through it)."""
        return self._client

    def deadline(self, url: str) -> AbstractAsyncContextManager[None]:
        """The whole-request deadline for a request to `url`."""
        seconds = self.deadline_s
        return deadline(seconds, lambda: errors.overdue(url, seconds or 0.0))

    @asynccontextmanager
    async def open(self, url: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """POST `body` and hold the response open for streaming; transport faults typed."""
        headers = {"Content-Type": "application/json"}
        try:
            async with self._client.stream(
                "POST", url, content=encode(body), headers=headers
            ) as response:
                yield response
        except httpx.TransportError as e:
            raise errors.transport_error(url, e) from None

    async def get(self, url: str) -> httpx.Response:
        """A GET within the deadline; transport faults typed."""
        try:
            async with self.deadline(url):
                return await self._client.get(url)
        except httpx.TransportError as e:
            raise errors.transport_error(url, e) from None

    def http_error(
        self, url: str, response: httpx.Response, model: str | None = None
    ) -> BackendError:
        """The typed error of a non-200 answer (the key redacted if the server quoted it)."""
        return errors.http_error(url, response, model=model, secret=self._secret)

    async def aclose(self) -> None:
        await self._client.aclose()


def encode(body: dict[str, Any]) -> bytes:
    """`body` as UTF-8 JSON (as httpx would write it), lone surrogates sent as U+FFFD.

    A lone surrogate (from a caller's text, or a tool result) cannot be encoded as UTF-8;
    left in, it would fail the request far from where it came in.

    >>> encode({"prompt": "a\\ud800"}).decode()
    '{"prompt":"a\ufffd"}'
    """
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        fixed, count = scrub_count(text)
        log.warning("request body: %d lone surrogate(s) sent as U+FFFD", count)
        return fixed.encode()
