"""Fetching pages: async httpx behind the SSRF guard, with global and per-host limits,
timeouts (connect, read, and a total deadline against slow-drip servers), a byte cap,
redirects followed by hand (each hop re-checked), and an optional reader service.

`fetch(url)` returns a Page or raises FetchError whose `reason` becomes the document's
"failed: <reason>" status. It knows nothing of caching; fetch/documents.py does that.
"""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from dataclasses import dataclass

import httpx

from search_o1.fetch.extract import UnsupportedContent, extract_text
from search_o1.fetch.guard import BlockedURLError, GuardedTransport, HostPolicy

__all__ = ["FetchConfig", "FetchError", "Page", "PageFetcher"]

USER_AGENT = "search-o1/0.1 (research agent; +https://github.com/search-o1)"
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
    reader_key_env: str = "JINA_API_KEY"


@dataclass(frozen=True)
class Page:
    url: str  # after redirects
    text: str
    content_type: str


class FetchError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PageFetcher:
    def __init__(self, config: FetchConfig | None = None, policy: HostPolicy | None = None):
        self.config = config or FetchConfig()
        policy = policy or HostPolicy()
        if self.config.reader_url:
            # The user configured this service: trust it even on a private address.
            reader = httpx.URL(self.config.reader_url)
            port = reader.port or (443 if reader.scheme == "https" else 80)
            policy = HostPolicy(
                policy.allow_private,
                policy.allowed | {f"{reader.host}:{port}"},
                policy.resolver,
            )
        self.policy = policy
        self._global = asyncio.Semaphore(self.config.max_concurrency)
        self._hosts: defaultdict[str, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(self.config.per_host)
        )
        self._client: httpx.AsyncClient | None = None

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            c = self.config
            limits = httpx.Limits(
                max_connections=c.max_concurrency, max_keepalive_connections=c.max_concurrency
            )
            self._client = httpx.AsyncClient(
                transport=GuardedTransport(self.policy, limits=limits),
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
                if self.config.reader_url:
                    return await self._via_reader(target)
                return await self._follow(target)
        except TimeoutError:
            raise FetchError("timeout") from None
        except httpx.TimeoutException:
            raise FetchError("timeout") from None
        except BlockedURLError as e:
            raise FetchError(f"blocked: {e}") from None
        except httpx.HTTPError as e:
            raise FetchError(f"connection error ({type(e).__name__})") from None

    async def _follow(self, url: httpx.URL) -> tuple[bytes, str, str]:
        for _ in range(self.config.max_redirects + 1):
            self.policy.check_url(url)  # every hop: scheme and literal addresses
            async with self._get_client().stream("GET", url) as response:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    url = url.join(location)
                    continue
                body = await self._read_body(response)
                return body, response.headers.get("content-type", ""), str(url)
        raise FetchError(f"more than {self.config.max_redirects} redirects")

    async def _read_body(self, response: httpx.Response) -> bytes:
        if response.status_code >= 400:
            raise FetchError(f"HTTP {response.status_code}")
        cap = self.config.max_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise FetchError(f"too large ({declared} bytes > {cap})")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > cap:  # a lying or absent Content-Length: stop reading at the cap
                raise FetchError(f"too large (over {cap} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _via_reader(self, target: httpx.URL) -> tuple[bytes, str, str]:
        assert self.config.reader_url is not None
        headers = {"X-Return-Format": "text"}
        key = os.environ.get(self.config.reader_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        reader_url = self.config.reader_url.rstrip("/") + "/" + str(target)
        async with self._get_client().stream("GET", reader_url, headers=headers) as response:
            body = await self._read_body(response)
        # The service returns text, whatever the page was; label it so.
        return body, "text/plain; charset=utf-8", str(target)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
