"""The OpenAI chat-completions wire format: parse requests, build responses and SSE chunks.

Pure functions over dicts and traces, so the whole format is testable without a server.

A search-o1 run maps onto a reasoning-model reply: the chain (reasoning, queries and the
inserted search results) is `reasoning_content`, the extracted answer is `content`. Each
search travels as an extension object under the `search_o1` key of a chunk; standard
clients ignore unknown keys, our page draws them as cards. The answer's sources go out as
OpenAI's `url_citation` annotations on the message (the last content delta when
streaming) and as a top-level `citations` list of URLs.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from search_o1 import markers as mk
from search_o1.engine import method_names
from search_o1.sources import answer_sources
from search_o1.tasks import TASKS
from search_o1.types import FinishReason, SearchRecord, Source, Trace, to_jsonable

EXTENSION = "search_o1"  # the key of our extension object in responses and chunks
_LENGTH_REASONS = (FinishReason.MAX_TOKENS, FinishReason.MAX_TURNS, FinishReason.CONTEXT_OVERFLOW)


class WireError(Exception):
    """A request the API refuses; becomes an OpenAI error object with `status`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_body(self.message, type=self.type, code=self.code, param=self.param)


def error_body(
    message: str, *, type: str, code: str | int | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


@dataclass(frozen=True)
class ChatRequest:
    """What a chat-completions request asks of a run, validated."""

    question: str
    stream: bool = False
    include_usage: bool = False
    task: str | None = None
    method: str = "search-o1"
    # Settings fields to override for this request only (max_tokens, temperature, top_p).
    overrides: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------- requests


def parse_chat_request(body: Any, *, model_name: str) -> ChatRequest:
    """Validate a request body; raises WireError (400, or 404 for an unknown model).

    Unknown fields are ignored, as OpenAI does. Extension fields `task` and `method`
    (sent with the client's `extra_body`) choose the task kind and the method.
    """
    if not isinstance(body, dict):
        raise WireError(400, "the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError(400, "you must provide a model parameter", param="model")
    if model != model_name:
        raise WireError(
            404,
            f"The model `{model}` does not exist; this server serves `{model_name}`.",
            code="model_not_found",
            param="model",
        )
    if body.get("n", 1) not in (1, None):
        raise WireError(400, "only n=1 is supported", param="n")
    stream_options = body.get("stream_options") or {}
    return ChatRequest(
        question=question_from_messages(body.get("messages")),
        stream=_flag(body, "stream"),
        include_usage=isinstance(stream_options, dict)
        and bool(stream_options.get("include_usage")),
        task=_choice(body, "task", TASKS),
        method=_choice(body, "method", tuple(method_names())) or "search-o1",
        overrides=_overrides(body),
    )


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise WireError(400, f"{name} must be a boolean", param=name)
    return value


def _choice(body: dict[str, Any], name: str, allowed: tuple[str, ...]) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise WireError(400, f"{name} must be one of {', '.join(allowed)}", param=name)
    return str(value)


def _number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise WireError(400, f"{name} must be a number from {low} to {high}", param=name)
    return float(value)


def _overrides(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # max_completion_tokens is the newer name; either caps the whole chain's new tokens.
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise WireError(400, f"{name} must be a positive integer", param=name)
        out.setdefault("max_tokens", value)
    temperature = _number(body, "temperature", 0.0, 2.0)
    if temperature is not None:
        out["temperature"] = temperature
    top_p = _number(body, "top_p", 0.0, 1.0)
    if top_p is not None:
        if top_p == 0:
            raise WireError(400, "top_p must be greater than 0", param="top_p")
        out["top_p"] = top_p
    return out


def _content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(str(p) for p in parts)
    if content is None:
        return ""
    raise WireError(400, "message content must be a string or a list of parts", param="messages")


def question_from_messages(messages: Any) -> str:
    """The last user message is the question; earlier turns go before it as context.

    >>> question_from_messages([{"role": "user", "content": "Who wrote Tosca?"}])
    'Who wrote Tosca?'
    >>> print(question_from_messages([
    ...     {"role": "user", "content": "Tell me about Tosca."},
    ...     {"role": "assistant", "content": "An opera by Puccini."},
    ...     {"role": "user", "content": "Where was he born?"}]))
    Conversation so far:
    User: Tell me about Tosca.
    Assistant: An opera by Puccini.
    <BLANKLINE>
    Question: Where was he born?
    """
    if not isinstance(messages, list) or not messages:
        raise WireError(400, "messages must be a non-empty list", param="messages")
    turns: list[tuple[str, str]] = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise WireError(400, "each message needs a role and content", param="messages")
        turns.append((m["role"], _content_text(m.get("content"))))
    last = max((i for i, (role, _) in enumerate(turns) if role == "user"), default=None)
    if last is None:
        raise WireError(400, "messages must contain a user message", param="messages")
    question = turns[last][1].strip()
    if not question:
        raise WireError(400, "the last user message is empty", param="messages")
    # Turns after the last user message (e.g. an assistant prefill) are not a question.
    context = [(r, t.strip()) for r, t in turns[:last] if t.strip()]
    if not context:
        return question
    lines = "\n".join(f"{role.capitalize()}: {text}" for role, text in context)
    return f"Conversation so far:\n{lines}\n\nQuestion: {question}"


# ---------------------------------------------------------------------- responses


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def finish_reason(trace: Trace) -> str:
    """OpenAI's finish_reason: "length" when a budget cut the chain, else "stop"."""
    return "length" if trace.finish_reason in _LENGTH_REASONS else "stop"


# Why a finished chain has no answer, by how it ended: `content` says so in words.
_NO_ANSWER_WHY = {
    FinishReason.MAX_TOKENS: "the token budget (max_tokens) ran out first",
    FinishReason.MAX_TURNS: "the turn limit ran out first",
    FinishReason.CONTEXT_OVERFLOW: "the chain filled the model's context window first",
}


def answer_text(trace: Trace) -> str:
    """`content`: the extracted answer, or when none, a sentence saying there is none and
    why (the chain's own words stay in `reasoning_content`; its tail is no answer).

    Our markers never reach `content`.

    >>> answer_text(Trace("q", "search-o1", steps=[], finish_reason=FinishReason.MAX_TOKENS))
    'No answer: the token budget (max_tokens) ran out first. The reasoning is in reasoning_content.'
    """
    if trace.answer is not None:
        return without_markers(trace.answer)
    ended = trace.finish_reason
    why = (ended and _NO_ANSWER_WHY.get(ended)) or "the model gave no final answer"
    return f"No answer: {why}. The reasoning is in reasoning_content."


def without_markers(text: str) -> str:
    """`text` up to the first opening marker, with any other marker removed.

    >>> without_markers("So it is Lucca. <|begin_search_query|>Lucca popul")
    'So it is Lucca.'
    >>> without_markers("<|end_search_result|> Lucca")
    'Lucca'
    """
    opening = [i for m in (mk.BEGIN_QUERY, mk.BEGIN_URL) if (i := text.find(m)) >= 0]
    if opening:
        text = text[: min(opening)]
    for marker in mk.ALL_MARKERS:
        text = text.replace(marker, "")
    return text.strip()


def usage(trace: Trace) -> dict[str, Any]:
    """Tokens of the main model and the reader together (both are billed work)."""
    prompt = trace.usage.prompt_tokens + trace.reader_usage.prompt_tokens
    completion = trace.usage.completion_tokens + trace.reader_usage.completion_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": trace.usage.completion_tokens},
    }


def search_event(record: SearchRecord) -> dict[str, Any]:
    """A finished search as the extension object: query, hits, the facts inserted."""
    refined = record.reader.refined if record.reader is not None else _unwrap(record.inserted)
    return {
        "type": "search",
        "query": record.query,
        "outcome": record.outcome,
        "hits": [
            {"title": h.title, "url": h.url, "id": h.id, "score": h.score} for h in record.hits
        ],
        "refined": refined,
        "error": record.error,
        "latency_s": round(record.latency_s, 4),
    }


def _unwrap(inserted: str) -> str:
    text = inserted.strip()
    for marker in (mk.BEGIN_RESULT, mk.END_RESULT, mk.BEGIN_FULL_PAGE, mk.END_FULL_PAGE):
        text = text.replace(marker, "")
    return text.strip()


def source_url(source: Source) -> str:
    """A source's URL; a local passage, which has none, is named `passage:<id>`."""
    return source.url or f"passage:{source.id}"


def url_annotations(content: str, sources: Sequence[Source]) -> list[dict[str, Any]]:
    """OpenAI's `url_citation` annotations: each source supports the whole answer.

    Besides OpenAI's fields (url, title, start_index, end_index) each carries the source's
    number `n`, its passage or hit `id` and the supporting sentence `quote`.
    """
    return [
        {
            "type": "url_citation",
            "url_citation": {
                "url": source_url(s),
                "title": s.title,
                "start_index": 0,
                "end_index": len(content),
                "n": s.n,
                "id": s.id,
                "quote": s.quote,
            },
        }
        for s in sources
    ]


def citations(sources: Sequence[Source]) -> list[str]:
    """The top-level `citations` list (as Perplexity's API sends it): one URL per source."""
    return [source_url(s) for s in sources]


def done_event(trace: Trace, *, queued_s: float) -> dict[str, Any]:
    """The run's summary: why it ended, timings, token counts of model and reader."""
    return {
        "type": "done",
        "finish_reason": trace.finish_reason.value if trace.finish_reason else None,
        "answer": trace.answer,
        "searches": len(trace.searches),
        "sources": [to_jsonable(s) for s in answer_sources(trace)],
        "latency_s": round(trace.latency_s, 4),
        "queued_s": round(queued_s, 4),
        "usage": {
            "prompt_tokens": trace.usage.prompt_tokens,
            "completion_tokens": trace.usage.completion_tokens,
            "reader_prompt_tokens": trace.reader_usage.prompt_tokens,
            "reader_completion_tokens": trace.reader_usage.completion_tokens,
        },
    }


def completion_body(
    trace: Trace, *, completion_id: str, model: str, created: int, queued_s: float
) -> dict[str, Any]:
    """The non-streaming response."""
    content = answer_text(trace)
    sources = answer_sources(trace)
    message = {
        "role": "assistant",
        "content": content,
        "reasoning_content": trace.output,
        "annotations": url_annotations(content, sources),
    }
    extension = done_event(trace, queued_s=queued_s)
    extension["search_events"] = [search_event(s) for s in trace.searches]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(trace),
                "logprobs": None,
            }
        ],
        "usage": usage(trace),
        "citations": citations(sources),
        EXTENSION: extension,
    }


# ---------------------------------------------------------------------- streaming


@dataclass(frozen=True)
class ChunkMaker:
    """Builds the chunks of one streamed completion (same id, created and model)."""

    completion_id: str
    model: str
    created: int = field(default_factory=lambda: int(time.time()))

    def chunk(
        self,
        delta: dict[str, Any] | None = None,
        *,
        finish: str | None = None,
        extension: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "delta": delta or {}, "finish_reason": finish, "logprobs": None}
            ],
        }
        if extension is not None:
            out[EXTENSION] = extension
        return out

    def usage_chunk(self, trace: Trace) -> dict[str, Any]:
        """The final chunk of `stream_options.include_usage`: no choices, only usage."""
        out = self.chunk()
        out["choices"] = []
        out["usage"] = usage(trace)
        return out


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


DONE = sse("[DONE]")
