"""search-o1: a reasoning model that searches in the middle of its thinking.

The public API: build settings, open a pipeline, run questions.

    import asyncio
    from search_o1 import load_settings, open_pipeline

    async def main() -> None:
        settings = load_settings({"base_url": ["http://localhost:8000/v1"], "corpus": "docs.jsonl"})
        async with open_pipeline(settings) as engine:
            trace = await engine.run("Who directed Amélie?")
            print(trace.answer, [s.query for s in trace.searches])

    asyncio.run(main())
"""

from search_o1.answer import extract_answer, extract_boxed, extract_code
from search_o1.cache import Cache, open_cache
from search_o1.config import Settings, load_settings
from search_o1.engine import (
    METHODS,
    ChainLimits,
    Engine,
    EngineOptions,
    Method,
    Opening,
    ReaderOptions,
    SearchOptions,
    get_method,
    register_method,
)
from search_o1.errors import (
    BackendError,
    CacheError,
    ConfigError,
    ContextOverflowError,
    FetchError,
    InputFileError,
    MissingExtraError,
    QueueFull,
    ReplayMissError,
    SearchO1Error,
)
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import build_llm, build_search, engine_options, open_pipeline
from search_o1.registry import LLMFactory, SearchFactory
from search_o1.registry import register as register_backend
from search_o1.registry import unregister as unregister_backend
from search_o1.search.base import DocumentSource, Search
from search_o1.search.memory import MemorySearch
from search_o1.types import (
    Completion,
    Document,
    Event,
    EventSink,
    Finished,
    FinishReason,
    Hit,
    Message,
    Prompt,
    ReaderResult,
    Sampling,
    SearchFinished,
    SearchRecord,
    SearchStarted,
    Step,
    TextDelta,
    Trace,
    Usage,
)

__all__ = [
    "LLM",
    "METHODS",
    "BackendError",
    "Cache",
    "CacheError",
    "ChainLimits",
    "Completion",
    "CompletionRequest",
    "ConfigError",
    "ContextOverflowError",
    "Document",
    "DocumentSource",
    "Engine",
    "EngineOptions",
    "Event",
    "EventSink",
    "FetchError",
    "FinishReason",
    "Finished",
    "Hit",
    "InputFileError",
    "LLMFactory",
    "MemorySearch",
    "Message",
    "Method",
    "MissingExtraError",
    "Opening",
    "Prompt",
    "QueueFull",
    "ReaderOptions",
    "ReaderResult",
    "ReplayMissError",
    "Sampling",
    "ScriptedLLM",
    "Search",
    "SearchFactory",
    "SearchFinished",
    "SearchO1Error",
    "SearchOptions",
    "SearchRecord",
    "SearchStarted",
    "Settings",
    "Step",
    "TextDelta",
    "Trace",
    "Usage",
    "build_llm",
    "build_search",
    "engine_options",
    "extract_answer",
    "extract_boxed",
    "extract_code",
    "get_method",
    "load_settings",
    "open_cache",
    "open_pipeline",
    "register_backend",
    "register_method",
    "unregister_backend",
]
