"""robots.txt for `--respect-robots`: one fetch per origin, parsed by urllib.robotparser.

robots.txt is fetched through the fetcher's own guarded client (same SSRF checks,
timeouts and redirects as a page). What its answer means follows RFC 9309 (2.3.1):
- 2xx: its rules apply (at most ROBOTS_MAX_BYTES are read, the rest is ignored, as the
  RFC allows; undecodable bytes are replaced, never an error);
- other 4xx, 404 and also 401/403 ("unavailable"): no rules, every page may be fetched;
- 5xx, 429, a timeout or a connection error ("unreachable"): every page of that origin
  is refused with "robots.txt unreachable (...)". That is the RFC's rule and the only
  safe reading for a user who asked us to respect robots.txt; 429 counts here because a
  rate limit is no licence to crawl (Google reads it the same way). Refusals are kept a
  minute only, so one hiccup does not shut a site out of a whole evaluation;
- more redirects than the fetcher follows: unavailable, as the RFC allows.

Rules are kept in memory per origin (scheme, host, port) for the fetcher's lifetime,
at most 24 hours (the RFC's limit), never in the search/page cache: a replayed run
fetches nothing, so it has nothing to ask robots.txt about (and a page already cached
in record mode is served without asking either: reading our copy is not crawling).

urllib.robotparser is the stdlib's, with its known differences from the RFC: the first
matching rule of a group wins (not the longest), `*` and `$` in paths are literal, and a
group applies when its name occurs in our product token ("search-o1").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.robotparser import RobotFileParser

import httpx

__all__ = [
    "DISALLOWED",
    "ROBOTS_MAX_BYTES",
    "RobotsCache",
    "RobotsRules",
    "rules_from",
    "unreachable",
]

DISALLOWED = "disallowed by robots.txt"
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least 500 KiB
RULES_TTL_S = 24 * 3600.0
REFUSAL_TTL_S = 60.0

# The robots.txt URL of an origin -> its rules; never raises (an error is a refusal).
Loader = Callable[[httpx.URL], Awaitable["RobotsRules"]]


@dataclass(frozen=True)
class RobotsRules:
    """What one origin's robots.txt says. `refusal` set: refuse every page with it."""

    parser: RobotFileParser | None = None  # None with no refusal: everything allowed
    refusal: str | None = None

    def refusal_for(self, url: str, user_agent: str) -> str | None:
        if self.refusal is not None:
            return self.refusal
        if self.parser is not None and not self.parser.can_fetch(user_agent, url):
            return DISALLOWED
        return None


def rules_from(status: int, body: bytes) -> RobotsRules:
    """An answer to GET /robots.txt -> the rules it sets (RFC 9309 2.3.1).

    >>> rules_from(200, b"User-agent: *\\nDisallow: /private").refusal_for(
    ...     "http://a.test/private/x", "search-o1/0.1")
    'disallowed by robots.txt'
    >>> rules_from(404, b"").refusal_for("http://a.test/private/x", "search-o1/0.1") is None
    True
    >>> rules_from(503, b"").refusal
    'robots.txt unreachable (HTTP 503)'
    """
    if 200 <= status < 300:
        parser = RobotFileParser()
        parser.parse(body.decode("utf-8", errors="replace").splitlines())
        return RobotsRules(parser)
    if status >= 500 or status == 429:
        return unreachable(f"HTTP {status}")
    return RobotsRules()  # 4xx, or a redirect left unfollowed: unavailable, no rules


def unreachable(reason: str) -> RobotsRules:
    return RobotsRules(refusal=f"robots.txt unreachable ({reason})")


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


class RobotsCache:
    """The rules for each origin, fetched once (however many pages ask at the same time)
    and kept for RULES_TTL_S, or REFUSAL_TTL_S when they refuse everything."""

    def __init__(self, load: Loader, user_agent: str) -> None:
        self._load = load
        self.user_agent = user_agent
        self._entries: dict[tuple[str, str, int], tuple[float, asyncio.Task[RobotsRules]]] = {}

    async def refusal_for(self, url: httpx.URL) -> str | None:
        """None when `url` may be fetched, else the reason it may not."""
        rules = await asyncio.shield(self._task(url))
        return rules.refusal_for(str(url), self.user_agent)

    def _task(self, url: httpx.URL) -> asyncio.Task[RobotsRules]:
        origin = _origin(url)
        entry = self._entries.get(origin)
        now = time.monotonic()
        if entry is not None and not _expired(entry, now):
            return entry[1]
        robots_url = url.copy_with(path="/robots.txt", query=None, fragment=None, userinfo=b"")
        task = asyncio.ensure_future(self._load(robots_url))
        self._entries[origin] = (now, task)
        return task


def _expired(entry: tuple[float, asyncio.Task[RobotsRules]], now: float) -> bool:
    started, task = entry
    if not task.done():
        return False  # in flight: join it
    refused = task.cancelled() or task.exception() is not None or task.result().refusal
    return now - started > (REFUSAL_TTL_S if refused else RULES_TTL_S)
