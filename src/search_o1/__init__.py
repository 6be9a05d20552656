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
from search_o1.config import Settings, load_settings
from search_o1.engine import METHODS, Engine
from search_o1.errors import (
    BackendError,
    ConfigError,
    ContextOverflowError,
    InputFileError,
    MissingExtraError,
    ReplayMissError,
    SearchO1Error,
)
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import build_llm, open_pipeline
from search_o1.search.base import DocumentReader, Search
from search_o1.search.memory import MemorySearch
from search_o1.types import (
    Completion,
    Document,
    FinishReason,
    Hit,
    Message,
    Prompt,
    Sampling,
    SearchRecord,
    Step,
    Trace,
)

__all__ = [
    "LLM",
    "METHODS",
    "BackendError",
    "Completion",
    "CompletionRequest",
    "ConfigError",
    "ContextOverflowError",
    "Document",
    "DocumentReader",
    "Engine",
    "FinishReason",
    "Hit",
    "InputFileError",
    "MemorySearch",
    "Message",
    "MissingExtraError",
    "Prompt",
    "ReplayMissError",
    "Sampling",
    "ScriptedLLM",
    "Search",
    "SearchO1Error",
    "SearchRecord",
    "Settings",
    "Step",
    "Trace",
    "build_llm",
    "extract_answer",
    "extract_boxed",
    "extract_code",
    "load_settings",
    "open_pipeline",
]
