"""The OpenAI tool-call wire format, as pure functions: bodies, replies, streamed deltas.

What servers send (and what must go back) differs in small ways, each handled here:
- tool calls arrive whole in `message.tool_calls`, or streamed as deltas keyed by
  `index` whose first piece carries `id` and `function.name` and whose later pieces
  carry fragments of `function.arguments` (JSON text split anywhere); parallel calls
  may interleave. A server that leaves out `index` sends one call at a time.
- thinking between calls comes as `reasoning_content` (DeepSeek, SGLang, llama.cpp,
  vLLM up to 0.10), `reasoning` (vLLM from 0.11, Ollama, OpenRouter) or OpenRouter's
  structured `reasoning_details`, in messages and deltas alike.
- what the server sent of these fields goes back on the assistant message unchanged
  (`ChatMessage.echo`), an empty one included: DeepSeek answers a tool-call turn
  without `reasoning_content` with a 400 even when the thinking was empty (users quote
  that 400 for exactly that case), so to DeepSeek every assistant tool-call message
  carries it, "" when nothing came; OpenRouter asks for `reasoning_details` as sent,
  vLLM reads `reasoning` (and drops an incoming `reasoning_content`, issue #38488).
- Gemini puts a thought signature in `extra_content` on each tool call, required back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import wire
from search_o1.llm.openai.wire import reasoning_text
from search_o1.llm.tools import ToolRequest
from search_o1.tool_chat import ChatMessage, FunctionTool, ToolCall, ToolReply
from search_o1.types import Prompt, TextSink

# Reasoning fields kept from a reply and sent back with it, in the server's own names.
REASONING_FIELDS = ("reasoning_content", "reasoning")
DETAILS = "reasoning_details"
_CALL_ECHO = ("extra_content",)  # Gemini's thought signature lives here


# ---- requests ----------------------------------------------------------------------------


def wire_tool(tool: FunctionTool) -> dict[str, Any]:
    spec = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return {"type": "function", "function": spec}


def wire_call(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "type": "function"}
    out["function"] = {"name": call.name, "arguments": call.arguments}
    return out | dict(call.echo)


def wire_message(message: ChatMessage) -> dict[str, Any]:
    """One message as sent: tool calls with their ids, echoed fields as they came."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [wire_call(c) for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out | dict(message.echo)


def tool_body(
    request: ToolRequest,
    *,
    model: str | None,
    stream: bool,
    kind: wire.ServerKind,
    extras: bool = True,
) -> dict[str, Any]:
    """The JSON body for /v1/chat/completions with tools (sampling fields as in chat mode)."""
    plain = CompletionRequest(Prompt(()), max_tokens=request.max_tokens, sampling=request.sampling)
    messages = [wire_message(m) for m in request.messages]
    if kind == "deepseek":
        messages = [_with_reasoning_content(m) for m in messages]
    body = wire.build_body(plain, model=model, prompt=[], stream=stream, kind=kind, extras=extras)
    body["messages"] = messages
    if request.tools:
        body["tools"] = [wire_tool(t) for t in request.tools]
        body["tool_choice"] = request.tool_choice
    return body


# ---- whole replies -----------------------------------------------------------------------


def _with_reasoning_content(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant tool-call message as DeepSeek requires it: with `reasoning_content`,
    "" when the turn's thinking was empty or came under no field."""
    if message["role"] != "assistant" or not message.get("tool_calls"):
        return message
    if isinstance(message.get("reasoning_content"), str):
        return message
    return message | {"reasoning_content": ""}


def _echo(holder: dict[str, Any]) -> dict[str, Any]:
    """The reasoning fields a message carried, to send back as they came (an empty
    string too: DeepSeek wants it back; null and empty lists carry nothing)."""
    out = {k: holder[k] for k in REASONING_FIELDS if isinstance(holder.get(k), str)}
    if holder.get(DETAILS) not in (None, []):
        out[DETAILS] = holder[DETAILS]
    return out


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _arguments(value: Any) -> str:
    # Some servers send the arguments as a JSON object instead of JSON text.
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)


def _call(raw: Any, position: int) -> ToolCall:
    raw = _dict(raw)
    function = _dict(raw.get("function"))
    call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
    return ToolCall(
        call_id or f"call_{position}",  # the id must be echoed; some servers leave it out
        str(function.get("name") or ""),
        _arguments(function.get("arguments")),
        echo={k: raw[k] for k in _CALL_ECHO if k in raw},
    )


def _finish(reason: Any, calls: Sequence[ToolCall]) -> Literal["stop", "length", "tool_calls"]:
    if reason in wire.CUT_BY_SERVER:
        raise wire.CutByServer(f"the server ended the turn early (finish_reason {reason!r})")
    if reason == wire.FILTERED:
        raise wire.Filtered
    if reason == "length":
        return "length"  # a call cut by max_tokens has broken arguments: not a call
    return "tool_calls" if calls else "stop"


def parse_tool_reply(payload: Any) -> ToolReply:
    """A non-streamed chat completion with tools. Raises ValueError when malformed."""
    reply = wire.parse_reply(payload)
    message = payload["choices"][0].get("message")
    message = message if isinstance(message, dict) else {}
    raw_calls = message.get("tool_calls")
    calls = tuple(_call(c, i) for i, c in enumerate(raw_calls or []))
    return ToolReply(
        content=reply.text,
        finish=_finish(reply.finish_reason, calls),
        tool_calls=calls,
        reasoning=reasoning_text(message),
        echo=_echo(message),
        prompt_tokens=reply.prompt_tokens or 0,
        completion_tokens=reply.completion_tokens or 0,
    )


# ---- streamed replies --------------------------------------------------------------------


@dataclass
class _Slot:
    """One tool call being assembled from deltas."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    echo: dict[str, Any] = field(default_factory=dict)

    def add(self, delta: dict[str, Any]) -> None:
        function = _dict(delta.get("function"))
        if isinstance(delta.get("id"), str) and delta["id"] and not self.id:
            self.id = delta["id"]
        name = function.get("name")
        # The name comes whole in the first piece; some servers repeat it later.
        if isinstance(name, str) and name and not self.name:
            self.name = name
        piece = _arguments(function.get("arguments"))
        if piece:
            self.arguments.append(piece)
        self.echo.update({k: delta[k] for k in _CALL_ECHO if k in delta})

    def call(self, position: int) -> ToolCall:
        raw = {"id": self.id, "function": {"name": self.name}}
        base = _call(raw, position)
        return ToolCall(base.id, base.name, "".join(self.arguments), echo=dict(self.echo))


class ToolStreamState(wire.StreamState):
    """Accumulates SSE chunks of a tools request; `tool_reply()` is the result.

    A `StreamState` (finish reason, usage, errors and stream faults are read the same
    way) whose `feed` returns only the new answer text of a chunk; new thinking goes to
    `on_reasoning` as it arrives, and tool-call pieces are assembled by index.
    """

    def __init__(self, on_reasoning: TextSink | None = None) -> None:
        super().__init__()
        self.on_reasoning = on_reasoning
        self.fields: dict[str, list[str]] = {k: [] for k in REASONING_FIELDS}
        self.details: list[dict[str, Any]] = []
        self.slots: dict[int, _Slot] = {}
        self._last = -1  # the slot a delta without `index` continues

    def feed(self, payload: Any) -> str:
        super().feed(payload)  # its joined chain text is not what this mode shows
        choices = payload.get("choices") if isinstance(payload, dict) else None
        delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
        if not isinstance(delta, dict):
            return ""
        self._reasoning(delta)
        for raw in delta.get("tool_calls") or []:
            if isinstance(raw, dict):
                self._slot(raw).add(raw)
        content = delta.get("content")
        return content if isinstance(content, str) else ""

    def _reasoning(self, delta: dict[str, Any]) -> None:
        shown = reasoning_text(delta)
        for key in REASONING_FIELDS:
            if isinstance(delta.get(key), str):
                self.fields[key].append(delta[key])
        if isinstance(delta.get(DETAILS), list):
            _merge_details(self.details, delta[DETAILS])
        if shown and self.on_reasoning is not None:
            self.on_reasoning(shown)

    def _slot(self, raw: dict[str, Any]) -> _Slot:
        index = raw.get("index")
        if not isinstance(index, int):
            # Without an index, a new id starts a new call; anything else continues one.
            last = self.slots.get(self._last)
            fresh = bool(raw.get("id")) and last is not None and last.id not in ("", raw["id"])
            index = self._last + 1 if last is None or fresh else self._last
        self._last = index
        return self.slots.setdefault(index, _Slot())

    def tool_reply(self) -> ToolReply:
        text = self.reply()
        calls = tuple(self.slots[i].call(n) for n, i in enumerate(sorted(self.slots)))
        # A field that came in any delta goes back, even when all its pieces were "".
        echo: dict[str, Any] = {k: "".join(v) for k, v in self.fields.items() if v}
        if self.details:
            echo[DETAILS] = self.details
        return ToolReply(
            content=text.text,
            finish=_finish(text.finish_reason, calls),
            tool_calls=calls,
            reasoning=reasoning_text(echo),
            echo=echo,
            prompt_tokens=text.prompt_tokens or 0,
            completion_tokens=text.completion_tokens or 0,
        )


def _merge_details(into: list[dict[str, Any]], pieces: list[Any]) -> None:
    """OpenRouter streams `reasoning_details` entries in pieces: a piece with the same
    `index` and `type` as the last entry extends its text; anything else is a new entry."""
    for piece in pieces:
        if not isinstance(piece, dict):
            continue
        last = into[-1] if into else None
        same = (
            last is not None
            and "index" in piece
            and ((last.get("index"), last.get("type")) == (piece.get("index"), piece.get("type")))
        )
        if last is None or not same:
            into.append(dict(piece))
            continue
        for key, value in piece.items():
            if key in ("text", "summary") and isinstance(value, str):
                last[key] = str(last.get(key) or "") + value
            elif last.get(key) in (None, ""):
                last[key] = value
