"""The library's front door: one question in, an `Answer` out.

    import search_o1
    answer = search_o1.ask("Who directed Amélie?", base_url="http://localhost:8000/v1",
                           corpus="docs.jsonl")
    print(answer.text, answer.queries)

`ask` runs the event loop itself; inside async code use `aask`. Keyword settings are the
same as the CLI's flags (`max_searches=3`, `top_k=5`, ...), on top of the `SEARCH_O1_*`
environment; `llm=`, `reader_llm=` and `search=` take ready objects instead (a
`ScriptedLLM`, a `MemorySearch`). For many questions, open one `Pipeline` and call
`engine.run` for each.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from search_o1.config import load_settings
from search_o1.engine import Method, get_method
from search_o1.errors import ConfigError
from search_o1.llm.base import LLM
from search_o1.pipeline import Pipeline
from search_o1.profiles import resolve
from search_o1.search.base import Search
from search_o1.sources import answer_sources
from search_o1.tasks import TaskKind
from search_o1.types import EventSink, FinishReason, Source, Trace

__all__ = ["Answer", "aask", "ask"]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Answer:
    """What a question came to: the answer (None when the chain gave none), why the
    chain ended, the queries it searched for, and the whole trace."""

    text: str | None
    finish_reason: FinishReason
    queries: tuple[str, ...]
    trace: Trace

    @classmethod
    def of(cls, trace: Trace) -> Answer:
        reason = trace.finish_reason or FinishReason.ERROR
        return cls(trace.answer, reason, tuple(s.query for s in trace.searches), trace)

    @property
    def sources(self) -> list[Source]:
        """The answer's numbered sources (see `search_o1.sources`)."""
        return answer_sources(self.trace)

    def __str__(self) -> str:
        return self.text if self.text is not None else f"(no answer: {self.finish_reason})"


async def aask(
    question: str,
    *,
    method: str | Method = "search-o1",
    task: TaskKind | None = None,
    llm: LLM | None = None,
    reader_llm: LLM | None = None,
    search: Search | None = None,
    on_event: EventSink | None = None,
    **settings: Any,
) -> Answer:
    """Answer one question (the async twin of `ask`)."""
    spec = method if isinstance(method, Method) else get_method(method)
    # The profile's values for this method, as the CLI resolves them.
    loaded = resolve(load_settings(settings), method=spec.name)
    pipeline = Pipeline(
        loaded,
        llm=llm,
        reader_llm=reader_llm,
        search=search,
        with_search=spec.needs_search,
    )
    async with pipeline as engine:
        trace = await engine.run(question, task=task, method=spec, on_event=on_event)
    return Answer.of(trace)


def _blocking(twin: Callable[P, Coroutine[Any, Any, R]], name: str) -> Callable[P, R]:
    """`twin` run on an event loop of its own, under `name`: the signature is written
    once, on the async side, so the two cannot drift apart."""

    @functools.wraps(twin)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ConfigError(
                f"search_o1.{name} runs its own event loop; in async code use {twin.__name__}"
            )
        return asyncio.run(twin(*args, **kwargs))

    call.__name__ = call.__qualname__ = name
    return call


ask = _blocking(aask, "ask")
ask.__doc__ = """Answer one question: keyword settings as the CLI's flags, or ready objects.

Runs its own event loop, so it cannot be called from async code (use `aask`).
"""
