"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests: no mocks, the real wire.

    with openai_server(lambda body: "I think <|begin_search_query|>x<|end_search_query|>") as s:
        llm = OpenAILLM(s.url, model="fake-model")

`respond(body)` receives the parsed request JSON (with "prompt" for /v1/completions or
"messages" for /v1/chat/completions) and returns the model's whole would-be text. The server
then behaves like a real one: it cuts the text at the first stop string (keeping the stop
string only when `return_stop` and the request asks with `include_stop_str_in_output`,
as vLLM does, default false in its `protocol.py`; dropping it like llama.cpp otherwise),
cuts at `max_tokens` (a token is 4 characters; finish "length"), streams SSE when asked,
reports usage, and answers GET /v1/models.

Only stdlib: ThreadingHTTPServer in a daemon thread.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.servers._base import QuietServer

Respond = Callable[[dict[str, Any]], str]
# Given the completion request's number (0 for the first), the way to misbehave, or None:
# "html200" (a proxy's HTML page with status 200), "empty_choices" (JSON, no choices),
# "truncate" (half the stream, then a clean end with no finish_reason and no [DONE]),
# "reset" (half the stream, then a TCP reset), "stall" (half the stream, then silence
# for `stall_s`), "html404" / "html501" (an HTML error page, like a static web server),
# "abort" (half the text, then finish_reason "abort", as vLLM and SGLang end a generation
# the engine aborted: vLLM's FinishReason.ABORT, SGLang's FINISH_ABORT; streamed or whole),
# "content_filter" (the same, ended by finish_reason "content_filter", as OpenAI's,
# DeepSeek's and SGLang's filters end a reply).
Fault = Callable[[int], str | None]
FAULTS = (
    "html200",
    "empty_choices",
    "truncate",
    "reset",
    "stall",
    "html404",
    "html501",
    "abort",
    "content_filter",
)
ApplyTemplate = Callable[[list[dict[str, str]]], str]
COMPLETION_PATHS = ("/v1/completions", "/v1/chat/completions")
# vLLM's words for a prompt past the window: its OpenAI layer's check
# (`serving_engine.py`), and its engine's (`v1/engine/processor.py`), which a prompt
# that passed the first still meets.
OVERFLOW_SERVING = (
    "This model's maximum context length is {limit} tokens. "
    "However, you requested {tokens} tokens in the messages."
)
OVERFLOW_ENGINE = (
    "The decoder prompt (length {tokens}) is longer than the maximum model length of "
    "{limit}. Make sure that `max_model_len` is no smaller than the number of text tokens."
)
CHUNK_CHARS = 4


class FakeOpenAIServer:
    """Handle on a running fake server.

    `requests`: every request received, in order, as (path, body); GET bodies are {}.
    This includes discovery (GET /v1/models) and template probes (POST /apply-template,
    /tokenize), which a client may send before its first completion; use
    `completion_requests` for only the completion bodies. `headers`: the request headers,
    parallel to `requests`; `clients`: the client's (host, port), parallel too (one port
    is one connection, so it shows connection reuse).
    """

    def __init__(self, httpd: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        host, port = httpd.server_address[:2]
        self.base = f"http://{host!s}:{port}"
        self.url = self.base + "/v1"
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        self.clients: list[tuple[str, int]] = []
        self.dropped = 0  # requests hung up on unread (see `drop_reused`)

    @property
    def completion_requests(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path in COMPLETION_PATHS]

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _Config:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)
        self.failures_left: int = kw["fail_first"]
        self.drops_left: int = kw["drop_reused"]
        self.lock = threading.Lock()
        self.completions = 0  # completion requests answered so far
        # prompt + the text a cut stream had sent -> the rest of that reply, so that a
        # client continuing after a cut gets what a deterministic model would say.
        self.rests: dict[str, str] = {}


def _cut(text: str, body: dict[str, Any], return_stop: bool) -> tuple[str, str, str | None]:
    """(text as the server returns it, finish_reason, matched stop) like a real server."""
    stops = body.get("stop") or []
    stops = [stops] if isinstance(stops, str) else stops
    cut, matched = len(text), None
    for s in stops:
        i = text.find(s) if s else -1
        if 0 <= i < cut:
            cut, matched = i, s
    out = text[:cut] + (matched if matched and return_stop else "")
    finish = "stop"
    limit = body.get("max_tokens")
    if isinstance(limit, int) and len(out) > limit * 4:
        out, finish, matched = out[: limit * 4], "length", None
    return out, finish, matched


def _prompt_text(body: dict[str, Any]) -> str:
    if isinstance(body.get("prompt"), str):
        return str(body["prompt"])
    return "".join(str(m.get("content") or "") for m in body.get("messages") or [])


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


class _Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAI/1.0"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between small writes
    cfg: _Config
    handle_ref: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return None

    served = 0  # requests this connection has carried (one handler per connection)

    # ---- plumbing ----

    def handle_one_request(self) -> None:
        self.served += 1
        if self.served > 1 and self._drop():
            return None
        return super().handle_one_request()

    def _drop(self) -> bool:
        """Hang up on a request that came on a kept-alive connection, unread and unanswered,
        as a server does whose idle timeout fires just as the request arrives."""
        if self.rfile.peek(1) == b"":  # the client closed the connection itself
            return False
        with self.cfg.lock:
            if self.cfg.drops_left <= 0:
                return False
            self.cfg.drops_left -= 1
            self.handle_ref.dropped += 1
        self.close_connection = True
        return True

    def _record(self, body: dict[str, Any]) -> None:
        with self.cfg.lock:
            self.handle_ref.requests.append((self.path, body))
            self.handle_ref.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.handle_ref.clients.append(self.client_address[:2])

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        payload = {"error": {"message": message, "type": "BadRequestError", "code": status}}
        self._send(status, payload, headers)

    # ---- routes ----

    def do_GET(self) -> None:
        self._record({})
        if self.path.rstrip("/") != "/v1/models":
            return self._error(404, f"no route {self.path}")
        # Who a client thinks it talks to: vLLM returns stop strings on request, llama.cpp not.
        owner = self.cfg.owned_by or ("vllm" if self.cfg.return_stop else "llamacpp")
        entries = []
        for model_id in self.cfg.models:
            entry: dict[str, Any] = {"id": model_id, "object": "model", "owned_by": owner}
            if self.cfg.context_length:
                entry["max_model_len"] = self.cfg.context_length
            entries.append(entry)
        self._send(200, {"object": "list", "data": entries})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._record({})
            return self._error(400, "request body is not JSON")
        self._record(body)
        if self.path == "/apply-template" and self.cfg.apply_template:
            return self._send(200, {"prompt": self.cfg.apply_template(body["messages"])})
        if self.path not in COMPLETION_PATHS:
            return self._error(404, f"no route {self.path}")
        rejected = [f for f in self.cfg.reject_fields if f in body]
        if rejected:
            return self._error(400, f"Unrecognized request argument supplied: {rejected[0]}")
        if self._should_fail():
            return
        self._complete(body)

    def _should_fail(self) -> bool:
        cfg = self.cfg
        with cfg.lock:
            failing = cfg.failures_left > 0
            cfg.failures_left -= 1 if failing else 0
        status = cfg.always_fail_status or (cfg.fail_status if failing else None)
        if status is None:
            return False
        headers = {"Retry-After": str(cfg.retry_after)} if cfg.retry_after is not None else {}
        self._error(status, f"simulated failure {status}", headers)
        return True

    def _complete(self, body: dict[str, Any]) -> None:
        cfg = self.cfg
        model = body.get("model")
        if model is not None and model not in cfg.models:
            return self._error(404, f"The model `{model}` does not exist.")
        prompt = _prompt_text(body)
        if cfg.context_length and _tokens(prompt) > cfg.context_length:
            message = (cfg.overflow_text or OVERFLOW_SERVING).format(
                limit=cfg.context_length, tokens=_tokens(prompt)
            )
            return self._error(400, message)
        whole = cfg.rests.get(prompt)
        text, finish, matched = _cut(
            cfg.respond(body) if whole is None else whole,
            body,
            cfg.return_stop and bool(body.get("include_stop_str_in_output")),
        )
        if cfg.malformed:
            return self._send_malformed(body)
        with cfg.lock:
            number, cfg.completions = cfg.completions, cfg.completions + 1
        fault = cfg.fault(number) if cfg.fault else None
        if fault:
            return self._misbehave(fault, body, prompt, text)
        chat = self.path.endswith("/chat/completions")
        usage = {
            "prompt_tokens": _tokens(prompt),
            "completion_tokens": _tokens(text),
            "total_tokens": _tokens(prompt) + _tokens(text),
        }
        extra, top = self._stop_info(body, matched)
        if body.get("stream"):
            return self._stream(body, chat, text, finish, usage, (extra, top))
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, **extra}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        self._send(200, self._envelope(chat, [choice], usage=usage, **top))

    def _stop_info(
        self, body: dict[str, Any], matched: str | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(fields for the choice, fields for the envelope) that tell which stop matched.

        Like vLLM (return_stop=True): choices[].stop_reason. Like llama.cpp
        (return_stop=False): only `__verbose.stopping_word`, and only when the request
        asked for `verbose`.
        """
        if self.cfg.return_stop:
            return {"stop_reason": matched}, {}
        if body.get("verbose"):
            word = matched or ""
            return {}, {
                "__verbose": {"stop_type": "word" if word else "eos", "stopping_word": word}
            }
        return {}, {}

    def _envelope(self, chat: bool, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": "cmpl-fake",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": self.cfg.model,
            "choices": choices,
            **{k: v for k, v in extra.items() if v is not None},
        }

    def _send_malformed(self, body: dict[str, Any]) -> None:
        if body.get("stream"):
            self._start_sse()
            self._sse_raw(b'data: {"choices": [{"text": "x"\n\n')
            self._sse_raw(b"data: [DONE]\n\n")
            return self._end_sse()
        self._send(200, b'{"choices": [{"text": "unterminated')

    # ---- faults ----

    def _misbehave(self, fault: str, body: dict[str, Any], prompt: str, text: str) -> None:
        if fault.startswith("html"):
            return self._send_html(int(fault[4:]))
        if fault in ("abort", "content_filter"):
            return self._aborted(body, prompt, text, reason=fault)
        if not body.get("stream"):
            return self._send(200, self._envelope(False, []))
        chat = self.path.endswith("/chat/completions")
        if fault == "empty_choices":  # a well-formed stream that holds no completion
            self._start_sse()
            self._sse(self._envelope(chat, []))
            self._sse_raw(b"data: [DONE]\n\n")
            return self._end_sse()
        half = text[: len(text) // 2 // CHUNK_CHARS * CHUNK_CHARS]
        self.cfg.rests[prompt + half] = text[len(half) :]
        self._start_sse()
        for i in range(0, len(half), CHUNK_CHARS):
            piece = half[i : i + CHUNK_CHARS]
            content = {"delta": {"content": piece}} if chat else {"text": piece}
            self._sse(self._envelope(chat, [{"index": 0, "finish_reason": None, **content}]))
        if fault == "stall":
            time.sleep(self.cfg.stall_s)
        if fault == "reset":
            # SO_LINGER 0: close sends a TCP RST, as a crashed proxy or server does.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        self._end_sse()  # a well-formed end of a body that is not a whole stream
        self.close_connection = True

    def _aborted(self, body: dict[str, Any], prompt: str, text: str, *, reason: str) -> None:
        """Half the text, ended by finish_reason `reason` ("abort", ...): a well-formed
        reply (with `[DONE]` when streamed) that is still no finished generation."""
        chat = self.path.endswith("/chat/completions")
        half = text[: len(text) // 2 // CHUNK_CHARS * CHUNK_CHARS]
        self.cfg.rests[prompt + half] = text[len(half) :]
        usage = {"prompt_tokens": _tokens(prompt), "completion_tokens": _tokens(half)}
        if not body.get("stream"):
            piece = {"message": {"role": "assistant", "content": half}} if chat else {"text": half}
            choice = {"index": 0, "finish_reason": reason, "stop_reason": None, **piece}
            return self._send(200, self._envelope(chat, [choice], usage=usage))
        self._start_sse()
        for i in range(0, len(half), CHUNK_CHARS):
            piece = half[i : i + CHUNK_CHARS]
            content = {"delta": {"content": piece}} if chat else {"text": piece}
            self._sse(self._envelope(chat, [{"index": 0, "finish_reason": None, **content}]))
        last = {"delta": {}} if chat else {"text": ""}
        final = {"index": 0, "finish_reason": reason, "stop_reason": None, **last}
        self._sse(self._envelope(chat, [final]))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._sse(self._envelope(chat, [], usage=usage))
        self._sse_raw(b"data: [DONE]\n\n")
        self._end_sse()

    def _send_html(self, status: int) -> None:
        page = b"<!DOCTYPE html><html><head><title>Bad Gateway</title></head>"
        page += b"<body><h1>502 Bad Gateway</h1><p>upstream went away</p></body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    # ---- SSE ----

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _sse_raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_sse(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _sse(self, payload: dict[str, Any]) -> None:
        self._sse_raw(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _stream(
        self,
        body: dict[str, Any],
        chat: bool,
        text: str,
        finish: str,
        usage: dict[str, int],
        stop_info: tuple[dict[str, Any], dict[str, Any]],
    ) -> None:
        extra, top = stop_info
        self._start_sse()
        if chat:
            self._sse(self._envelope(chat, [{"index": 0, "delta": {"role": "assistant"}}]))
        for i in range(0, len(text), CHUNK_CHARS):
            piece = text[i : i + CHUNK_CHARS]
            content = {"delta": {"content": piece}} if chat else {"text": piece}
            self._sse(self._envelope(chat, [{"index": 0, "finish_reason": None, **content}]))
        last = {"delta": {}} if chat else {"text": ""}
        final = [{"index": 0, "finish_reason": finish, **last, **extra}]
        self._sse(self._envelope(chat, final, **top))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._sse(self._envelope(chat, [], usage=usage))
        self._sse_raw(b"data: [DONE]\n\n")
        self._end_sse()


@contextmanager
def openai_server(
    respond: Respond,
    *,
    model: str = "fake-model",
    return_stop: bool = True,
    context_length: int | None = None,
    overflow_text: str | None = None,
    models: list[str] | None = None,
    fail_first: int = 0,
    fail_status: int = 429,
    retry_after: float | None = None,
    always_fail_status: int | None = None,
    malformed: bool = False,
    apply_template: ApplyTemplate | None = None,
    owned_by: str | None = None,
    reject_fields: tuple[str, ...] = (),
    fault: Fault | None = None,
    stall_s: float = 1.0,
    drop_reused: int = 0,
) -> Iterator[FakeOpenAIServer]:
    """Run a fake OpenAI-compatible server on a free loopback port for the `with` block.

    `fail_first=N` answers the first N completion requests with `fail_status` (plus a
    Retry-After header when `retry_after` is given); `always_fail_status` fails every
    completion request; `malformed` answers completions with invalid JSON; a prompt
    longer than `context_length` gets a 400 in `overflow_text`'s words (default
    `OVERFLOW_SERVING`; `{limit}` and `{tokens}` are filled in);
    `apply_template(messages) -> str` serves llama.cpp's POST /apply-template.
    GET /v1/models says `owned_by` "vllm" when `return_stop` else "llamacpp" (as those
    servers do), unless `owned_by` is given. `reject_fields` makes it strict like OpenAI's
    hosted API: a request holding any of those fields gets a 400 naming it.
    `fault(n)` makes completion request n misbehave (see `Fault`); `stall_s` is how long
    a "stall" stays silent. `drop_reused=N` hangs up on the first N requests that come on
    a kept-alive connection, before reading them (they are not recorded; `dropped` counts
    them).
    """
    cfg = _Config(
        respond=respond,
        model=model,
        return_stop=return_stop,
        context_length=context_length,
        overflow_text=overflow_text,
        models=list(models) if models else [model],
        fail_first=fail_first,
        fail_status=fail_status,
        retry_after=retry_after,
        always_fail_status=always_fail_status,
        malformed=malformed,
        apply_template=apply_template,
        owned_by=owned_by,
        reject_fields=reject_fields,
        fault=fault,
        stall_s=stall_s,
        drop_reused=drop_reused,
    )
    handler = type("Handler", (_Handler,), {"cfg": cfg})
    httpd = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=httpd.serve_forever, args=(0.02,), name="fake-openai", daemon=True
    )
    server = FakeOpenAIServer(httpd, thread)
    handler.handle_ref = server
    thread.start()
    try:
        yield server
    finally:
        server.stop()
