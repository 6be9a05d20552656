"""The OpenAI wire format, as pure functions: request bodies, responses, SSE, errors.

Kept apart from the client (openai.py) so every server quirk is a small, testable function:
- vLLM returns stop strings only with `include_stop_str_in_output`, and accepts (and
  ignores) unknown fields; it names the context window `max_model_len` in /v1/models.
- llama.cpp never returns the stop string; with `verbose: true` its OpenAI responses carry
  the native result under `__verbose` (including `stopping_word`); it reports `n_ctx` in
  /v1/models `meta` and /props; a non-streamed chat reply echoes a prefilled assistant text.
- OpenAI's hosted API rejects unknown fields, so it gets only the standard ones (what
  other servers refuse is learned from their 400s: fields.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from search_o1.llm.base import CompletionRequest
from search_o1.llm.reasoning import ChainJoiner
from search_o1.types import Sampling

ServerKind = Literal[
    "vllm",
    "sglang",
    "llamacpp",
    "deepseek",
    "openrouter",
    "openai",
    "anthropic",
    "gemini",
    "ollama",
    "unknown",
]
# `owned_by` in GET /v1/models, as each server writes it about itself.
_OWNERS: dict[str, ServerKind] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llamacpp": "llamacpp",
    "deepseek": "deepseek",
}
ApiMode = Literal["completions", "chat"]
# finish_reason values by which a server says it ended a generation itself, not the
# model: vLLM's "abort" (the engine aborted it, e.g. paused for a weight update) and
# "error" (`v1/engine/__init__.py` FinishReason), SGLang's "abort" (FINISH_ABORT, passed
# through by `serving_chat.py`), DeepSeek's "insufficient_system_resource". The text so
# far is no finished generation.
CUT_BY_SERVER = frozenset({"abort", "error", "insufficient_system_resource"})
FILTERED = "content_filter"


class Filtered(ValueError):
    """The server's content filter ended the reply (finish_reason "content_filter":
    OpenAI, DeepSeek, SGLang): no finished generation, and asked again it would only be
    filtered again, so the call fails with this, never retried."""

    def __init__(self) -> None:
        super().__init__(
            f"the server's content filter stopped the reply (finish_reason {FILTERED!r}); "
            "its text is not kept"
        )


class CutByServer(ValueError):
    """A tools turn the server ended itself (a `CUT_BY_SERVER` finish_reason): no turn
    of the model's, so it is asked again."""


# Error texts that mean "the prompt does not fit" across vLLM, llama.cpp, SGLang, OpenAI
# (vLLM's engine says "longer than the maximum model length", `v1/engine/processor.py`).
_OVERFLOW = re.compile(
    r"context length|context window|maximum context|context size|context_length_exceeded"
    r"|maximum model length"
    r"|exceed_context_size|prompt is too long|too many tokens|exceed\w*.{0,60}(context|token)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ServerInfo:
    """What GET /v1/models told us (empty when the server has no such endpoint)."""

    kind: ServerKind = "unknown"
    model_ids: tuple[str, ...] = ()
    context_length: int | None = None


@dataclass(frozen=True)
class Reply:
    """One completion as the server sent it, before stop-string normalisation.

    `text` is the content (or raw text); `reasoning` the thinking a reasoning parser split
    off; `reasoning_tokens` what the server counted as thinking, returned or not;
    `client_stop`: the stop string at which the client stopped reading a stream.
    """

    text: str
    finish_reason: str | None
    server_stop: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning: str = ""
    reasoning_tokens: int = 0
    client_stop: str | None = None


# ---- discovery ---------------------------------------------------------------------------


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _entry_context(entry: dict[str, Any]) -> int | None:
    # vLLM: max_model_len; llama.cpp: meta.n_ctx (the loaded context) before n_ctx_train.
    meta = entry.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    for value in (entry.get("max_model_len"), meta.get("n_ctx"), meta.get("n_ctx_train")):
        found = _positive_int(value)
        if found:
            return found
    return None


def parse_models(payload: Any, *, host_kind: ServerKind = "unknown") -> ServerInfo:
    """Model ids, server kind and context length from a GET /v1/models answer."""
    data = payload.get("data") if isinstance(payload, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    ids = tuple(str(e["id"]) for e in entries if e.get("id"))
    owners = [_OWNERS[o] for e in entries if (o := e.get("owned_by")) in _OWNERS]
    kind: ServerKind = owners[0] if owners else host_kind
    context = next((c for c in map(_entry_context, entries) if c), None)
    return ServerInfo(kind=kind, model_ids=ids, context_length=context)


def props_context(payload: Any) -> int | None:
    """llama.cpp GET /props: the per-slot context in default_generation_settings.n_ctx."""
    if not isinstance(payload, dict):
        return None
    settings = payload.get("default_generation_settings")
    return _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None


# ---- requests ----------------------------------------------------------------------------


# Hosted APIs: standard fields only (continuation fields come from continuation.chat_plan).
_STANDARD_ONLY = ("openai", "anthropic", "gemini", "deepseek")


def _extras(kind: ServerKind, sampling: Sampling, grammar: str | None) -> dict[str, Any]:
    """Non-standard fields, chosen per server. Unknown servers get the union: vLLM and
    llama.cpp both ignore fields they do not know."""
    if kind in _STANDARD_ONLY:
        return {}
    out: dict[str, Any] = {"top_k": sampling.top_k}
    if kind != "llamacpp":
        out["repetition_penalty"] = sampling.repetition_penalty
        out["include_stop_str_in_output"] = True
    if kind == "sglang":
        out["no_stop_trim"] = True  # SGLang's name for returning the stop string
    if kind != "vllm":
        out["repeat_penalty"] = sampling.repetition_penalty
        out["cache_prompt"] = True
        if grammar:
            out["grammar"] = grammar
    if kind == "llamacpp":
        out["verbose"] = True  # adds __verbose.stopping_word: which stop string matched
    return out


def build_body(
    request: CompletionRequest,
    *,
    model: str | None,
    prompt: str | list[dict[str, Any]],
    stream: bool,
    kind: ServerKind,
    extras: bool = True,
) -> dict[str, Any]:
    """The JSON body for /v1/completions (prompt is text) or /v1/chat/completions (a list).

    `prompt` is `request.prompt` as sent: rendered text, or chat messages.
    """
    sampling, stop = request.sampling, request.stop
    mode: ApiMode = "completions" if isinstance(prompt, str) else "chat"
    body: dict[str, Any] = {"prompt" if mode == "completions" else "messages": prompt}
    if model:
        body["model"] = model
    body |= {"max_tokens": request.max_tokens, "temperature": sampling.temperature}
    body["top_p"] = sampling.top_p
    if stop:
        body["stop"] = list(stop)
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    if extras:
        body |= _extras(kind, sampling, request.grammar)
    return body


# ---- responses ---------------------------------------------------------------------------


def _detail_text(detail: Any) -> str:
    """OpenRouter `reasoning_details` entry: readable text, or "" (encrypted blocks)."""
    if not isinstance(detail, dict):
        return ""
    value = detail.get("text") if detail.get("type") != "reasoning.summary" else None
    value = value if value is not None else detail.get("summary")
    return value if isinstance(value, str) else ""


def reasoning_text(holder: Any) -> str:
    """The thinking in a message or a streamed delta, whichever field the server used.

    vLLM 0.11 sends the same text under two names and OpenRouter sends `reasoning` next
    to `reasoning_details`, so the first field present wins; nothing is read twice.

    >>> reasoning_text({"reasoning": "a", "reasoning_content": "a", "content": "b"})
    'a'
    >>> reasoning_text({"reasoning_details": [{"type": "reasoning.text", "text": "t"}]})
    't'
    """
    if not isinstance(holder, dict):
        return ""
    for key in ("reasoning_content", "reasoning"):
        value = holder.get(key)
        if isinstance(value, str) and value:
            return value
    details = holder.get("reasoning_details")
    return "".join(map(_detail_text, details)) if isinstance(details, list) else ""


def reasoning_tokens(usage: Any) -> int:
    """`usage.completion_tokens_details.reasoning_tokens`, or 0."""
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    count = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return count if isinstance(count, int) and count > 0 else 0


def _choice(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ValueError("response is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no choices")
    return choices[0]


def _choice_text(choice: dict[str, Any]) -> str:
    if "text" in choice:
        return str(choice.get("text") or "")
    holder = choice.get("message") or choice.get("delta") or {}
    return str(holder.get("content") or "") if isinstance(holder, dict) else ""


def _choice_reasoning(choice: dict[str, Any]) -> str:
    return reasoning_text(choice.get("message") or choice.get("delta"))


def _usage(payload: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return None, None
    return _positive_int(usage.get("prompt_tokens")), _nonneg(usage.get("completion_tokens"))


def _nonneg(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def _server_stop(payload: dict[str, Any], choice: dict[str, Any]) -> str | None:
    verbose = payload.get("__verbose")
    for holder in (verbose, choice, payload):
        word = holder.get("stopping_word") if isinstance(holder, dict) else None
        if isinstance(word, str) and word:
            return word
    # vLLM reports the matched stop string as choices[].stop_reason, SGLang as
    # matched_stop (either is an int for a stop token id).
    for key in ("stop_reason", "matched_stop"):
        reason = choice.get(key)
        if isinstance(reason, str) and reason:
            return reason
    return None


def parse_reply(payload: Any) -> Reply:
    """A non-streamed completion or chat completion. Raises ValueError when malformed."""
    choice = _choice(payload)
    prompt_tokens, completion_tokens = _usage(payload)
    return Reply(
        text=_choice_text(choice),
        finish_reason=choice.get("finish_reason"),
        server_stop=_server_stop(payload, choice),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        reasoning=_choice_reasoning(choice),
        reasoning_tokens=reasoning_tokens(payload.get("usage")),
    )


class StreamState:
    """Accumulates SSE chunks into one Reply; `feed` returns the new text of a chunk.

    Reasoning deltas are kept apart from content (as in `Reply`); the text `feed` returns
    is both joined into raw chain text by `joiner` (see `reasoning.ChainJoiner`).
    """

    def __init__(self, joiner: ChainJoiner | None = None) -> None:
        self.parts: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_tokens = 0
        self.joiner = joiner or ChainJoiner(thinking=False)
        self.finish_reason: str | None = None
        self.server_stop: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None

    def feed(self, payload: Any) -> str:
        if not isinstance(payload, dict):
            raise ValueError("stream chunk is not a JSON object")
        if payload.get("error"):
            raise StreamError(error_message(payload))
        prompt_tokens, completion_tokens = _usage(payload)
        self.prompt_tokens = prompt_tokens or self.prompt_tokens
        self.completion_tokens = completion_tokens or self.completion_tokens
        self.reasoning_tokens = reasoning_tokens(payload.get("usage")) or self.reasoning_tokens
        if not payload.get("choices"):  # the usage-only chunk at the end
            return ""
        choice = _choice(payload)
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        self.server_stop = _server_stop(payload, choice) or self.server_stop
        thought, text = _choice_reasoning(choice), _choice_text(choice)
        self.reasoning.append(thought)
        self.parts.append(text)
        return self.joiner.reasoning(thought) + self.joiner.content(text)

    def reply(self) -> Reply:
        return Reply(
            "".join(self.parts),
            self.finish_reason,
            self.server_stop,
            self.prompt_tokens,
            self.completion_tokens,
            "".join(self.reasoning),
            self.reasoning_tokens,
        )


class StreamError(ValueError):
    """The server reported an error inside an SSE stream."""


class SseDecoder:
    """Splits an SSE byte stream into the payloads of its `data:` lines, as bytes.

    Lines end at LF, CRLF or CR, as the SSE grammar says. Splitting bytes (not text, as
    httpx's `aiter_lines` does) matters for correctness as well as speed: str.splitlines
    also breaks at U+2028, U+2029 and U+0085, which JSON leaves unescaped inside strings,
    so a model writing one would cut its chunk in two. Comments, blank lines and other
    fields are dropped; `json.loads` takes the UTF-8 payloads as they are.
    """

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # a line not yet ended, in pieces

    def feed(self, chunk: bytes) -> list[bytes]:
        if b"\n" not in chunk and b"\r" not in chunk:
            self._partial.append(chunk)  # joined once, when the line ends
            return []
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial = []
        lines = chunk.splitlines()  # bytes: only CR, LF and CRLF end a line
        if not chunk.endswith((b"\n", b"\r")):
            self._partial.append(lines.pop())
        return _data(lines)

    def flush(self) -> list[bytes]:
        """The payload of a last line the stream ended without a newline."""
        lines, self._partial = [b"".join(self._partial)], []
        return _data(lines)


def _data(lines: list[bytes]) -> list[bytes]:
    return [line[5:].strip() for line in lines if line.startswith(b"data:")]


# ---- errors ------------------------------------------------------------------------------


def error_message(payload: Any) -> str:
    """The human text of an error body: {"error": {"message"}} / {"error": "..."} / {"detail"}."""
    if isinstance(payload, dict):
        err = payload.get("error", payload.get("detail", payload.get("message")))
        if isinstance(err, dict):
            return str(err.get("message") or err.get("type") or json.dumps(err))[:500]
        if err is not None:
            return str(err)[:500]
    return str(payload)[:500]


def body_message(text: str) -> str:
    try:
        return error_message(json.loads(text))
    except ValueError:
        return text.strip()[:500] or "(empty body)"


def is_overflow(status: int, message: str) -> bool:
    return status in (400, 413, 422) and bool(_OVERFLOW.search(message))


def is_retryable(status: int) -> bool:
    """Statuses worth trying again. 501 (not implemented) and 505 say the server will
    never serve this request: `python3 -m http.server` answers a POST with 501."""
    return status in (408, 409, 425, 429) or (status >= 500 and status not in (501, 505))


def no_such_endpoint(status: int, message: str) -> bool:
    """404/405/501 not about the model: the server has no such path or method."""
    return status in (404, 405, 501) and "model" not in message.lower()


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def is_html(content_type: str, text: str) -> bool:
    head = text.lstrip()[:64].lower()
    return "html" in content_type.lower() or head.startswith(("<!doctype html", "<html"))


def describe_body(content_type: str, text: str) -> str:
    """One line saying what a body that is not our JSON was (never the whole page).

    >>> describe_body("text/html", "<html><title>Error response</title><p>...")
    "an HTML page titled 'Error response'"
    >>> describe_body("application/json", '{"object": "list"}')
    'application/json: {"object": "list"}'
    """
    if is_html(content_type, text):
        title = _TITLE.search(text)
        name = " ".join(title.group(1).split())[:80] if title else ""
        return f"an HTML page titled {name!r}" if name else "an HTML page"
    line = " ".join(text.split())[:120]
    if not line:
        return "an empty body"
    return f"{content_type.split(';')[0] or 'a body'}: {line}"
