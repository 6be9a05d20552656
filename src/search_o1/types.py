"""Plain data that crosses module boundaries: hits, documents, completions, traces.

Everything here is a frozen dataclass (or a small mutable record owned by one engine run)
so a trace can be written to JSON and read back without custom code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from search_o1.tool_chat import ChatMessage


class FinishReason(StrEnum):
    """Why a question's chain ended. Every exit of the engine sets exactly one."""

    ANSWERED = "answered"
    NO_ANSWER = "no_answer"
    MAX_TOKENS = "max_tokens"
    MAX_TURNS = "max_turns"
    CONTEXT_OVERFLOW = "context_overflow"
    ERROR = "error"


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Prompt:
    """What a model is asked to continue.

    `messages` are rendered once through the model's chat template (with a generation
    prompt); `continuation` is the raw assistant text so far, appended byte-for-byte.
    A completions backend sends `render(messages) + continuation`, so every request in a
    chain extends the previous one and the server's prefix cache reuses it; a chat
    backend sends the messages plus `continuation` as a final assistant message to be
    continued.
    """

    messages: tuple[Message, ...]
    continuation: str = ""

    def extend(self, text: str) -> Prompt:
        return dataclasses.replace(self, continuation=self.continuation + text)


@dataclass(frozen=True)
class Sampling:
    """Sampling settings; the defaults are the paper's (QwQ-32B-Preview runs)."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    repetition_penalty: float = 1.05
    seed: int | None = None


@dataclass(frozen=True)
class Completion:
    """One model call's result, normalised across servers.

    `text` never contains the stop string; `stop` says which one ended generation
    (None when the model stopped on its own end-of-sequence or hit `max_tokens`).
    Thinking a server returned apart (`reasoning_content`, `reasoning`) is in `text`
    too, inside `<think>`...`</think>`, as a raw completion would have it.
    `continuation`: how the request continued the chain so far ("raw" completions,
    "continue_final", "prefix", "prefill"); None when there was nothing to continue or
    the backend does not say.
    `client_stop`: the backend, not the server, ended the generation at `stop` (a
    server that ignored the stop string, or applied it to the answer only: the stream
    was closed at the marker, or the text after it dropped). `replaced`: lone
    surrogates in the prompt or the reply that were sent or kept as U+FFFD.
    """

    text: str
    finish: Literal["stop", "length"]
    stop: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    continuation: str | None = None
    client_stop: bool = False
    replaced: int = 0


@dataclass(frozen=True)
class Hit:
    """One search result. Local corpora fill `text`; web engines fill `url`/`snippet`."""

    id: str
    title: str
    text: str = ""
    url: str | None = None
    snippet: str = ""
    score: float | None = None
    date: str | None = None
    source: str = ""
    # Lone surrogates in the backend's reply made U+FFFD in this hit's text (how many).
    replaced: int = 0


@dataclass(frozen=True)
class Document:
    """What the reader sees for one hit: the hit plus the text chosen from it.

    `status` is "ok" (full text read), "snippet-only" (no page text was wanted or
    none was found) or "failed: <reason>" (the fetch failed; `text` is the snippet).
    """

    hit: Hit
    text: str
    status: str = "ok"


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class ReaderResult:
    """One Reason-in-Documents call: what it was given and what came back.

    `truncated`: the output was cut by its token limit (what it had found before
    `**Final Information**` may be missing).
    """

    prompt: str
    raw: str
    refined: str
    found: bool
    usage: Usage = Usage()
    latency_s: float = 0.0
    truncated: bool = False


@dataclass(frozen=True)
class SearchRecord:
    """One query the model wrote and how the system answered it.

    `outcome`: "searched", "repeated" (answered from the earlier result), "limit"
    (the search limit was reached), "empty" (the query was blank), "placeholder" (a
    query copied from the instructions, not searched; see `search_o1.queries`) or
    "failed".
    """

    query: str
    outcome: Literal["searched", "repeated", "limit", "empty", "placeholder", "failed"]
    hits: tuple[Hit, ...] = ()
    documents: tuple[Document, ...] = ()
    reader: ReaderResult | None = None
    inserted: str = ""
    error: str | None = None
    latency_s: float = 0.0


# How a one-line summary names the queries that were not searched (see SearchRecord).
_OTHER_OUTCOMES = {
    "repeated": "repeated",
    "limit": "over the limit",
    "empty": "empty",
    "placeholder": "placeholder",
    "failed": "failed",
}


@dataclass(frozen=True)
class Source:
    """One numbered source of an answer: a document the facts the chain used came from.

    `id` is the passage id (local corpora) or the hit's id; `url` is set for web pages.
    `quote`: the sentence(s) of the document a fact was read from, where found ("" if
    none matched). `query`: the search that found it.
    """

    n: int
    id: str
    title: str
    url: str | None = None
    quote: str = ""
    query: str = ""


@dataclass(frozen=True)
class Step:
    """One generation turn: the text the model wrote, then the search it asked for, if any."""

    index: int
    text: str
    completion: Completion
    search: SearchRecord | None = None


@dataclass
class Trace:
    """The full record of one question. Owned and filled by a single engine run."""

    question: str
    method: str = "search-o1"
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None
    finish_reason: FinishReason | None = None
    error: str | None = None
    usage: Usage = Usage()
    reader_usage: Usage = Usage()
    latency_s: float = 0.0
    prompt: Prompt | None = None
    # Tools mode only: the conversation as sent (calls, tool results, echoed reasoning).
    messages: list[ChatMessage] = field(default_factory=list)

    @property
    def output(self) -> str:
        """The assistant text of the chain, as the model saw it (without the instruction)."""
        return self.prompt.continuation if self.prompt else ""

    @property
    def searches(self) -> list[SearchRecord]:
        return [s.search for s in self.steps if s.search is not None]

    @property
    def searches_summary(self) -> str:
        """The searches run, then the queries answered otherwise, for a one-line summary.

        Only searches that ran count (as eval's `n_searches`): a chain that repeated one
        query fifteen times under a limit of five read "searches: 15".
        """
        ran = sum(1 for r in self.searches if r.outcome == "searched")
        others: dict[str, int] = {}
        for r in self.searches:
            if r.outcome != "searched":
                word = _OTHER_OUTCOMES[r.outcome]
                others[word] = others.get(word, 0) + 1
        rest = ", ".join(f"{n} {word}" for word, n in others.items())
        return f"{ran} ({rest})" if rest else str(ran)

    @property
    def client_stops(self) -> int:
        """Generations the model client ended at a stop string the server let pass."""
        return sum(1 for s in self.steps if s.completion.client_stop)

    @property
    def prompt_too_long(self) -> str | None:
        """Why, when the question's prompt alone did not fit the model's context window
        (nothing was generated); None otherwise. Callers answer this as a bad request."""
        if self.finish_reason is not FinishReason.CONTEXT_OVERFLOW or self.usage.completion_tokens:
            return None
        return self.error or "the prompt is longer than the model's context window"

    def document_counts(self) -> dict[str, int]:
        """How the documents of every search fared: read in full ("ok"), snippet only by
        choice ("snippet_only"), fetch failed ("failed"), or fetched but empty ("empty")."""
        counts = {"ok": 0, "snippet_only": 0, "failed": 0, "empty": 0}
        for record in self.searches:
            for doc in record.documents:
                counts[_status_kind(doc.status)] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)  # type: ignore[no-any-return]


def _status_kind(status: str) -> str:
    if status == "ok":
        return "ok"
    if status == "snippet-only":
        return "snippet_only"
    return "empty" if "empty" in status else "failed"


def to_jsonable(obj: Any) -> Any:
    """Dataclasses/enums/tuples -> JSON-ready values (dicts, lists, str, numbers)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        if isinstance(obj, Trace):
            out["output"] = obj.output
        return out
    if isinstance(obj, StrEnum):
        return obj.value
    if isinstance(obj, list | tuple):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    return obj


# ---- live events, for the CLI's streaming view and the server's SSE stream ----


@dataclass(frozen=True)
class TextDelta:
    """Chain text as it grows: the model's own words, or text the system inserted
    (markers, search results) when `inserted` is True."""

    text: str
    inserted: bool = False


@dataclass(frozen=True)
class SearchStarted:
    query: str


@dataclass(frozen=True)
class SearchFinished:
    record: SearchRecord


@dataclass(frozen=True)
class Finished:
    trace: Trace


Event = TextDelta | SearchStarted | SearchFinished | Finished
EventSink = Callable[[Event], None]
TextSink = Callable[[str], None]
