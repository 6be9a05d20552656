"""Wire an Engine from Settings: model, reader model, search backend, document reader."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Literal

from search_o1.config import Settings
from search_o1.engine import Engine
from search_o1.llm.base import LLM
from search_o1.registry import resolve
from search_o1.search.base import DocumentReader, Search


def build_llm(settings: Settings, *, role: Literal["main", "reader"] = "main") -> LLM:
    """The model for `role`; several base URLs become a routing pool, one backend each."""
    factory = resolve("llm", settings.llm_backend)
    urls = settings.base_url
    if len(urls) < 2 or (role == "reader" and settings.reader_base_url):
        return factory(settings, role=role)  # type: ignore[no-any-return]
    from search_o1.llm.pool import PoolLLM

    # Each backend fails fast (no retries of its own): the pool retries on another server.
    backends = [
        factory(settings.model_copy(update={"base_url": [url], "retries": 0}), role=role)
        for url in urls
    ]
    return PoolLLM(backends, labels=urls, retries=settings.retries)


def _needs_reader_llm(settings: Settings) -> bool:
    return settings.reader and bool(settings.reader_model or settings.reader_base_url)


def _build_documents(settings: Settings) -> DocumentReader | None:
    try:
        from search_o1.fetch import build_documents
    except ImportError:  # web extras absent: local corpora still work
        return None
    return build_documents(settings)


@asynccontextmanager
async def open_pipeline(settings: Settings, *, search: bool = True) -> AsyncIterator[Engine]:
    """An Engine for `settings`; every backend it opened is closed on exit.

    `search=False` skips building a search backend (the direct method needs none).
    """
    async with AsyncExitStack() as stack:
        llm = build_llm(settings)
        stack.push_async_callback(llm.aclose)
        reader_llm = None
        if _needs_reader_llm(settings):
            reader_llm = build_llm(settings, role="reader")
            stack.push_async_callback(reader_llm.aclose)
        backend: Search | None = None
        if search:
            from search_o1.search.factory import build_search

            backend = build_search(settings)
            stack.push_async_callback(backend.aclose)
        documents = _build_documents(settings)
        if documents is not None:
            stack.push_async_callback(documents.aclose)
        yield Engine(
            llm,
            backend,
            settings=settings,
            reader_llm=reader_llm,
            documents=documents,
        )
