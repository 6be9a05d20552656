"""Plain data of a chat with function tools (`--api-mode tools`).

In tools mode the model does not write query markers: it calls a function tool
(`search`, one string argument) offered with each chat request, and the system answers
each call with a `tool` message. These frozen values are what crosses between the engine
and the backends, and what the trace keeps; they sit below both (no imports upward).

`echo` holds fields of an assistant message that the server sent and that must go back
to it unchanged on the next request: DeepSeek's thinking mode refuses a tool-call turn
without its `reasoning_content`; OpenRouter wants `reasoning_details` back as sent; vLLM
feeds an assistant's `reasoning` to the chat template. A tool call's `echo` carries, for
example, Gemini's `extra_content` (the thought signature it requires back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ToolChoice = Literal["auto", "required", "none"]
SEARCH_TOOL = "search"


@dataclass(frozen=True)
class FunctionTool:
    """One function offered to the model: name, description and a JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: `arguments` is the JSON text exactly as it came."""

    id: str
    name: str
    arguments: str
    echo: Mapping[str, Any] = field(default_factory=dict)

    def argument(self, key: str) -> str | None:
        """A string argument, or None when the arguments are not JSON or lack it.

        >>> ToolCall("1", "search", '{"query": "Tosca composer"}').argument("query")
        'Tosca composer'
        >>> ToolCall("1", "search", '{"query": ').argument("query") is None
        True
        """
        try:
            parsed = json.loads(self.arguments or "{}")
        except ValueError:
            return None
        value = parsed.get(key) if isinstance(parsed, dict) else None
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ChatMessage:
    """One message of a tools-mode conversation, in the order the server saw it."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    reasoning: str = ""  # the thinking the server returned (kept for the trace)
    echo: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolReply:
    """One assistant turn: its thinking, its text, and the tools it called."""

    content: str
    finish: Literal["stop", "length", "tool_calls"]
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    echo: Mapping[str, Any] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def message(self) -> ChatMessage:
        """This turn as the assistant message that goes back in the next request."""
        return ChatMessage(
            "assistant",
            self.content or None,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
            echo=self.echo,
        )


def search_tool() -> FunctionTool:
    """The one tool of tools mode: a search with one string argument, the query."""
    return FunctionTool(
        SEARCH_TOOL,
        "Search for a fact you are missing. The results are read for you and the facts "
        "that matter for your reasoning come back. One fact per query.",
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "A short, specific query, as typed into a search box.",
                }
            },
            "required": ["query"],
        },
    )
