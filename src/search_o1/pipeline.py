"""Wire an Engine from Settings: model, reader model, search backend, document source.

The one place that maps `Settings` onto the engine's explicit options (`engine_options`).

The pipeline owns what it opens (model clients, the embedded server's reference, search
clients, the page fetcher, the cache) and closes all of it on exit, in reverse order.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Literal

from search_o1 import profiles
from search_o1.cache import Cache, CacheSlot
from search_o1.config import Settings
from search_o1.engine import ChainLimits, Engine, EngineOptions, ReaderOptions, SearchOptions
from search_o1.llm.base import LLM
from search_o1.prompts.templates import PromptSet, load_prompts
from search_o1.registry import resolve_llm, resolve_search
from search_o1.search.base import Search
from search_o1.search.cached import Cacheable, CachedSearch
from search_o1.types import Sampling
from search_o1.wiring import build_documents, open_cache

__all__ = ["Pipeline", "build_llm", "build_search", "engine_options", "open_pipeline"]


def build_llm(settings: Settings, *, role: Literal["main", "reader"] = "main") -> LLM:
    """The model for `role`; several base URLs become a routing pool, one backend each.

    The caller owns the result: `await llm.aclose()` when done (open_pipeline does).
    """
    factory = resolve_llm(settings.llm_backend)
    urls = settings.base_url
    if len(urls) < 2 or (role == "reader" and settings.reader_base_url):
        return factory(settings, role=role)
    from search_o1.llm.pool import PoolLLM

    # Each backend fails fast (no retries of its own): the pool retries on another server.
    backends = [
        factory(settings.model_copy(update={"base_url": [url], "retries": 0}), role=role)
        for url in urls
    ]
    return PoolLLM(backends, labels=urls, retries=settings.retries)


def build_search(
    settings: Settings, *, cache: Cache | Callable[[], Cache | None] | None = None
) -> Search:
    """The search backend `settings.search` names; several (`--search bm25,serper`) are
    fused by reciprocal rank.

    Each named backend comes from the registry. Web backends (those with a
    `cache_identity()`) go through `cache`, each on its own before fusion, so a fused
    run's entries are shared with single-backend runs: an open Cache, or a callable that
    opens it, called only when a web backend is built (a corpus-only run creates no
    cache file). The caller owns the result and the cache: `await search.aclose()` when
    done (the pipeline does); the backend's `aclose` never closes the cache.
    """
    backends: list[Search] = []
    for name in settings.search:
        backend = resolve_search(name)(settings)
        if isinstance(backend, Cacheable):
            store = cache() if callable(cache) else cache
            if store is not None:
                backend = CachedSearch(backend, store)
        backends.append(backend)
    if len(backends) == 1:
        return backends[0]
    from search_o1.search.fusion import FusedSearch

    return FusedSearch(backends)


def engine_options(settings: Settings, *, model: str | None = None) -> EngineOptions:
    """The engine's view of `settings`: limits, sampling, reader and search options.

    Forced search is decided here, not by the engine: on for the embedded model (too
    small to write a query by itself) unless the user set `force_search` either way.
    `model`: the name of the model backend in use when it was not built from these
    settings (a given `ScriptedLLM` is "scripted"). Values nobody gave come from the
    profile (`profiles.resolve`).
    """
    settings = profiles.resolve(settings)
    force = settings.force_search
    if force is None:
        force = (model or settings.llm_backend) == "embedded"
    return EngineOptions(
        limits=ChainLimits(
            max_searches=settings.max_searches,
            max_turns=settings.max_turns,
            max_total_tokens=settings.max_total_tokens,
            max_call_tokens=settings.max_call_tokens,
            context_length=settings.context_length,
        ),
        sampling=settings.sampling,
        reader=_reader_options(settings),
        search=SearchOptions(
            top_k=settings.top_k,
            max_doc_chars=settings.max_doc_chars,
            page_chars=settings.page_chars,
        ),
        force_search=force,
        task=settings.task,
        prompts=load_prompts(settings.prompts) if settings.prompts else PromptSet(),
        repeated_query=settings.repeated_query,
        tools=settings.api_mode == "tools",
        paper_inserts=settings.profile == "paper",
        # The paper's scripts search every non-blank query; a refused one has no reader
        # call and another block in the chain, so the runs would not compare.
        refuse_placeholders=settings.profile != "paper",
    )


def _reader_options(settings: Settings) -> ReaderOptions:
    """The reader; under the paper profile with its fixed sampling and one-line facts."""
    if settings.profile != "paper":
        return ReaderOptions(
            enabled=settings.reader, max_call_tokens=settings.reader_max_call_tokens
        )
    return ReaderOptions(
        enabled=settings.reader,
        max_call_tokens=settings.reader_max_call_tokens,
        sampling=Sampling(0.7, 0.8, 20, 1.05, seed=settings.seed),
        one_line=True,
        cite=False,
        paper=True,
    )


def _needs_reader_llm(settings: Settings) -> bool:
    return settings.reader and bool(settings.reader_model or settings.reader_base_url)


class Pipeline:
    """An Engine wired from settings, holding everything it opened until it is left.

        async with Pipeline(load_settings({...})) as engine:
            trace = await engine.run("Who directed Amélie?")

    `llm`, `reader_llm`, `search`: objects to use instead of building them from the
    settings (a `ScriptedLLM`, a `MemorySearch`); they stay the caller's and are not
    closed here. `with_search=False` builds no search backend (the direct method needs
    none). `cache`: an open Cache to use instead of opening `settings.cache_path`; the
    caller keeps it and closes it (this is how pipelines share one store and one run id).
    Everything the pipeline opened is closed on exit, in reverse order.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        llm: LLM | None = None,
        reader_llm: LLM | None = None,
        search: Search | None = None,
        with_search: bool = True,
        cache: Cache | None = None,
    ) -> None:
        self.settings = profiles.resolve(settings)
        self._given_llm = llm
        self._given_reader_llm = reader_llm
        self._given_search = search
        self._with_search = with_search
        self._cache = cache
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> Engine:
        async with AsyncExitStack() as stack:
            engine = self._open(stack)
            self._stack = stack.pop_all()
        return engine

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    def _open(self, stack: AsyncExitStack) -> Engine:
        settings = self.settings
        # First in, last out: the cache outlives everything that writes to it.
        slot = stack.enter_context(CacheSlot(lambda: open_cache(settings), given=self._cache))
        llm = self._given_llm
        if llm is None:
            llm = build_llm(settings)
            stack.push_async_callback(llm.aclose)
        reader_llm = self._given_reader_llm
        if reader_llm is None and _needs_reader_llm(settings):
            reader_llm = build_llm(settings, role="reader")
            stack.push_async_callback(reader_llm.aclose)
        backend = self._given_search
        if backend is None and self._with_search:
            # A web backend opens the cache here, so a bad cache file stops the run now.
            backend = build_search(settings, cache=slot.get)
            stack.push_async_callback(backend.aclose)
        documents = build_documents(settings, cache=slot.get)
        stack.push_async_callback(documents.aclose)
        given = self._given_llm
        options = engine_options(settings, model=None if given is None else given.name)
        return Engine(llm, backend, options=options, reader_llm=reader_llm, documents=documents)


def open_pipeline(
    settings: Settings, *, search: bool = True, cache: Cache | None = None
) -> Pipeline:
    """`Pipeline(settings, with_search=search, cache=cache)`: an Engine for `settings`
    in an `async with`; everything it opened is closed on exit."""
    return Pipeline(settings, with_search=search, cache=cache)
