"""Reasoning fields and chain continuation over chat APIs, as pure functions.

A server running a reasoning parser (vLLM, SGLang, llama.cpp, DeepSeek, OpenRouter, ...)
returns the model's thinking apart from its answer: `reasoning_content` (SGLang, llama.cpp,
DeepSeek, vLLM up to 0.10), `reasoning` (vLLM from 0.11, Ollama, OpenRouter) or
OpenRouter's structured `reasoning_details`; streamed deltas use the same names. The
engine works on one raw chain of text, so a reply is joined back into it: thinking opens
with `<think>\\n` and a switch to the answer writes `</think>`, exactly the text a
`<think>`-template model produces on a raw completions endpoint.

Continuing that chain after a search depends on the server (`Continuation`):
- "raw": `/v1/completions` with the rendered prompt plus the chain (the most robust);
- "continue_final": the chain as a final assistant message with vLLM's
  `continue_final_message: true` + `add_generation_prompt: false` (SGLang: the flag only,
  and its template already opened `<think>`, so the opening is left out);
- "prefix": DeepSeek's prefix completion (under `/beta`): `prefix: true` on the last
  assistant message, the thinking so far carried back in its `reasoning_content`;
- "prefill": a plain trailing assistant message (llama.cpp, OpenRouter, unknown servers).
Hosted APIs that hide the thinking and cannot continue a message (OpenAI, Anthropic,
Gemini) get none: marker search cannot work there, only tool calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from search_o1.markers import THINK_CLOSE, THINK_OPEN

OPENING = THINK_OPEN + "\n"

Continuation = Literal["raw", "continue_final", "prefix", "prefill"]
# Which continuation each server kind supports over chat; None: it cannot continue.
CHAT_CONTINUATION: Mapping[str, Continuation | None] = {
    "vllm": "continue_final",
    "sglang": "continue_final",
    "unknown": "continue_final",  # vLLM-compatible fields; ignored by servers without them
    "llamacpp": "prefill",
    "openrouter": "prefill",
    "deepseek": "prefix",
    "openai": None,
    "anthropic": None,
    "gemini": None,
}
_HOSTS = {
    "api.openai.com": "openai",
    "api.deepseek.com": "deepseek",
    "openrouter.ai": "openrouter",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gemini",
}


def chat_continuation(kind: str, chain: str) -> Continuation | None:
    """How a chat-mode client continues `chain` on a server of `kind` (None: it cannot).

    llama.cpp refuses an assistant prefill while thinking is on (or, in some builds,
    answers it with a mangled think block), so a chain that thinks goes to its raw
    completions, which every llama.cpp server has.

    >>> chat_continuation("llamacpp", "<think>\\nhm"), chat_continuation("llamacpp", "hm")
    ('raw', 'prefill')
    """
    if kind == "llamacpp" and THINK_OPEN in chain:
        return "raw"
    return CHAT_CONTINUATION.get(kind, "continue_final")


def join_prompt(rendered: str, chain: str) -> str:
    """A rendered instruction prompt plus a chat-mode chain, with one `<think>` only.

    A chain read from a chat server opens with `<think>\\n` (written by ChainJoiner); a
    template whose generation prompt already opened it must not get a second one.

    >>> join_prompt("<|im_start|>assistant\\n<think>\\n", "<think>\\nhm")
    '<|im_start|>assistant\\n<think>\\nhm'
    """
    if chain.startswith(THINK_OPEN) and rendered.rstrip().endswith(THINK_OPEN):
        chain = chain[len(THINK_OPEN) :].removeprefix("\n")
    return rendered + chain


def host_kind(url: str) -> str:
    """The hosted API a base URL points at, or "unknown" (self-hosted servers).

    >>> host_kind("https://api.deepseek.com/v1"), host_kind("http://10.0.0.5:8000/v1")
    ('deepseek', 'unknown')
    """
    return _HOSTS.get(urlsplit(url).hostname or "", "unknown")


# ---- reading replies ---------------------------------------------------------------------


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


def thinking_open(text: str) -> bool:
    """Whether `text` ends inside a think block.

    >>> thinking_open("<think>\\nhm"), thinking_open("<think>a</think>b"), thinking_open("x")
    (True, False, False)
    """
    return text.rfind(THINK_OPEN) > text.rfind(THINK_CLOSE)


class ChainJoiner:
    """Joins one reply's reasoning and content pieces into raw chain text, in order.

    `thinking`: whether the chain is inside a think block when the reply starts. The
    first reasoning piece of a chain not yet thinking writes `<think>\\n`; the first
    content piece after reasoning in this reply writes `</think>`. Content with no
    reasoning before it in the reply is appended as it is: the server may simply have
    no reasoning parser, and then its content is the raw text.
    """

    def __init__(self, thinking: bool) -> None:
        self.thinking = thinking
        self.reasoned = False

    def reasoning(self, piece: str) -> str:
        if not piece:
            return ""
        opening = "" if self.thinking else OPENING
        self.thinking = self.reasoned = True
        return opening + piece

    def content(self, piece: str) -> str:
        if not piece:
            return ""
        if self.thinking and self.reasoned:
            self.thinking = False
            return THINK_CLOSE + piece
        return piece


def join_reply(thinking: bool, reasoning: str, content: str) -> str:
    """A whole reply as raw chain text (the same rule as streaming with ChainJoiner).

    >>> join_reply(False, "hm, search", "")
    '<think>\\nhm, search'
    >>> join_reply(True, "found it\\n", "\\n\\nAnswer: 4")
    'found it\\n</think>\\n\\nAnswer: 4'
    """
    joiner = ChainJoiner(thinking)
    return joiner.reasoning(reasoning) + joiner.content(content)


# ---- continuing a chain ------------------------------------------------------------------


def split_chain(text: str) -> tuple[str, str]:
    """(thinking, answer) of raw chain text that opens with `<think>`; else ("", text).

    >>> split_chain("<think>\\nhm</think>\\n\\nok")
    ('hm', '\\n\\nok')
    >>> split_chain("<think>\\nstill thinking")
    ('still thinking', '')
    """
    stripped = text.lstrip()
    if not stripped.startswith(THINK_OPEN):
        return "", text
    body = stripped[len(THINK_OPEN) :].removeprefix("\n")
    thinking, closed, answer = body.partition(THINK_CLOSE)
    return (thinking, answer) if closed else (body, "")


def continue_request(
    messages: Sequence[dict[str, Any]], chain: str, how: Continuation, kind: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(messages, extra top-level fields) asking a chat server to continue `chain`."""
    wire = list(messages)
    if not chain or how == "raw":
        return wire, {}
    if how == "prefix":
        thinking, answer = split_chain(chain)
        last: dict[str, Any] = {"role": "assistant", "content": answer, "prefix": True}
        if thinking:
            last["reasoning_content"] = thinking
        return [*wire, last], {}
    if how == "continue_final" and kind == "sglang":
        # SGLang renders the generation prompt (R1 and QwQ templates open <think> there)
        # and appends the message as it is: a second opening would be a second <think>.
        tail = chain.removeprefix(OPENING)
        return [*wire, {"role": "assistant", "content": tail}], {"continue_final_message": True}
    wire.append({"role": "assistant", "content": chain})
    if how == "continue_final":
        return wire, {"continue_final_message": True, "add_generation_prompt": False}
    return wire, {}


def prefix_url(base_url: str) -> str:
    """DeepSeek serves prefix completion under /beta: swap a trailing /v1 for it.

    >>> prefix_url("https://api.deepseek.com/v1"), prefix_url("https://api.deepseek.com")
    ('https://api.deepseek.com/beta', 'https://api.deepseek.com/beta')
    """
    base = base_url.rstrip("/")
    if base.endswith("/beta"):
        return base
    return base.removesuffix("/v1") + "/beta"


@dataclass(frozen=True)
class ChatPlan:
    """One chat request that continues a chain: where, what, and in which state.

    `thinking`: whether the chain is inside its think block, so that the reply's
    reasoning continues it rather than opening a new one.
    """

    url: str
    messages: list[dict[str, Any]]
    fields: dict[str, Any]
    how: Continuation | None
    thinking: bool


def chat_plan(
    base_url: str,
    kind: str,
    how: Continuation,
    messages: Sequence[dict[str, Any]],
    chain: str,
) -> ChatPlan:
    """The chat request for `messages` plus the raw `chain` so far, continued by `how`."""
    wire, fields = continue_request(messages, chain, how, kind)
    base = prefix_url(base_url) if chain and how == "prefix" else base_url.rstrip("/")
    return ChatPlan(
        url=base + "/chat/completions",
        messages=wire,
        fields=fields,
        how=how if chain else None,
        thinking=thinking_open(chain),
    )


def rejects_continuation(status: int, message: str) -> bool:
    """A 400 saying the server will not continue a final assistant message.

    llama.cpp: "Assistant response prefill is incompatible with enable_thinking";
    vLLM: the continue_final_message / add_generation_prompt pair; DeepSeek: prefix.
    """
    words = ("prefill", "prefix", "continue_final_message", "final assistant message")
    return status == 400 and any(w in message.lower() for w in words)
