"""A loopback server that speaks OpenAI's Responses API (`POST /v1/responses`), for tests.

    with responses_server(two_hop_tools) as srv:
        llm = OpenAILLM(srv.url, api_mode="tools", tools_api="responses")

The "model" is the same function of a chat-completions body as tool_server's (`Turn`):
a Responses request is read as one (`function_call_output` items become `tool`
messages), so `two_hop_tools` answers here too. As OpenAI does with `store: false`:
- a turn's thinking comes back as a `reasoning` item, with a summary when one is asked
  for and an `encrypted_content` when `include` asks for "reasoning.encrypted_content";
- a request whose input holds a `function_call` this server returned without, before
  it, the reasoning item that came with it, unchanged, is a 400 in OpenAI's words: the
  behaviour that makes a client send a turn's items back as they came;
- `verified=False`: asking for a reasoning summary is a 400 (an unverified organisation);
- `strict`: a `temperature` or `top_p` but 1 is a 400, as OpenAI's reasoning models say;
- a field the Responses API does not have (`max_tokens`, `messages`, `top_k`, `seed`) is
  a 400, so a client leaking chat-completions fields is seen.
Streams (unless `whole`) send the semantic events (`event:` + `data:`), text in pieces
of `CHUNK` characters, and end with `response.completed` (no `[DONE]`). `fault`:
"failed" (a `response.failed` event), "error" (an `error` event) or "html" (an HTML page
with status 200). Chat requests (Reason-in-Documents) get a plain chat answer. Only stdlib.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.servers._base import JSONHandler, serving
from tests.servers.tool_server import Model, Turn

CHUNK = 7
Fault = Literal["failed", "error", "html"] | None
_FIELDS = {
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_output_tokens",
    "temperature",
    "top_p",
    "store",
    "include",
    "reasoning",
    "stream",
}
_UNVERIFIED = (
    "Your organization must be verified to generate reasoning summaries. Please go to: "
    "https://platform.openai.com/settings/organization/general and click on Verify "
    "Organization."
)


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass
class ResponsesServer:
    url: str = ""
    verified: bool = True
    strict: bool = False  # refuses temperature and top_p, as OpenAI's reasoning models do
    turns: list[dict[str, Any]] = field(default_factory=list)  # accepted /v1/responses bodies
    reader_requests: list[dict[str, Any]] = field(default_factory=list)  # chat completions
    refused: list[str] = field(default_factory=list)  # what each 400 was about
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)  # call_id -> its reasoning
    lock: threading.Lock = field(default_factory=threading.Lock)


def chat_view(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as the chat body the scripted models read."""
    messages: list[dict[str, Any]] = []
    for item in body.get("input") or []:
        if item.get("type") == "function_call_output":
            messages.append({"role": "tool", "content": item.get("output")})
        elif "role" in item and item.get("type", "message") == "message":
            messages.append({"role": item["role"], "content": item.get("content")})
    return {
        "messages": messages,
        "tools": body.get("tools"),
        "tool_choice": body.get("tool_choice"),
    }


def _check(served: ResponsesServer, body: dict[str, Any]) -> None:
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise BadRequest(f"Unknown parameter: '{unknown[0]}'.", unknown[0])
    for name in ("temperature", "top_p") if served.strict else ():
        if body.get(name, 1) != 1:  # OpenAI's reasoning models take the default only
            raise BadRequest(
                f"Unsupported parameter: '{name}' is not supported with this model.", name
            )
    summary = (body.get("reasoning") or {}).get("summary")
    if summary and not served.verified:
        raise BadRequest(_UNVERIFIED, "reasoning.summary")
    seen: list[dict[str, Any]] = []
    for item in body.get("input") or []:
        want = (
            served.sent.get(item.get("call_id", ""))
            if item.get("type") == "function_call"
            else None
        )
        if want is not None and want not in seen:
            raise BadRequest(
                f"Item '{item.get('id')}' of type 'function_call' was provided without its "
                f"required 'reasoning' item: '{want['id']}'."
            )
        seen.append(item)


def _output(n: int, turn: Turn, body: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning:
        summary = (body.get("reasoning") or {}).get("summary")
        parts = [{"type": "summary_text", "text": turn.reasoning}] if summary else []
        item: dict[str, Any] = {"id": f"rs_{n}", "type": "reasoning", "summary": parts}
        if "reasoning.encrypted_content" in (body.get("include") or []):
            secret = base64.b64encode(f"{n}:{turn.reasoning}".encode()).decode()
            item["encrypted_content"] = "gAAAA" + secret
        items.append(item)
    if turn.content:
        text = {"type": "output_text", "text": turn.content, "annotations": []}
        items.append(
            {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    for i, (name, args) in enumerate(turn.calls):
        call = {"call_id": f"call_{n}_{i}", "name": name, "arguments": json.dumps(args)}
        items.append({"id": f"fc_{n}_{i}", "type": "function_call", "status": "completed"} | call)
    return items


def _response(n: int, status: str, items: list[dict[str, Any]], body: Any) -> dict[str, Any]:
    usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 10}
    usage["output_tokens_details"] = {"reasoning_tokens": 64}  # type: ignore[assignment]
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": "tool-model",
        "output": items,
        "error": None,
        "incomplete_details": None,
        "usage": usage,
    }


class _Handler(JSONHandler):
    served: ResponsesServer
    model: Model
    whole: bool = False
    fault: Fault = None

    def do_GET(self) -> None:
        self._models("tool-model")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path == "/v1/chat/completions" and not body.get("tools"):
            return self._chat(body)
        if self.path != "/v1/responses":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        if self.fault == "html":
            return self._html()
        try:
            _check(self.served, body)
        except BadRequest as e:
            self.served.refused.append(e.param or str(e))
            error = {"message": str(e), "type": "invalid_request_error", "param": e.param}
            return self._json(400, {"error": error | {"code": "unsupported_value"}})
        self._answer(body)

    def _answer(self, body: dict[str, Any]) -> None:
        served = self.served
        with served.lock:
            served.turns.append(body)
            n = len(served.turns)
        turn = self.model(chat_view(body))
        if not body.get("tools") or body.get("tool_choice") == "none":
            turn = Turn(turn.reasoning, turn.content)
        items = _output(n, turn, body)
        with served.lock:
            for item in items:
                if item["type"] == "function_call" and items[0]["type"] == "reasoning":
                    served.sent[item["call_id"]] = items[0]
        if body.get("stream") and not self.whole:
            return self._stream(n, items, body)
        self._json(200, _response(n, "completed", items, body))

    def _chat(self, body: dict[str, Any]) -> None:
        with self.served.lock:
            self.served.reader_requests.append(body)
        turn = self.model(body)
        message = {"role": "assistant", "content": turn.content}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        usage = {"prompt_tokens": len(json.dumps(body)) // 4, "completion_tokens": 10}
        self._json(
            200, {"id": "c-1", "object": "chat.completion", "choices": [choice], "usage": usage}
        )

    def _html(self) -> None:
        page = b"<html><head><title>Bad gateway</title></head><body>oops</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    # ---- SSE ----

    def _stream(self, n: int, items: list[dict[str, Any]], body: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._seq = itertools.count()
        self._event("response.created", response=_response(n, "in_progress", [], body))
        if self.fault == "failed":
            failed = _response(n, "failed", [], body)
            failed["error"] = {"code": "server_error", "message": "The model failed mid-answer."}
            self._event("response.failed", response=failed)
        elif self.fault == "error":
            self._event("error", code="rate_limit_exceeded", message="Slow down.", param=None)
        else:
            for index, item in enumerate(items):
                self._item(index, item)
            self._event("response.completed", response=_response(n, "completed", items, body))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _item(self, index: int, item: dict[str, Any]) -> None:
        kind = item["type"]
        empty = {**item, "summary": []} if kind == "reasoning" else item
        empty = {**empty, "arguments": ""} if kind == "function_call" else empty
        self._event("response.output_item.added", output_index=index, item=empty)
        where = {"item_id": item["id"], "output_index": index}
        for text, event, extra in _texts(item):
            for i in range(0, len(text), CHUNK):
                self._event(event, **where, **extra, delta=text[i : i + CHUNK])
        self._event("response.output_item.done", output_index=index, item=item)

    def _event(self, kind: str, **fields: Any) -> None:
        data = json.dumps({"type": kind, "sequence_number": next(self._seq), **fields})
        frame = f"event: {kind}\ndata: {data}\n\n".encode()
        self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
        self.wfile.flush()


def _texts(item: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(text, delta event, its extra fields) for each streamed text of an output item."""
    if item["type"] == "reasoning":
        event = "response.reasoning_summary_text.delta"
        return [(p["text"], event, {"summary_index": i}) for i, p in enumerate(item["summary"])]
    if item["type"] == "message":
        event = "response.output_text.delta"
        return [(c["text"], event, {"content_index": i}) for i, c in enumerate(item["content"])]
    return [(item["arguments"], "response.function_call_arguments.delta", {})]


@contextmanager
def responses_server(
    model: Model,
    *,
    whole: bool = False,
    verified: bool = True,
    strict: bool = False,
    fault: Fault = None,
) -> Iterator[ResponsesServer]:
    """Run the server on a free port; `whole`: answer streamed requests with one JSON body."""
    served = ResponsesServer(verified=verified, strict=strict)
    attrs = {"served": served, "model": staticmethod(model), "whole": whole, "fault": fault}
    with serving(type("Handler", (_Handler,), attrs)) as root:
        served.url = root + "/v1"
        yield served
