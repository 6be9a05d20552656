"""The state of one question's chain while it runs (`ChainState`), and the hook a
scheduler puts around each of its model, search and reader calls (`PhaseGate`).

One `Engine` serves many questions at once; everything that belongs to one question
lives here, so the loop, the turn drivers and query answering share it through this one
public type rather than through each other's internals.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Literal

from search_o1 import markers as mk
from search_o1.engine.methods import Method
from search_o1.tokens import estimate_tokens
from search_o1.types import Event, EventSink, Hit, Prompt, TextDelta, TextSink, Trace, Usage

__all__ = ["ChainState", "Phase", "PhaseGate"]

# A scheduler's hook around each model call, search and reader call of one run: the
# "rounds" schedule holds a chain at a barrier there; resource limits hold a slot.
Phase = Literal["generate", "search", "read"]
PhaseGate = Callable[[Phase], AbstractAsyncContextManager[None]]


@dataclass
class ChainState:
    """Everything one question's run owns while it runs.

    - `trace`: the record being written (steps, usage, answer, finish reason).
    - `prompt`: what the model continues; `append` grows its raw continuation.
    - `task`, `method`: what the question asks for and how it is answered.
    - `on_event`: the listener for live events (None: nobody listens).
    - `gate`: the scheduler's hook around each phase (None: run freely).
    - `searches`, `url_fetches`: searches run and pages read so far (against the limits).
    - `results`: query -> the block inserted for it (a repeated query gets it again).
    - `seen_hits`: URL or id -> hit shown in raw results (pages rag-agent may ask for).
    - `read_urls`: pages requested so far (the paper profile does not read one twice).
    - `known_tokens`, `unreported_chars`: the prompt's size as of the server's last
      report, and the characters appended since; together, `tokens_estimate`.
    - `capped_by_context`: the last call's token limit was cut to fit the window, so a
      cut-off generation is a context overflow rather than the budget running out.
    - `shown_queries`: the example queries of the instruction (a copy is a placeholder).
    """

    trace: Trace
    prompt: Prompt
    task: str
    method: Method
    on_event: EventSink | None = None
    gate: PhaseGate | None = None
    searches: int = 0
    url_fetches: int = 0
    results: dict[str, str] = field(default_factory=dict)
    seen_hits: dict[str, Hit] = field(default_factory=dict)
    read_urls: set[str] = field(default_factory=set)
    known_tokens: int = 0
    unreported_chars: int = 0
    capped_by_context: bool = False
    shown_queries: frozenset[str] = frozenset()

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def text_sink(self) -> TextSink | None:
        """Generated text for a listener; None when no one listens, so that a model
        stream cut off midway can be resent (nothing shown has to be taken back)."""
        if self.on_event is None:
            return None
        return lambda text: self.emit(TextDelta(text))

    def append(self, text: str, *, generated: bool = False) -> None:
        """Grow the chain; text the system inserts is shown to listeners here (the
        model's own text was streamed to them as it came)."""
        self.prompt = self.prompt.extend(text)
        self.unreported_chars += len(text)
        if not generated and text:
            self.emit(TextDelta(text, inserted=True))

    def count_usage(self, prompt_tokens: int, completion_tokens: int) -> None:
        """Add one model call's tokens; a server's count replaces the running estimate."""
        self.trace.usage += Usage(prompt_tokens, completion_tokens)
        if prompt_tokens:
            self.known_tokens = prompt_tokens + completion_tokens
            self.unreported_chars = 0

    def reopen_thinking(self) -> None:
        """Before a result goes in: a query written after `</think>` gets it inside the
        thinking (see markers.reopen_thinking); the trace's steps keep the model's text."""
        text = mk.reopen_thinking(self.prompt.continuation)
        if text != self.prompt.continuation:
            self.prompt = dataclasses.replace(self.prompt, continuation=text)

    def phase(self, name: Phase) -> AbstractAsyncContextManager[None]:
        return self.gate(name) if self.gate is not None else contextlib.nullcontext()

    def tokens_estimate(self) -> int:
        return self.known_tokens + estimate_tokens(self.unreported_chars) + 1
