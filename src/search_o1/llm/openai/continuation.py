"""How a chat server continues a chain after a search, per server kind, as pure functions.

Continuing the chain depends on the server (`Continuation`):
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

from search_o1.llm.reasoning import OPENING, split_chain, thinking_open
from search_o1.markers import THINK_OPEN

Continuation = Literal["raw", "continue_final", "prefix", "prefill"]
# Which continuation each server kind supports over chat; None: it cannot continue.
CHAT_CONTINUATION: Mapping[str, Continuation | None] = {
    "vllm": "continue_final",
    "sglang": "continue_final",
    "unknown": "continue_final",  # vLLM-compatible fields; ignored by servers without them
    # llama.cpp refuses an assistant prefill while thinking is on; with a template it
    # does not take for a thinking one (QwQ's: the thinking then comes as content, with
    # no <think>, the prompt opened it) a prefill re-renders the turn without the
    # prompt's <think>. Raw completions, which every llama.cpp server has, keep the
    # chain as it is in both cases.
    "llamacpp": "raw",
    "openrouter": "prefill",
    "deepseek": "prefix",
    # Ollama continues a chain by its native raw generate, which every server has.
    "ollama": "raw",
    "openai": None,
    "anthropic": None,
    "gemini": None,
}


def chat_continuation(kind: str, chain: str) -> Continuation | None:
    """How a chat-mode client continues `chain` on a server of `kind` (None: it cannot).

    >>> chat_continuation("llamacpp", "hm"), chat_continuation("vllm", "hm")
    ('raw', 'continue_final')
    """
    return CHAT_CONTINUATION.get(kind, "continue_final")


def continue_request(
    messages: Sequence[dict[str, Any]],
    chain: str,
    how: Continuation,
    kind: str,
    opens_think: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(messages, extra top-level fields) asking a chat server to continue `chain`.

    `opens_think`: whether the model's generation prompt opens `<think>` itself (QwQ,
    R1; not Qwen3, whose model writes it)."""
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
        # SGLang renders the generation prompt and appends the message as it is. R1 and
        # QwQ templates open <think> there, and a second opening would be a second
        # <think>; Qwen3's does not, and without the opening the chain would sit
        # outside any think block.
        tail = chain.removeprefix(OPENING) if opens_think else chain
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
    opens_think: bool = True,
) -> ChatPlan:
    """The chat request for `messages` plus the raw `chain` so far, continued by `how`."""
    wire, fields = continue_request(messages, chain, how, kind, opens_think)
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


def closes_thinking(rendered: str, question: str, chain: str) -> bool:
    """Whether a server's rendering of a continued chain (a user `question`, then the
    assistant `chain`, cut at its end) puts the chain outside one open think block.

    Qwen3's template writes `<think>\\n\\n</think>\\n\\n` before the last assistant turn's
    content, so a continued chain sits after a closed think block (vLLM renders
    `continue_final_message` through the template).

    >>> q, c = "Q?", "<think>\\nhm"
    >>> closes_thinking("<|im_start|>user\\nQ?<|im_end|>\\n<|im_start|>assistant\\n" + c, q, c)
    False
    >>> closes_thinking("user Q? assistant <think>\\n\\n</think>\\n\\n" + c, q, c)
    True
    """
    start = rendered.find(question)
    end = rendered.rfind(chain)
    if start < 0 or end < 0:
        return True  # the chain did not come back as sent: not a continuation
    between = rendered[start + len(question) : end] + chain
    return between.count(THINK_OPEN) != 1 or not thinking_open(between)
