"""What every HTTP search provider shares: keys, timeouts, retries, rate limits, errors.

A provider subclass says only how to build its request and how to read its response
(`build_request`, and `fields`, a declared `FieldMap`, or `parse` for a shape no map
covers); this base sends it, retries 429/5xx/connection errors by the
package's one RetryPolicy (honouring Retry-After), spaces requests to the provider's rate
limit, bounds each request by a deadline and its body by a size cap, and turns every
failure into a BackendError that never contains the key. `transport` lets wire-format
tests answer with `httpx.MockTransport`.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from search_o1._http import (
    USER_AGENT,
    RetryPolicy,
    deadline,
    read_capped,
    retry_after_s,
    ssl_context,
)
from search_o1.errors import BackendError, ConfigError
from search_o1.search.base import scrub_hits
from search_o1.types import Hit

__all__ = ["FieldMap", "HTTPSearch", "RateLimiter", "Request", "clean_snippet"]

SEARCH_TIMEOUT_S = 20.0  # the paper's Bing timeout, per read
# The whole request, every byte included: a server that drips its answer is given up on.
SEARCH_DEADLINE_S = 20.0  # the whole request: the paper gave Bing 20 s
# Result pages are a few kB to a few hundred kB; a bigger body is a fault, not results.
MAX_RESPONSE_BYTES = 5_000_000
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    params: dict[str, Any] = field(default_factory=dict)
    json: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def clean_snippet(text: Any) -> str:
    """Provider snippets may carry highlight tags (<strong>) and entities: plain text."""
    if not isinstance(text, str):
        return ""
    return " ".join(html.unescape(_TAG.sub("", text)).split())


@dataclass(frozen=True)
class FieldMap:
    """Where a provider's JSON keeps its results, and each hit's fields in a result.

    `results`: keys from the top of the response down to the list of results (a missing
    level is no results). In each result: `url` (required: it is the hit's id), `title`
    and `snippet` (tags and entities removed), `date` (the first of these keys with a
    value, cut to `date_chars`), `score` (a number, else none).

    >>> m = FieldMap(("web", "results"), title="name", snippet="text", date=("age",))
    >>> [(h.url, h.title, h.date) for h in m.hits({"web": {"results": [
    ...     {"url": "http://a/", "name": "<b>A</b> &amp; B", "age": "2024"}]}}, "x")]
    [('http://a/', 'A & B', '2024')]
    >>> m.hits({"web": None}, "x")
    []
    """

    results: tuple[str, ...]
    title: str
    snippet: str
    url: str = "url"
    date: tuple[str, ...] = ()
    date_chars: int | None = None
    score: str | None = None

    def hits(self, data: Any, source: str) -> list[Hit]:
        """The hits of one response. A wrong shape raises KeyError or AttributeError."""
        node = data
        for key in self.results:
            node = (node or {}).get(key)
        return [self._hit(r, source) for r in node or []]

    def _hit(self, r: dict[str, Any], source: str) -> Hit:
        date = next((r[k] for k in self.date if r.get(k)), None)
        score = r.get(self.score) if self.score else None
        return Hit(
            id=r[self.url],
            title=clean_snippet(r.get(self.title)),
            url=r[self.url],
            snippet=clean_snippet(r.get(self.snippet)),
            score=float(score) if isinstance(score, int | float) else None,
            date=date[: self.date_chars] if date and self.date_chars else date,
            source=source,
        )


class RateLimiter:
    """Spaces calls at least 1/rate seconds apart (per backend instance)."""

    def __init__(self, rate_per_s: float | None) -> None:
        self._interval = 1.0 / rate_per_s if rate_per_s else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self._interval:
            return
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self._interval
        if delay > 0:
            await asyncio.sleep(delay)


class HTTPSearch:
    """Base for providers answering JSON over HTTP. Subclasses set the class constants."""

    name: ClassVar[str]
    default_endpoint: ClassVar[str | None] = None  # None: --search-endpoint is required
    key_env: ClassVar[str | None] = None  # environment variable holding the API key
    # False: the key is sent when the variable is set, and the backend works without one
    # (self-hosted services that may or may not be protected).
    key_required: ClassVar[bool] = True
    rate_per_s: ClassVar[float | None] = None  # the provider's documented/free-tier limit
    fields: ClassVar[FieldMap | None] = None  # how `parse` reads a response, when declared

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_key: str | None = None,
        timeout_s: float = SEARCH_TIMEOUT_S,
        connect_timeout_s: float = 10.0,
        retries: int = 3,
        rate_per_s: float | None = None,
        retry: RetryPolicy | None = None,
        deadline_s: float | None = SEARCH_DEADLINE_S,
        max_bytes: int = MAX_RESPONSE_BYTES,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        url = endpoint or self.default_endpoint
        if not url:
            raise ConfigError(f"search backend {self.name!r} needs --search-endpoint URL")
        self.endpoint = url
        if self.key_env and not api_key:
            api_key = os.environ.get(self.key_env) or None
            if not api_key and self.key_required:
                raise ConfigError(
                    f"search backend {self.name!r} needs an API key in ${self.key_env}"
                )
        self._key = api_key
        self.retry = retry or RetryPolicy(retries=retries)
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes
        self._transport = transport
        self._limiter = RateLimiter(rate_per_s if rate_per_s is not None else self.rate_per_s)
        self._timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self._client: httpx.AsyncClient | None = None

    # ---- what a provider defines --------------------------------------------------

    def build_request(self, query: str, k: int) -> Request:
        raise NotImplementedError

    def parse(self, data: Any, k: int) -> list[Hit]:
        """Provider JSON -> hits (by `fields` unless overridden). Raise ValueError,
        KeyError or TypeError on a wrong shape."""
        if self.fields is None:
            raise NotImplementedError(f"{type(self).__name__} declares no fields and no parse")
        return self.fields.hits(data, self.name)

    def cache_identity(self) -> dict[str, Any]:
        """Everything besides query and k that changes results (never the key).

        An endpoint may carry a secret (user:pass@, ?token=): the cache and its exports
        keep the endpoint without user info and only a digest of its query string.
        """
        url = httpx.URL(self.endpoint)
        endpoint = str(url.copy_with(userinfo=b"", query=None))
        if url.query:
            endpoint += "?sha256=" + hashlib.sha256(url.query).hexdigest()[:16]
        return {"backend": self.name, "endpoint": endpoint}

    # ---- the shared machinery -----------------------------------------------------

    async def search(self, query: str, *, k: int) -> list[Hit]:
        request = self.build_request(query, k)
        data = await self._send(request)
        try:
            hits = self.parse(data, k)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BackendError(self.name, f"unexpected response shape ({e!r})") from None
        return scrub_hits(hits[:k])

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._timeout,
                headers={"User-Agent": USER_AGENT},
                transport=self._transport,
                verify=ssl_context(),
            )
        return self._client

    async def _send(self, request: Request) -> Any:
        async def attempt() -> Any:
            await self._limiter.wait()
            return await self._send_once(request)

        return await self.retry.call(attempt, what=f"{self.name} search")

    async def _send_once(self, request: Request) -> Any:
        try:
            async with deadline(self.deadline_s, self._overdue):
                return await self._exchange(request)
        except httpx.TimeoutException:
            raise BackendError(self.name, f"timed out ({self._where()})", retryable=True) from None
        except httpx.HTTPError as e:
            msg = f"cannot reach {self._where()}: {type(e).__name__}"
            raise BackendError(self.name, msg, retryable=True) from None

    async def _exchange(self, request: Request) -> Any:
        async with self._get_client().stream(
            request.method,
            request.url,
            params=request.params or None,
            json=request.json,
            headers=request.headers,
        ) as response:
            body = await read_capped(response, self.max_bytes)
        if body is None:
            msg = f"response over {self.max_bytes} bytes from {self._where()}"
            raise BackendError(self.name, msg, status=response.status_code)
        return self._decode(response.status_code, response, body)

    def _overdue(self) -> BackendError:
        # Not retried: a server this slow once is likely as slow again, and the search
        # must fail in bounded time (a dripping server once kept `ask` waiting for ever).
        msg = f"no complete answer within {self.deadline_s:g} s ({self._where()})"
        return BackendError(self.name, msg)

    def _decode(self, status: int, response: httpx.Response, body: bytes) -> Any:
        text = body.decode("utf-8", "replace")
        if status in (401, 403):
            msg = f"not authorised: check ${self.key_env}" if self.key_env else "not authorised"
            raise BackendError(self.name, msg, status=status)
        if status == 429 or status >= 500:
            raise BackendError(
                self.name,
                self._scrub(text[:200]) or response.reason_phrase,
                status=status,
                retry_after=retry_after_s(response.headers.get("Retry-After")),
                retryable=True,
            )
        if status >= 400:
            raise BackendError(self.name, self._scrub(text[:200]), status=status)
        try:
            return json.loads(body)
        except ValueError:
            raise BackendError(self.name, "malformed JSON in response", status=status) from None

    def _where(self) -> str:
        return httpx.URL(self.endpoint).copy_with(query=None).__str__()

    def _scrub(self, text: str) -> str:
        # An echoing proxy must not leak the key into an error message or a trace.
        return text.replace(self._key, "***") if self._key else text

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
