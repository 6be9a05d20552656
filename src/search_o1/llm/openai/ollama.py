"""Ollama's native API as the text wire on an Ollama server, as pure functions.

Why not its OpenAI endpoints: Ollama's `/v1/completions` applies the model's template to
the prompt (it never sets `raw`) and returns the answer without the thinking, so a raw
continuation of our chain is impossible there (`openai/openai.go`; ollama issue #12636).
Its native `/api/generate` with `raw: true` takes our rendered prompt as it is and keeps
the prompt cache; `think: false` keeps any `<think>` text in `response` instead of
moving it out (ollama PR #17708). Chat mode's first call goes to `/api/chat` with
`think: true` (the thinking comes in `message.thinking`); a chain is continued raw.

Facts from Ollama's source (`server/routes.go`, `api/types.go`) and API docs: both
endpoints take `model`, `stream` (true unless false), `options` (`stop`, `num_predict`,
`temperature`, `top_p`, `top_k`, `repeat_penalty`, `seed`, `num_ctx`); a streamed reply
is NDJSON, one object a line, with `response` / `thinking` (generate) or
`message.content` / `message.thinking` (chat), and `done`; the last line has
`done: true`, `done_reason` ("stop", "length"), `prompt_eval_count`, `eval_count`.
Stop strings are left out of the text. `GET /api/version` answers `{"version": ...}`,
`GET /api/tags` lists `models[].name`. Errors are `{"error": "..."}`.
"""

from __future__ import annotations

from typing import Any

from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import wire

GENERATE, CHAT = "/api/generate", "/api/chat"


def endpoint(root: str, openai_url: str) -> str:
    """Ollama's native URL for what would go to `openai_url` on an OpenAI server.

    >>> endpoint("http://h:11434", "http://h:11434/v1/chat/completions")
    'http://h:11434/api/chat'
    >>> endpoint("http://h:11434", "http://h:11434/completions")
    'http://h:11434/api/generate'
    """
    return root + (CHAT if openai_url.endswith("/chat/completions") else GENERATE)


def body(
    request: CompletionRequest,
    *,
    model: str | None,
    prompt: str | list[dict[str, Any]],
    stream: bool,
    context: int | None,
) -> dict[str, Any]:
    """The body of `/api/generate` (a raw prompt) or `/api/chat` (messages).

    >>> from search_o1.types import Prompt
    >>> b = body(CompletionRequest(Prompt(()), stop=["</q>"], max_tokens=9), model="m",
    ...          prompt="P", stream=False, context=None)
    >>> b["raw"], b["think"], b["options"]["stop"], b["options"]["num_predict"]
    (True, False, ['</q>'], 9)
    """
    sampling = request.sampling
    options: dict[str, Any] = {
        "num_predict": request.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,
        "repeat_penalty": sampling.repetition_penalty,
    }
    if request.stop:
        options["stop"] = list(request.stop)
    if sampling.seed is not None:
        options["seed"] = sampling.seed
    if context:
        # Ollama's own default window is a few thousand tokens, and a longer prompt is
        # cut from the front without a word: ask for the window we were told.
        options["num_ctx"] = context
    out: dict[str, Any] = {"model": model, "stream": stream, "options": options}
    if isinstance(prompt, str):
        # raw: our rendered prompt as it is; think false: `<think>` text stays in
        # `response`, where the chain's thinking lives.
        return out | {"prompt": prompt, "raw": True, "think": False}
    return out | {"messages": prompt, "think": True}


def _text(payload: dict[str, Any]) -> tuple[str, str]:
    """(thinking, text) of one generate or chat object."""
    message = payload.get("message")
    holder = message if isinstance(message, dict) else payload
    text = holder.get("content") if isinstance(message, dict) else holder.get("response")
    thinking = holder.get("thinking")
    return (
        thinking if isinstance(thinking, str) else "",
        text if isinstance(text, str) else "",
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def parse_reply(payload: Any) -> wire.Reply:
    """A whole (`stream: false`) generate or chat answer. Raises ValueError if malformed.

    >>> parse_reply({"response": "hi", "done": True, "done_reason": "length",
    ...              "prompt_eval_count": 5, "eval_count": 2}).finish_reason
    'length'
    """
    if not isinstance(payload, dict) or not payload.get("done"):
        raise ValueError("not a finished Ollama answer")
    if payload.get("error"):
        raise ValueError(str(payload["error"]))
    thinking, text = _text(payload)
    return wire.Reply(
        text=text,
        finish_reason=str(payload.get("done_reason") or "stop"),
        prompt_tokens=_count(payload.get("prompt_eval_count")) or None,
        completion_tokens=_count(payload.get("eval_count")),
        reasoning=thinking,
    )


class StreamState(wire.StreamState):
    """Accumulates Ollama's NDJSON objects into one Reply, as `wire.StreamState` does SSE
    chunks (the same joiner puts thinking and text into the chain)."""

    def feed(self, payload: Any) -> str:
        if not isinstance(payload, dict):
            raise ValueError("stream line is not a JSON object")
        if payload.get("error"):
            raise wire.StreamError(str(payload["error"])[:500])
        thinking, text = _text(payload)
        self.reasoning.append(thinking)
        self.parts.append(text)
        if payload.get("done"):
            self.finish_reason = str(payload.get("done_reason") or "stop")
            self.prompt_tokens = _count(payload.get("prompt_eval_count")) or None
            self.completion_tokens = _count(payload.get("eval_count"))
        return self.joiner.reasoning(thinking) + self.joiner.content(text)


class NdjsonDecoder:
    """Splits an NDJSON byte stream into its lines (the payloads `read_stream` feeds)."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [line.strip() for line in lines if line.strip()]

    def flush(self) -> list[bytes]:
        line, self._partial = self._partial.strip(), b""
        return [line] if line else []


def version(payload: Any) -> str | None:
    """The version in a `GET /api/version` answer, if it is one.

    >>> version({"version": "0.12.6"}), version({"object": "list"})
    ('0.12.6', None)
    """
    found = payload.get("version") if isinstance(payload, dict) else None
    return found if isinstance(found, str) and found else None


def model_names(payload: Any) -> tuple[str, ...]:
    """The local models in a `GET /api/tags` answer."""
    models = payload.get("models") if isinstance(payload, dict) else None
    names = [m.get("name") for m in models or [] if isinstance(m, dict)]
    return tuple(n for n in names if isinstance(n, str) and n)
