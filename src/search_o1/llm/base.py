"""The model protocol every backend implements, and the shared stop-string normalisation."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from search_o1.types import Completion, Prompt, Sampling, TextSink


@dataclass(frozen=True)
class CompletionRequest:
    """One request to a model: what to continue and how.

    `prompt` is the chain so far (instruction messages + raw continuation); generation
    ends at any of `stop` or after `max_tokens`; `grammar` (optional) is a GBNF grammar,
    ignored by backends that cannot apply one. `role` says who asks: the chain
    ("main") or Reason-in-Documents ("reader"); a scripted model answers each from its
    own script. A frozen value: backends and routers pass
    it on unchanged, and a new capability (tool definitions, reasoning options) is a new
    field with a default here, not a new argument in every backend.

    >>> r = CompletionRequest(Prompt(()), stop=["</q>"], max_tokens=8)
    >>> r.stop, r.with_prompt(Prompt((), "so far")).prompt.continuation
    (('</q>',), 'so far')
    """

    prompt: Prompt
    stop: Sequence[str] = ()
    max_tokens: int = 1024
    sampling: Sampling = field(default_factory=Sampling)
    grammar: str | None = None
    role: Literal["main", "reader"] = "main"

    def __post_init__(self) -> None:
        # A tuple whatever the caller passed: the request stays immutable and hashable.
        object.__setattr__(self, "stop", tuple(self.stop))

    def with_prompt(self, prompt: Prompt) -> CompletionRequest:
        return dataclasses.replace(self, prompt=prompt)


@runtime_checkable
class LLM(Protocol):
    """A text model that continues a prompt.

    `complete` must return a Completion whose `text` excludes the stop string and whose
    `stop` names it, whatever the server did; backends call `normalise_stop` for that.
    `on_text` (optional) receives text pieces as they arrive, for live display; it is
    a keyword beside the request because it is a callback of this call, not part of
    what is asked.
    """

    name: str

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion: ...

    async def context_length(self) -> int | None:
        """The model's context window in tokens, when known."""
        ...

    async def aclose(self) -> None: ...


def normalise_stop(
    text: str, finish: str, stop: Sequence[str], *, server_stop: str | None = None
) -> tuple[str, str | None]:
    """Return (text up to the stop string, the stop string that ended it or None).

    vLLM appends the stop string only when asked; llama.cpp never does, but may report
    which one matched (`server_stop`); a server that ignores `stop` altogether returns
    text past it, which is cut here at the earliest stop string. All shapes end up
    identical.

    >>> normalise_stop("q<|end_search_query|>", "stop", ["<|end_search_query|>"])
    ('q', '<|end_search_query|>')
    >>> normalise_stop("q", "stop", ["<|end_search_query|>"], server_stop="<|end_search_query|>")
    ('q', '<|end_search_query|>')
    >>> normalise_stop("q<|end_search_query|> and more", "stop", ["<|end_search_query|>"])
    ('q', '<|end_search_query|>')
    >>> normalise_stop("done", "stop", ["<|end_search_query|>"])
    ('done', None)
    """
    found = [(i, s) for s in stop if s and (i := text.find(s)) >= 0]
    if found:
        cut, hit = min(found)
        return text[:cut], hit
    if finish == "stop" and server_stop in stop:
        return text, server_stop
    return text, None
