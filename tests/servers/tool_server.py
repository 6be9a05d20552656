"""A loopback chat server that speaks the OpenAI tool-call wire format, for tests.

    with tool_server(DEEPSEEK, two_hop_tools) as srv:
        llm = OpenAILLM(srv.url)

The "model" is a function of the request body returning a `Turn` (thinking, answer text,
calls). The server then answers as the named server does (`Flavour`, from the facts file
on reasoning servers):

- PLAIN (OpenAI style): `content` null on a tool-call turn, ids `call_…`, no thinking.
- VLLM (`--reasoning-parser` + tool parser, v0.11 on): thinking in `reasoning`.
- DEEPSEEK (thinking mode, V3.2 on): thinking in `reasoning_content`; a request whose
  assistant tool-call message lacks the `reasoning_content` that came with it is a 400,
  and so is one without the field at all, even when the thinking was empty (users quote
  that 400 for exactly that case). Worst case for a turn with no thinking: the field is
  "" in a whole reply and in no delta of a stream. /v1/models says `owned_by` "deepseek".
- VLLM tools: an incoming `reasoning_content` on an assistant message is dropped
  silently (issue #38488); only `reasoning` reaches the template (`reasoning_seen`).
- OPENROUTER: `reasoning` plus `reasoning_details`; checked to come back unchanged.
- GEMINI: a thought signature in each call's `extra_content`; a call echoed without it is
  a 400, as Gemini 3 answers.
- OPENAI_REASONING (o-series, GPT-5): thinking hidden (only counted in usage); a body
  with a field it does not know (`top_k`), `max_tokens`, or a `temperature` or `top_p`
  other than 1 is a 400 in OpenAI's words, `param` and `code` (as quoted in public bug
  reports, e.g. openai/openai-python#2046 and cline/cline#341); `refused` keeps them.

Streams (unless `whole`) put the first piece of each call (index, id, name) before fragments of its
arguments, 7 characters at a time; `interleave` alternates parallel calls' fragments.
Requests without tools (Reason-in-Documents) get a plain chat answer. Only stdlib.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.servers._base import JSONHandler, serving


@dataclass(frozen=True)
class Turn:
    reasoning: str = ""
    content: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()  # (name, arguments)


@dataclass(frozen=True)
class Flavour:
    name: str
    reasoning_fields: tuple[str, ...] = ()
    details: bool = False  # OpenRouter's reasoning_details
    signature: bool = False  # Gemini's extra_content thought signature
    strict: bool = False  # refuses fields as OpenAI does for its reasoning models
    owned_by: str | None = None  # in GET /v1/models
    requires_reasoning: bool = False  # DeepSeek: reasoning_content on every tool-call turn


PLAIN = Flavour("plain")
VLLM = Flavour("vllm", ("reasoning",))
DEEPSEEK = Flavour("deepseek", ("reasoning_content",), owned_by="deepseek", requires_reasoning=True)
OPENROUTER = Flavour("openrouter", ("reasoning",), details=True)
GEMINI = Flavour("gemini", signature=True)
OPENAI_REASONING = Flavour("openai-reasoning", strict=True)
Model = Callable[[dict[str, Any]], Turn]
CHUNK = 7


class BadRequest(Exception):
    pass


@dataclass
class ToolServer:
    url: str = ""
    flavour: Flavour = PLAIN
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # the field each 400 named
    # what this server sent with each call id, which must come back unchanged
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)
    # vLLM: the reasoning its template saw on each assistant message sent back
    reasoning_seen: list[str | None] = field(default_factory=list)
    # tools turns still to be cut short with finish_reason `cut_reason`: "abort" (vLLM's
    # and SGLang's word for a generation their engine aborted) or "content_filter" (a
    # filter ended it): half the thinking, no call yet
    aborts: int = 0
    cut_reason: str = "abort"
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def tool_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.requests if b.get("tools")]

    @property
    def reader_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.requests if not b.get("tools")]


def _message(flavour: Flavour, turn: Turn, ids: list[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.content or None}
    if flavour.requires_reasoning and turn.calls and not turn.reasoning:
        message["reasoning_content"] = ""
    if turn.reasoning:
        message |= {f: turn.reasoning for f in flavour.reasoning_fields}
        if flavour.details:
            message["reasoning_details"] = [
                {"type": "reasoning.text", "text": turn.reasoning, "format": "unknown", "index": 0}
            ]
    if turn.calls:
        message["tool_calls"] = [
            _wire_call(flavour, i, call_id, name, args)
            for i, (call_id, (name, args)) in enumerate(zip(ids, turn.calls, strict=True))
        ]
    return message


def _wire_call(flavour: Flavour, i: int, call_id: str, name: str, args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"id": call_id, "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(args)}
    if flavour.signature:
        call["extra_content"] = {"google": {"thought_signature": f"sig-{call_id}"}}
    return call


def _refusal(body: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """(field, message, code) of OpenAI's 400 for a reasoning model, or None if it is fine."""
    unknown = sorted(set(body) - _STANDARD)
    if unknown:
        return unknown[0], f"Unrecognized request argument supplied: {unknown[0]}", None
    if "max_tokens" in body:
        message = (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead."
        )
        return "max_tokens", message, "unsupported_parameter"
    for name in ("temperature", "top_p"):
        if body.get(name, 1) != 1:
            value = body[name]
            message = (
                f"Unsupported value: '{name}' does not support {value} with this model. "
                "Only the default (1) value is supported."
            )
            return name, message, "unsupported_value"
    return None


_STANDARD = {
    "model",
    "messages",
    "tools",
    "tool_choice",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "seed",
    "stop",
}


def _check_echo(served: ToolServer, body: dict[str, Any]) -> None:
    """Refuse a request whose assistant messages lost what this server requires back."""
    for m in body.get("messages") or []:
        if m.get("role") == "assistant" and served.flavour.name == "vllm":
            # vLLM hands the template `reasoning`; `reasoning_content` is dropped.
            served.reasoning_seen.append(m.get("reasoning"))
        needs = served.flavour.requires_reasoning and m.get("tool_calls")
        if needs and not isinstance(m.get("reasoning_content"), str):
            raise BadRequest(
                "The reasoning_content of an assistant message with tool calls must be "
                "passed back to the API in thinking mode"
            )
        for call in m.get("tool_calls") or []:
            want = served.sent.get(call.get("id"), {})
            for key in ("reasoning_content", "reasoning_details"):
                if key in want and m.get(key) != want[key]:
                    raise BadRequest(f"assistant tool-call message must carry its {key}")
            if "extra_content" in want and call.get("extra_content") != want["extra_content"]:
                raise BadRequest("Function call is missing a thought_signature")


class _Handler(JSONHandler):
    served: ToolServer
    model: Model
    interleave: bool = False
    whole: bool = False

    def do_GET(self) -> None:
        owner = self.served.flavour.owned_by
        if owner is None or self.path.rstrip("/") != "/v1/models":
            return self._models("tool-model")
        entry = {"id": "tool-model", "object": "model", "owned_by": owner}
        self._json(200, {"object": "list", "data": [entry]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        served = self.served
        refusal = _refusal(body) if served.flavour.strict else None
        if refusal is not None:
            name, message, code = refusal
            served.refused.append(name)
            error = {"message": message, "type": "invalid_request_error", "param": name}
            return self._json(400, {"error": error | {"code": code}})
        with served.lock:
            served.requests.append(body)
            n = len(served.requests)
        if self.path != "/v1/chat/completions":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        try:
            _check_echo(served, body)
        except BadRequest as e:
            return self._json(400, {"error": {"message": str(e), "type": "invalid_request"}})
        turn = self.model(body)
        if not body.get("tools") or body.get("tool_choice") == "none":
            turn = Turn(turn.reasoning, turn.content)
        with served.lock:
            aborted = bool(body.get("tools")) and served.aborts > 0
            served.aborts -= aborted
        if aborted:
            turn = Turn(turn.reasoning[: len(turn.reasoning) // 2])
        ids = [f"call_{n}_{i}" for i in range(len(turn.calls))]
        message = _message(served.flavour, turn, ids)
        with served.lock:
            for call in message.get("tool_calls") or []:
                served.sent[call["id"]] = {
                    k: message[k]
                    for k in ("reasoning_content", "reasoning_details")
                    if k in message
                } | ({"extra_content": call["extra_content"]} if "extra_content" in call else {})
        finish = served.cut_reason if aborted else "tool_calls" if turn.calls else "stop"
        usage: dict[str, Any] = {"prompt_tokens": len(json.dumps(body)) // 4}
        usage["completion_tokens"] = 10
        if served.flavour.strict:  # it thinks, but only says how much
            usage["completion_tokens_details"] = {"reasoning_tokens": 64}
        if body.get("stream") and not self.whole:
            return self._stream(message, finish, usage)
        choice = {"index": 0, "message": message, "finish_reason": finish}
        self._json(200, _envelope("chat.completion", [choice], usage))

    # ---- SSE ----

    def _stream(self, message: dict[str, Any], finish: str, usage: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for delta in [{"role": "assistant", "content": None}, *self._deltas(message)]:
            self._chunk([{"index": 0, "delta": delta, "finish_reason": None}])
        self._chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        self._chunk([], usage)
        self._raw(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _deltas(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        flavour = self.served.flavour
        reasoning = next((message[f] for f in flavour.reasoning_fields if f in message), "")
        for i in range(0, len(reasoning), CHUNK):
            piece = reasoning[i : i + CHUNK]
            delta: dict[str, Any] = {f: piece for f in flavour.reasoning_fields}
            if flavour.details:
                delta["reasoning_details"] = [
                    {"type": "reasoning.text", "text": piece, "format": "unknown", "index": 0}
                ]
            out.append(delta)
        content = message.get("content") or ""
        out += [{"content": content[i : i + CHUNK]} for i in range(0, len(content), CHUNK)]
        return out + self._call_deltas(message.get("tool_calls") or [])

    def _call_deltas(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        per_call: list[list[dict[str, Any]]] = []
        for i, call in enumerate(calls):
            head = {"index": i, "id": call["id"], "type": "function"}
            head["function"] = {"name": call["function"]["name"], "arguments": ""}
            head |= {k: call[k] for k in ("extra_content",) if k in call}
            args = call["function"]["arguments"]
            pieces = [
                {"index": i, "function": {"arguments": args[j : j + CHUNK]}}
                for j in range(0, len(args), CHUNK)
            ]
            per_call.append([head, *pieces])
        if self.interleave:
            order = [p for group in _zip_longest(per_call) for p in group]
        else:
            order = [p for group in per_call for p in group]
        return [{"tool_calls": [p]} for p in order]

    def _chunk(self, choices: list[dict[str, Any]], usage: Any = None) -> None:
        payload = _envelope("chat.completion.chunk", choices, usage)
        self._raw(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _zip_longest(groups: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    longest = max((len(g) for g in groups), default=0)
    return [[g[i] for g in groups if i < len(g)] for i in range(longest)]


def _envelope(kind: str, choices: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": "t-1", "object": kind, "created": int(time.time())}
    out |= {"model": "tool-model", "choices": choices}
    if usage is not None:
        out["usage"] = usage
    return out


@contextmanager
def tool_server(
    flavour: Flavour,
    model: Model,
    *,
    interleave: bool = False,
    whole: bool = False,
    aborts: int = 0,
    cut_reason: str = "abort",
) -> Iterator[ToolServer]:
    """Run the server on a free port; `whole`: answer every request with one JSON body,
    as servers that ignore `stream` do; `aborts`: cut the first tools turns short, ended
    by finish_reason `cut_reason`."""
    served = ToolServer(flavour=flavour, aborts=aborts, cut_reason=cut_reason)
    attrs = {"served": served, "model": staticmethod(model), "interleave": interleave}
    attrs["whole"] = whole
    with serving(type("Handler", (_Handler,), attrs)) as root:
        served.url = root + "/v1"
        yield served


# ---- scripted models ----------------------------------------------------------------------


def tool_results(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body.get("messages") or [] if m["role"] == "tool"]


def reader_answer(body: dict[str, Any]) -> Turn:
    """Reason-in-Documents: the first document's text as the final information."""
    prompt = "".join(str(m.get("content") or "") for m in body.get("messages") or [])
    docs = prompt.split("**Search results**", 1)[-1]
    first = re.search(r"\*\*Document 1\*\*: [^\n]*\n([^\n]+)", docs)
    return Turn(content=f"**Final Information**\n\n{first.group(1) if first else 'nothing'}")


def two_hop_tools(body: dict[str, Any]) -> Turn:
    """Designer of the Glimmer Bridge -> where that person was born, one search a turn."""
    if not body.get("tools"):
        return reader_answer(body)
    results = tool_results(body)
    if not results:
        return Turn(
            "I need the designer first.", "", (("search", {"query": "Glimmer Bridge designer"}),)
        )
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return Turn(
            f"Now where {name} was born.", "", (("search", {"query": f"{name} birthplace"}),)
        )
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    town = place.group(1) if place else "?"
    return Turn(f"So it is {town}.", f"The designer was born in \\boxed{{{town}}}.")


def terse_tools(body: dict[str, Any]) -> Turn:
    """`two_hop_tools` with no thinking on its second tool call (an empty reasoning turn)."""
    turn = two_hop_tools(body)
    if body.get("tools") and len(tool_results(body)) == 1:
        return Turn("", turn.content, turn.calls)
    return turn
