"""search-o1: a reasoning model that searches in the middle of its thinking.

The public API. One question:

    import search_o1
    answer = search_o1.ask("Who directed Amélie?", base_url="http://localhost:8000/v1",
                           corpus="docs.jsonl")
    print(answer.text, answer.queries)

Many questions (async): open a `Pipeline` (it builds the model, search and reader from
settings, and closes them on exit) and run each question on its engine:

    async with Pipeline(load_settings({"corpus": "docs.jsonl"})) as engine:
        trace = await engine.run("Who directed Amélie?")

`ScriptedLLM` and `MemorySearch` stand in for a model server and a search engine (for
tests, and for trying the API offline); `markers` holds the strings the model writes.
"""

from search_o1 import markers
from search_o1.answer import extract_answer, extract_boxed, extract_code
from search_o1.api import Answer, aask, ask
from search_o1.cache import Cache
from search_o1.config import Settings, load_settings
from search_o1.engine import (
    METHODS,
    ChainLimits,
    ChainState,
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
from search_o1.pipeline import Pipeline, build_llm, build_search, engine_options, open_pipeline
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
    Source,
    Step,
    TextDelta,
    Trace,
    Usage,
)
from search_o1.wiring import open_cache

__all__ = [
    "LLM",
    "METHODS",
    "Answer",
    "BackendError",
    "Cache",
    "CacheError",
    "ChainLimits",
    "ChainState",
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
    "Pipeline",
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
    "Source",
    "Step",
    "TextDelta",
    "Trace",
    "Usage",
    "aask",
    "ask",
    "build_llm",
    "build_search",
    "engine_options",
    "extract_answer",
    "extract_boxed",
    "extract_code",
    "get_method",
    "load_settings",
    "markers",
    "open_cache",
    "open_pipeline",
    "register_backend",
    "register_method",
    "unregister_backend",
]
