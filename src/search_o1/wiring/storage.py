"""The run's shared pieces from `Settings`: its cache and its document step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from search_o1.cache import Cache
from search_o1.config import Settings
from search_o1.fetch.documents import WebDocuments
from search_o1.fetch.fetcher import FetchConfig, PageFetcher
from search_o1.fetch.guard import HostPolicy

__all__ = ["build_documents", "open_cache"]


def open_cache(settings: Settings) -> Cache | None:
    """A new Cache for `settings.cache_path`, mode and `cache_ttl` (None when mode is
    off). The caller owns it and closes it."""
    if settings.cache == "off":
        return None
    path = Path(settings.cache_path).expanduser()
    return Cache(path, settings.cache, ttl_s=settings.cache_ttl)


def build_documents(
    settings: Settings, *, cache: Cache | Callable[[], Cache | None] | None = None
) -> WebDocuments:
    """The document step for a run: fetching per `settings.fetch`,
    `max_fetch_concurrency`, `allow_private_hosts`, `respect_robots`, `max_doc_chars`,
    `max_page_chars`; `page_service` (Jina Reader style) routes every fetch through that
    service.

    Pages go through `cache` (an open Cache, or a callable opening it at the first
    page); the caller owns it: `aclose` closes the fetcher, never the cache.
    """
    fetcher = None
    if settings.fetch:
        config = FetchConfig(
            connect_timeout_s=settings.connect_timeout,
            max_concurrency=settings.max_fetch_concurrency,
            reader_url=settings.page_service,
            respect_robots=settings.respect_robots,
        )
        fetcher = PageFetcher(config, HostPolicy(allow_private=settings.allow_private_hosts))
    opener = cache if callable(cache) else lambda: cache
    return WebDocuments(
        fetcher,
        max_doc_chars=settings.max_doc_chars,
        max_page_chars=settings.max_page_chars,
        cache=opener,
    )
