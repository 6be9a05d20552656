"""The built-in search backends' factories: `(settings) -> Search`, one per backend.

Each imports its backend when called, so a missing optional extra (bm25s, faiss, ddgs,
mcp) only matters when that backend is chosen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from search_o1.config import Settings
from search_o1.errors import ConfigError

if TYPE_CHECKING:
    from search_o1.search.bing import BingSearch
    from search_o1.search.bm25 import BM25Search
    from search_o1.search.brave import BraveSearch
    from search_o1.search.dense import DenseSearch
    from search_o1.search.duckduckgo import DuckDuckGoSearch
    from search_o1.search.http import HTTPSearch
    from search_o1.search.mcp_tool import McpSearch
    from search_o1.search.memory import MemorySearch
    from search_o1.search.retriever import RetrieverSearch
    from search_o1.search.searxng import SearxngSearch
    from search_o1.search.serper import SerperSearch
    from search_o1.search.tavily import TavilySearch

__all__ = [
    "bing",
    "bm25",
    "brave",
    "dense",
    "duckduckgo",
    "mcp",
    "memory",
    "retriever",
    "searxng",
    "serper",
    "tavily",
]

_Web = TypeVar("_Web", bound="HTTPSearch")


def bm25(settings: Settings) -> BM25Search:
    """`settings.corpus` names the corpus (see `BM25Search.open`)."""
    from search_o1.search.bm25 import BM25Search

    if not settings.corpus:
        raise ConfigError(
            "the bm25 search needs a corpus: pass --corpus with a JSONL file, a folder "
            "of documents or an index from `search-o1 index build` (or use --demo)"
        )
    return BM25Search.open(settings.corpus, max_doc_chars=settings.max_doc_chars)


def dense(settings: Settings) -> DenseSearch:
    """Corpus (or FlashRAG index), embedding model and prefixes, index kind and tuning."""
    from search_o1.corpus.embed import SentenceEncoder
    from search_o1.corpus.progress import RateProgress
    from search_o1.corpus.vectors import tune
    from search_o1.search.dense import DenseSearch

    if not settings.corpus:
        raise ConfigError(
            "the dense search needs a corpus: pass --corpus with a JSONL file, a folder of "
            "documents or an index from `search-o1 index build` (with --faiss-index: the "
            "FlashRAG corpus JSONL the index was built from)"
        )
    encoder = SentenceEncoder.open(settings.embedding_model, settings.embedding_prefixes)
    if settings.faiss_index:
        search = DenseSearch.from_flashrag(
            settings.faiss_index, settings.corpus, encoder, max_doc_chars=settings.max_doc_chars
        )
    else:
        search = DenseSearch.open(
            settings.corpus,
            encoder,
            kind=settings.dense_index,
            progress=RateProgress("embedding passages"),
            max_doc_chars=settings.max_doc_chars,
        )
    tune(search.index, nprobe=settings.nprobe, ef_search=settings.ef_search)
    return search


def memory(settings: Settings) -> MemorySearch:
    """Hits from the JSON file `settings.corpus`, if any (none for every query if not)."""
    from search_o1.search.memory import MemorySearch, load_hits

    if not settings.corpus:
        return MemorySearch({})
    return MemorySearch(load_hits(Path(settings.corpus).expanduser()))


def _web(cls: type[_Web], settings: Settings) -> _Web:
    """An HTTP provider with the run's endpoint, timeouts, retries and deadline."""
    from search_o1.search.http import SEARCH_TIMEOUT_S

    return cls(
        endpoint=settings.search_endpoint,
        connect_timeout_s=settings.connect_timeout,
        timeout_s=min(settings.timeout, SEARCH_TIMEOUT_S),
        retries=settings.retries,
        deadline_s=settings.search_deadline,
    )


def serper(settings: Settings) -> SerperSearch:
    from search_o1.search.serper import SerperSearch

    return _web(SerperSearch, settings)


def brave(settings: Settings) -> BraveSearch:
    from search_o1.search.brave import BraveSearch

    return _web(BraveSearch, settings)


def tavily(settings: Settings) -> TavilySearch:
    from search_o1.search.tavily import TavilySearch

    return _web(TavilySearch, settings)


def bing(settings: Settings) -> BingSearch:
    from search_o1.search.bing import BingSearch

    return _web(BingSearch, settings)


def searxng(settings: Settings) -> SearxngSearch:
    from search_o1.search.searxng import SearxngSearch

    return _web(SearxngSearch, settings)


def retriever(settings: Settings) -> RetrieverSearch:
    from search_o1.search.retriever import RetrieverSearch

    return _web(RetrieverSearch, settings)


def duckduckgo(settings: Settings) -> DuckDuckGoSearch:
    """Keyless and endpoint-less: nothing in `settings` applies."""
    from search_o1.search.duckduckgo import DuckDuckGoSearch

    return DuckDuckGoSearch()


def mcp(settings: Settings) -> McpSearch:
    """The MCP server's command line or URL, its tool, its key, and the search deadline."""
    from search_o1.search.mcp_tool import McpSearch

    if not settings.mcp_server:
        raise ConfigError(
            '--search mcp needs --mcp-server: the server\'s command line ("CMD ARGS") '
            "or its streamable HTTP URL"
        )
    key = None
    if settings.mcp_key_env:
        key = os.environ.get(settings.mcp_key_env)
        if not key:
            raise ConfigError(
                f"--mcp-key-env names {settings.mcp_key_env}, which is not set "
                "(export it with the MCP server's token)"
            )
    return McpSearch(
        settings.mcp_server, settings.mcp_tool, timeout=settings.search_deadline, key=key
    )
