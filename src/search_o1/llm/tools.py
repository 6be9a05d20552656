"""Function tools as a model capability: one chat turn that may call tools (`--api-mode tools`).

The request and the protocol only; how a turn travels is each backend's (the OpenAI
client's chat and Responses wires, the embedded model's llama.cpp).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from search_o1.tool_chat import ChatMessage, FunctionTool, ToolChoice, ToolReply
from search_o1.types import Sampling, TextSink


@dataclass(frozen=True)
class ToolRequest:
    """One chat request with tools: the conversation so far and what may be called."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[FunctionTool, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_tokens: int = 1024
    sampling: Sampling = field(default_factory=Sampling)


@runtime_checkable
class ToolLLM(Protocol):
    """A model that can take one chat turn with function tools (`--api-mode tools`).

    `on_text` receives answer text and `on_reasoning` thinking, as they arrive.
    """

    async def converse(
        self,
        request: ToolRequest,
        *,
        on_text: TextSink | None = None,
        on_reasoning: TextSink | None = None,
    ) -> ToolReply: ...
