"""Fetching pages: async httpx behind the SSRF guard, with global and per-host limits,
timeouts (connect, read, and a total deadline against slow-drip servers), a byte cap,
redirects followed by hand (each hop re-checked), optional robots.txt, and an optional
reader service.

`fetch(url)` returns a Page or raises FetchError whose `reason` becomes the document's
"failed: <reason>" status. It knows nothing of caching; fetch/documents.py does that.

Reader service mode (`reader_url`, Jina Reader style): a page is read with
`GET {reader_url}/{page url}` and `Accept: text/plain` (Jina's documented header for a
plain-text body rather than JSON or an event stream; its default format is the page's
main content, boilerplate removed), with `Authorization: Bearer $PAGE_READER_API_KEY`
when that variable is set. Same timeouts, byte cap and failure reasons as a direct
fetch. The guard applies to the reader's own host like any other: a reader on a
private or loopback address (a self-hosted container) needs `allow_private_hosts`; we
do not trust a configured endpoint silently, because the setting may come from a
shared config file or the environment. The page URL is only passed on, so here it gets
the cheap checks (http/https, no literal private address without the opt-in); the
service resolves and fetches it. With `respect_robots` the service is asked to obey
robots.txt itself (its documented `X-Robots-Txt` header, naming our user agent): we
never contact the page's host in this mode.
"""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import httpx

from search_o1._http import USER_AGENT
from search_o1.errors import ConfigError, FetchError
from search_o1.fetch.guard import BlockedURLError, GuardedTransport, HostPolicy
from search_o1.fetch.robots import (
    ROBOTS_MAX_BYTES,
    RobotsCache,
    RobotsRules,
    rules_from,
    unreachable,
)
from search_o1.page_text import UnsupportedContent, extract_text

__all__ = ["FetchConfig", "FetchError", "Page", "PageFetcher"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class FetchConfig:
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 20.0  # the paper's per-request timeout
    total_timeout_s: float = 30.0  # whole download, all redirects included
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    max_concurrency: int = 16
    per_host: int = 4  # politeness: at most this many requests to one host at a time
    user_agent: str = USER_AGENT
    # Jina-Reader-style service: GET {reader_url}/{page url} returns the page as text.
    reader_url: str | None = None
    reader_key_env: str = "PAGE_READER_API_KEY"
    respect_robots: bool = False


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes  # empty for an error status: its body is never read
    content_type: str
    url: str  # after redirects


@dataclass(frozen=True)
class Page:
    url: str  # after redirects
    text: str
    content_type: str


class PageFetcher:
    def __init__(
        self,
        config: FetchConfig | None = None,
        policy: HostPolicy | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        """`transport` replaces the guarded connection layer, for wire-format tests with
        `httpx.MockTransport`; the URL checks still run, the address checks then do not."""
        self.config = config or FetchConfig()
        self._transport = transport
        self.policy = policy or HostPolicy()
        self._reader = _reader_url(self.config.reader_url)
        self._global = asyncio.Semaphore(self.config.max_concurrency)
        self._hosts: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(self.config.per_host)
        )
        self._client: httpx.AsyncClient | None = None
        self._robots: RobotsCache | None = None
        if self.config.respect_robots and self._reader is None:
            self._robots = RobotsCache(self._robots_rules, self.config.user_agent)

    def cache_identity(self) -> dict[str, Any]:
        """What besides the URL changes a page's text: the reader service, if any.

        Kept without user info, which may hold a password (the key never appears: it
        travels in a header).
        """
        if self._reader is None:
            return {}
        return {"reader": str(self._reader.copy_with(userinfo=b"")).rstrip("/")}

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            c = self.config
            limits = httpx.Limits(
                max_connections=c.max_concurrency, max_keepalive_connections=c.max_concurrency
            )
            self._client = httpx.AsyncClient(
                transport=self._transport or GuardedTransport(self.policy, limits=limits),
                timeout=httpx.Timeout(c.read_timeout_s, connect=c.connect_timeout_s),
                headers={
                    "User-Agent": c.user_agent,
                    "Accept": "text/html,application/pdf,text/plain;q=0.9,*/*;q=0.5",
                },
                follow_redirects=False,
                trust_env=False,  # a proxy would connect on our behalf, unguarded
            )
        return self._client

    async def fetch(self, url: str) -> Page:
        """Download and extract one page; FetchError says why not."""
        try:
            target = httpx.URL(url)
            self.policy.check_url(target)
        except (httpx.InvalidURL, BlockedURLError) as e:
            raise FetchError(
                f"blocked: {e}" if isinstance(e, BlockedURLError) else f"invalid URL: {e}"
            ) from None
        # Host slot first, so tasks queued behind a busy host do not hold global slots.
        async with self._hosts[target.host], self._global:
            body, ctype, final = await self._download_with_deadline(target)
        try:
            # Extraction is CPU work (lxml, pypdf): off the event loop.
            text = await asyncio.to_thread(extract_text, body, ctype, final)
        except UnsupportedContent as e:
            raise FetchError(str(e)) from None
        if not text.strip():
            raise FetchError("empty page")
        return Page(final, text, ctype)

    async def _download_with_deadline(self, target: httpx.URL) -> tuple[bytes, str, str]:
        try:
            async with asyncio.timeout(self.config.total_timeout_s):
                if self._reader is not None:
                    return await self._via_reader(self._reader, target)
                return await self._direct(target)
        except (TimeoutError, httpx.TimeoutException):
            raise FetchError("timeout") from None
        except BlockedURLError as e:
            raise FetchError(f"blocked: {e}") from None
        except httpx.HTTPError as e:
            raise FetchError(f"connection error ({type(e).__name__})") from None

    async def _direct(self, target: httpx.URL) -> tuple[bytes, str, str]:
        response = await self._follow(
            target, cap=self.config.max_bytes, obey_robots=self._robots is not None
        )
        if response.status >= 400:
            raise FetchError(f"HTTP {response.status}")
        return response.body, response.content_type, response.url

    async def _follow(
        self, url: httpx.URL, *, cap: int, obey_robots: bool = False, truncate: bool = False
    ) -> _Response:
        for _ in range(self.config.max_redirects + 1):
            self.policy.check_url(url)  # every hop: scheme and literal addresses
            if obey_robots:
                await self._check_robots(url)  # every hop: a redirect may change site
            async with self._get_client().stream("GET", url) as response:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    url = url.join(location)
                    continue
                ctype = response.headers.get("content-type", "")
                if response.status_code >= 400:
                    return _Response(response.status_code, b"", ctype, str(url))
                body = await self._read_body(response, cap, truncate=truncate)
                return _Response(response.status_code, body, ctype, str(url))
        raise FetchError(f"more than {self.config.max_redirects} redirects")

    async def _read_body(
        self, response: httpx.Response, cap: int, *, truncate: bool = False
    ) -> bytes:
        """The body, at most `cap` bytes: over it, FetchError, or the first `cap` bytes
        with `truncate`."""
        declared = response.headers.get("content-length", "")
        if not truncate and declared.isdigit() and int(declared) > cap:
            raise FetchError(f"too large ({declared} bytes > {cap})")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            chunks.append(chunk)
            if size > cap:  # a lying or absent Content-Length: stop reading at the cap
                if truncate:
                    return b"".join(chunks)[:cap]
                raise FetchError(f"too large (over {cap} bytes)")
        return b"".join(chunks)

    # ---- robots.txt ---------------------------------------------------------------

    async def _check_robots(self, url: httpx.URL) -> None:
        assert self._robots is not None
        refusal = await self._robots.refusal_for(url)
        if refusal is not None:
            raise FetchError(refusal)

    async def _robots_rules(self, robots_url: httpx.URL) -> RobotsRules:
        """Fetch and read one robots.txt (through the guard, like any page); never raises
        for a network failure: robots.py says what each outcome means."""
        try:
            async with asyncio.timeout(self.config.total_timeout_s):
                response = await self._follow(robots_url, cap=ROBOTS_MAX_BYTES, truncate=True)
        except (TimeoutError, httpx.TimeoutException):
            return unreachable("timeout")
        except BlockedURLError as e:
            return RobotsRules(refusal=f"blocked: {e}")
        except httpx.HTTPError as e:
            return unreachable(f"connection error ({type(e).__name__})")
        except FetchError:  # too many redirects: RFC 9309 lets us treat it as no file
            return RobotsRules()
        return rules_from(response.status, response.body)

    # ---- reader service -----------------------------------------------------------

    async def _via_reader(self, reader: httpx.URL, target: httpx.URL) -> tuple[bytes, str, str]:
        service = httpx.URL(str(reader).rstrip("/") + "/" + str(target))
        try:
            self.policy.check_url(service)
            async with self._get_client().stream(
                "GET", service, headers=self._reader_headers()
            ) as response:
                if not 200 <= response.status_code < 300:  # redirects are not followed
                    raise FetchError(f"page reader: HTTP {response.status_code}")
                body = await self._read_body(response, self.config.max_bytes)
                ctype = response.headers.get("content-type") or "text/plain; charset=utf-8"
        except BlockedURLError as e:
            raise FetchError(f"blocked: page reader: {e}") from None
        # The page as the service read it; its address stays the page's, not the service's.
        return body, ctype, str(target)

    def _reader_headers(self) -> dict[str, str]:
        headers = {"Accept": "text/plain"}
        key = os.environ.get(self.config.reader_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if self.config.respect_robots:
            headers["X-Robots-Txt"] = self.config.user_agent
        return headers

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _reader_url(value: str | None) -> httpx.URL | None:
    """The reader service's URL, checked once: a bad one would fail every page."""
    if not value:
        return None
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as e:
        raise ConfigError(f"page reader URL {value!r}: {e}") from None
    # The page URL is appended to the path, so a query or fragment would swallow it.
    if url.scheme not in ("http", "https") or not url.host or url.query or url.fragment:
        raise ConfigError(f"page reader URL {value!r} must be http(s)://host[:port][/path]")
    return url
