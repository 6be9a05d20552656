"""OpenAI's Responses API (`POST /v1/responses`) as a tools-mode wire, as pure functions.

Why a second wire: OpenAI's reasoning models (o-series, GPT-5) keep their reasoning
between tool calls only here. With `store: false` and
`include: ["reasoning.encrypted_content"]` each `reasoning` output item carries that
reasoning encrypted; sending a turn's output items back unchanged and in order (each
reasoning item before the `function_call` items that followed it) lets the model go on
from it instead of starting over. OpenAI refuses a `function_call` sent back without
its reasoning item ("Item 'fc_...' of type 'function_call' was provided without its
required 'reasoning' item"), so a turn's items are kept whole in the message's echo
under `ECHO` and go back as they came.

Confirmed with the search tool (OpenAI's docs and cookbook "reasoning items", the
openai-python SDK's generated types, OpenAI community threads):
- request: `input` items: {"role", "content"} messages, `function_call` items
  (`call_id`, `name`, `arguments`), `function_call_output` items (`call_id`, `output`);
  flat function tools {"type": "function", "name", "description", "parameters",
  "strict"} (omitting `strict` makes the Responses API normalise the schema to strict
  mode, so `strict: false` keeps chat completions' behaviour); `tool_choice`,
  `max_output_tokens` (reasoning tokens included), `store`, `include`,
  `reasoning.summary` ("auto", "concise", "detailed"), `temperature`, `top_p`, `stream`.
- reply: `output` items `reasoning` (`summary[]` of `summary_text` parts,
  `encrypted_content`), `function_call` (`call_id`, `name`, `arguments` as JSON text),
  `message` (`content[]` parts, the answer in `output_text` ones); `status`
  "completed" / "incomplete" with `incomplete_details.reason` "max_output_tokens";
  `usage.input_tokens` / `output_tokens`.
- stream: SSE `event:` + `data:` pairs whose JSON repeats the name in `type`; no
  `[DONE]`: it ends with `response.completed`, `response.incomplete` (both carrying the
  whole `response`) or `response.failed` (its `response.error` has `code`, `message`);
  an `error` event has `code`, `message`, `param`. Deltas: `response.output_text.delta`,
  `response.reasoning_summary_text.delta` (with `item_id`, `summary_index`),
  `response.function_call_arguments.delta`; `response.output_item.done` carries the
  finished `item`, a reasoning one with its `encrypted_content`.
- reasoning summaries need a verified organisation; otherwise a 400 "Your organization
  must be verified to generate reasoning summaries" (learned in fields.py).
Unconfirmed: that every server taking this wire (proxies, other vendors) accepts the
output items back with all their fields (`id`, `status`); the exact wording of a
reasoning model's refusal of `temperature`/`top_p` here (learned like chat's when it
reads "Unsupported parameter: 'temperature'").
"""

from __future__ import annotations

import json
from typing import Any, Literal

from search_o1.llm.openai import wire
from search_o1.llm.openai.tools import TurnWire
from search_o1.llm.tools import ToolRequest
from search_o1.tool_chat import ChatMessage, FunctionTool, ToolCall, ToolReply
from search_o1.types import TextSink

ECHO = "output"  # the key of ChatMessage.echo / ToolReply.echo holding a turn's items
INCLUDE = "reasoning.encrypted_content"
_SUMMARY_JOIN = "\n\n"  # between summary parts, live and in the trace alike

# ---- requests ----------------------------------------------------------------------------


def wire_tool(tool: FunctionTool) -> dict[str, Any]:
    """A function tool in the Responses shape: flat, not nested under "function"."""
    spec = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return {"type": "function"} | spec | {"strict": False}


def input_items(message: ChatMessage) -> list[dict[str, Any]]:
    """One message as Responses input items; a turn from this API goes back as it came."""
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        return [{"type": "function_call_output", "call_id": call_id, "output": message.content}]
    if message.role != "assistant":
        return [{"role": message.role, "content": message.content or ""}]
    kept = message.echo.get(ECHO)
    if isinstance(kept, list):
        return list(kept)  # reasoning (encrypted), calls and text, unchanged and in order
    # A turn from elsewhere (chat completions, a test): its text, then its calls.
    out: list[dict[str, Any]] = []
    if message.content:
        out.append({"role": "assistant", "content": message.content})
    for call in message.tool_calls:
        out.append(
            {"type": "function_call", "call_id": call.id, "name": call.name}
            | {"arguments": call.arguments}
        )
    return out


def request_body(request: ToolRequest, *, model: str | None, stream: bool) -> dict[str, Any]:
    """The JSON body for POST /v1/responses: stateless, encrypted reasoning asked back."""
    body: dict[str, Any] = {"input": [i for m in request.messages for i in input_items(m)]}
    if model:
        body["model"] = model
    body["max_output_tokens"] = request.max_tokens
    body["temperature"] = request.sampling.temperature
    body["top_p"] = request.sampling.top_p
    body |= {"store": False, "include": [INCLUDE], "reasoning": {"summary": "auto"}}
    if request.tools:
        body["tools"] = [wire_tool(t) for t in request.tools]
        body["tool_choice"] = request.tool_choice
    if stream:
        body["stream"] = True
    return body


# ---- whole responses ---------------------------------------------------------------------


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _summary(item: dict[str, Any]) -> list[str]:
    parts = _dicts(item.get("summary"))
    return [p["text"] for p in parts if isinstance(p.get("text"), str) and p["text"]]


def _text(item: dict[str, Any]) -> str:
    parts = _dicts(item.get("content"))
    return "".join(str(p.get("text") or "") for p in parts if p.get("type") == "output_text")


def _call(item: dict[str, Any], position: int) -> ToolCall:
    call_id = item.get("call_id")
    arguments = item.get("arguments")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else f"call_{position}",
        str(item.get("name") or ""),
        arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
    )


Finish = Literal["stop", "length", "tool_calls"]


def _finish(payload: dict[str, Any], calls: tuple[ToolCall, ...]) -> Finish:
    details = payload.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if payload.get("status") == "incomplete" and reason == "max_output_tokens":
        return "length"  # a call cut short has broken arguments: not a call
    return "tool_calls" if calls else "stop"


def _tokens(payload: dict[str, Any], key: str) -> int:
    usage = payload.get("usage")
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and value >= 0 else 0


def parse_response(payload: Any) -> ToolReply:
    """A whole Responses API response. Raises ValueError when it is not one, or failed."""
    if not isinstance(payload, dict) or not isinstance(payload.get("output"), list):
        raise ValueError("not a Responses API response (no output list)")
    if payload.get("status") == "failed":
        raise ValueError(f"the response failed: {failure_text(payload)}")
    items = _dicts(payload["output"])
    calls = tuple(
        _call(item, n)
        for n, item in enumerate(i for i in items if i.get("type") == "function_call")
    )
    summary = [s for i in items if i.get("type") == "reasoning" for s in _summary(i)]
    return ToolReply(
        content="".join(_text(i) for i in items if i.get("type") == "message"),
        finish=_finish(payload, calls),
        tool_calls=calls,
        reasoning=_SUMMARY_JOIN.join(summary),
        echo={ECHO: items},
        prompt_tokens=_tokens(payload, "input_tokens"),
        completion_tokens=_tokens(payload, "output_tokens"),
    )


def failure_text(payload: Any) -> str:
    """What a failed response or an `error` event says: `code: message`."""
    holder: dict[str, Any] = payload if isinstance(payload, dict) else {}
    nested = holder.get("error")
    error = nested if isinstance(nested, dict) else holder
    message = str(error.get("message") or "no message given")[:500]
    code = error.get("code")
    return f"{code}: {message}" if code else message


# ---- streamed responses ------------------------------------------------------------------


class ResponsesStreamState(wire.StreamState):
    """Reads the semantic events of a streamed response; `tool_reply()` is the result.

    A `StreamState` so that the client's SSE reader (stall clock, cut-off streams) reads
    it as it reads chat completions: `feed` returns new answer text, new summary text
    goes to `on_reasoning`, and a final `response.completed`/`response.incomplete` sets
    the finish reason. A `response.failed` or `error` event raises `wire.StreamError`.
    """

    def __init__(self, on_reasoning: TextSink | None = None) -> None:
        super().__init__()
        self.on_reasoning = on_reasoning
        self.items: dict[int, dict[str, Any]] = {}  # finished output items by index
        self.final: dict[str, Any] | None = None
        self._part: tuple[Any, Any] | None = None  # the summary part being streamed

    def feed(self, payload: Any) -> str:
        if not isinstance(payload, dict):
            raise ValueError("stream event is not a JSON object")
        kind = payload.get("type")
        if kind == "error":
            raise wire.StreamError(failure_text(payload))
        if kind == "response.failed":
            raise wire.StreamError(failure_text(payload.get("response")))
        if kind == "response.output_text.delta":
            self.parts.append(str(payload.get("delta") or ""))
            return self.parts[-1]
        if kind == "response.reasoning_summary_text.delta":
            self._summary(payload)
        elif kind == "response.output_item.done" and isinstance(payload.get("item"), dict):
            index = payload.get("output_index")
            self.items[index if isinstance(index, int) else len(self.items)] = payload["item"]
        elif kind in ("response.completed", "response.incomplete"):
            final = payload.get("response")
            final = final if isinstance(final, dict) else {}
            self.final, self.finish_reason = final, str(final.get("status") or kind)
        return ""

    def _summary(self, payload: dict[str, Any]) -> None:
        piece = str(payload.get("delta") or "")
        part = (payload.get("item_id"), payload.get("summary_index"))
        if self.reasoning and part != self._part:
            piece = _SUMMARY_JOIN + piece  # a new part, as parse_response joins them
        self._part = part
        self.reasoning.append(piece)
        if piece and self.on_reasoning is not None:
            self.on_reasoning(piece)

    def tool_reply(self) -> ToolReply:
        """The turn; the final response's items, or the finished ones where it has none.
        Raises ValueError when the stream held no final response."""
        if self.final is None:
            raise ValueError("the stream ended without its final response")
        final = dict(self.final)
        if not _dicts(final.get("output")):
            final["output"] = [self.items[i] for i in sorted(self.items)]
        return parse_response(final)


# ---- the wire of a tools turn ------------------------------------------------------------
# Which wire a tools turn takes is `chosen`: the Responses API when asked for, or under
# `auto` when the server is api.openai.com (the one place where it keeps a reasoning
# model's thinking between calls); chat completions otherwise. Only tools-mode turns go
# here: Reason-in-Documents and the marker modes stay on their endpoints. Everything but
# path, body and reply reading is the chat tools turn's (tools.converse).


def _body(
    request: ToolRequest, model: str | None, stream: bool, kind: wire.ServerKind, extras: bool
) -> dict[str, Any]:
    # The Responses API has no room for our extensions, and no field depends on the kind.
    return request_body(request, model=model, stream=stream)


RESPONSES = TurnWire("/responses", _body, ResponsesStreamState, parse_response, "input")


def chosen(tools_api: str, kind: str) -> bool:
    """Whether a tools turn goes to the Responses API (`kind`: what discovery found).

    >>> chosen("auto", "openai"), chosen("auto", "vllm"), chosen("responses", "vllm")
    (True, False, True)
    """
    return tools_api == "responses" or (tools_api == "auto" and kind == "openai")
