"""A loopback server that answers as Ollama does, for tests.

    with ollama_server(two_hop_thinker) as srv:
        llm = OpenAILLM(srv.root)  # http://127.0.0.1:PORT, as users give Ollama's

Copied from Ollama's source and API docs (`server/routes.go`, `openai/openai.go`,
`api/types.go`, `docs/api.md`; facts file section 6 and 10):
- `GET /api/version` -> `{"version"}`; `GET /api/tags` -> `{"models": [{"name", ...}]}`;
  `GET /v1/models` -> entries whose `owned_by` is the model's namespace ("library").
- `POST /api/generate`: `raw: true` feeds `prompt` to the model as it is; otherwise
  the model's template wraps it as a user turn. A thinking model's `<think>` text is
  moved out of `response` into `thinking` unless `think: false` (PR #17708), also with
  `raw` (the worst case). `options.stop` ends the generation, the stop left out
  (applied to the answer text only: the worst case), `options.num_predict` caps it
  (`done_reason: "length"`). NDJSON lines when streaming (the default), one object
  otherwise; the last has `done: true`, `done_reason`, `prompt_eval_count`, `eval_count`.
- `POST /api/chat`: the template renders `messages`; with `think: true` the thinking
  comes in `message.thinking`. A trailing assistant message is continued (the template
  leaves its turn open).
- `POST /v1/completions`: the template is applied (`raw` is never set) and only the
  answer is returned: the thinking is dropped (issue #12636).
- `POST /v1/chat/completions`: the thinking in `delta.reasoning` / `message.reasoning`.
- Errors are `{"error": "..."}`; `think` asked of a model that cannot think is a 400;
  a path with no route is Gin's plain-text "404 page not found".

The model's template is ChatML whose generation prompt opens `<think>\\n` (QwQ's), and
the model is a function of the raw prompt, as in reasoning_server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.servers._base import JSONHandler, serving
from tests.servers.reasoning_server import Model, chatml, in_thinking, split_output

MODEL = "qwq:32b"
CHUNK = 6


@dataclass
class OllamaServer:
    root: str = ""
    thinks: bool = True  # a thinking model
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)  # what the model was fed
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return self.root + "/v1"

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]


def _cut(output: str, prompt: str, stops: list[str]) -> tuple[str, str | None]:
    """The output cut at the first stop string in the answer part (not the thinking)."""
    hits = [
        (i, s)
        for s in stops
        if s and (i := output.find(s)) >= 0 and not in_thinking(prompt + output[:i])
    ]
    if not hits:
        return output, None
    i, s = min(hits)
    return output[:i], s


class _Handler(JSONHandler):
    served: OllamaServer
    model: Model

    def do_GET(self) -> None:
        served = self.served
        with served.lock:
            served.requests.append((self.path, {}))
        if self.path == "/api/version":
            return self._json(200, {"version": "0.12.6"})
        if self.path == "/api/tags":
            return self._json(200, {"models": [{"name": MODEL, "model": MODEL, "size": 1}]})
        if self.path.rstrip("/") == "/v1/models":
            entry = {"id": MODEL, "object": "model", "created": 1, "owned_by": "library"}
            return self._json(200, {"object": "list", "data": [entry]})
        self._no_route()

    def _no_route(self) -> None:
        """Gin's own answer to a path no route matches (Ollama sets no NoRoute handler):
        plain text, not Ollama's JSON error."""
        data = b"404 page not found"
        self.send_response(404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with self.served.lock:
            self.served.requests.append((self.path, body))
        if body.get("think") and not self.served.thinks:
            return self._error(400, f'"{MODEL}" does not support thinking')
        if self.path == "/api/generate":
            return self._generate(body)
        if self.path == "/api/chat":
            return self._chat(body)
        if self.path == "/v1/completions":
            return self._v1_completions(body)
        if self.path == "/v1/chat/completions":
            return self._v1_chat(body)
        self._no_route()

    # ---- the model ----

    def _run(self, prompt: str, options: dict[str, Any]) -> tuple[str, str]:
        with self.served.lock:
            self.served.prompts.append(prompt)
        output, _ = _cut(self.model(prompt), prompt, list(options.get("stop") or []))
        limit = options.get("num_predict")
        if isinstance(limit, int) and limit > 0 and len(output) > limit * 4:
            return output[: limit * 4], "length"
        return output, "stop"

    def _split(self, prompt: str, output: str, think: Any) -> tuple[str, str]:
        """(thinking, answer): moved apart unless `think` is false (PR #17708)."""
        if think is False or not self.served.thinks:
            return "", output
        return split_output(prompt, output)

    # ---- native ----

    def _generate(self, body: dict[str, Any]) -> None:
        prompt = str(body.get("prompt") or "")
        if not body.get("raw"):
            prompt = chatml(
                [{"role": "user", "content": prompt}], generation=True, opens_think=True
            )
        output, reason = self._run(prompt, body.get("options") or {})
        thinking, answer = self._split(prompt, output, body.get("think"))
        self._native(body, thinking, answer, reason, prompt, chat=False)

    def _chat(self, body: dict[str, Any]) -> None:
        messages = list(body.get("messages") or [])
        if messages and messages[-1].get("role") == "assistant":
            head = chatml(messages[:-1], generation=False, opens_think=True)
            prompt = head + "<|im_start|>assistant\n" + str(messages[-1].get("content") or "")
        else:
            prompt = chatml(messages, generation=True, opens_think=True)
        output, reason = self._run(prompt, body.get("options") or {})
        thinking, answer = self._split(prompt, output, body.get("think"))
        self._native(body, thinking, answer, reason, prompt, chat=True)

    def _native(
        self, body: dict[str, Any], thinking: str, answer: str, reason: str, prompt: str, chat: bool
    ) -> None:
        def part(think: str, text: str) -> dict[str, Any]:
            if chat:
                message: dict[str, Any] = {"role": "assistant", "content": text}
                return {"message": message | ({"thinking": think} if think else {})}
            return {"response": text} | ({"thinking": think} if think else {})

        head = {"model": MODEL, "created_at": "2026-12-01T00:00:00Z"}
        last = head | part("", "") | {"done": True, "done_reason": reason}
        last |= {"prompt_eval_count": len(prompt) // 4, "eval_count": (len(thinking + answer)) // 4}
        if body.get("stream", True) is False:
            return self._json(200, last | part(thinking, answer))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = [part(thinking[i : i + CHUNK], "") for i in range(0, len(thinking), CHUNK)]
        pieces += [part("", answer[i : i + CHUNK]) for i in range(0, len(answer), CHUNK)]
        for piece in pieces:
            self._line(head | piece | {"done": False})
        self._line(last)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _line(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # ---- OpenAI-compatible ----

    def _v1_completions(self, body: dict[str, Any]) -> None:
        # The template is applied to the prompt, and the thinking is dropped.
        prompt = chatml(
            [{"role": "user", "content": str(body.get("prompt") or "")}],
            generation=True,
            opens_think=True,
        )
        stops = body.get("stop") or []
        output, reason = self._run(prompt, {"stop": stops, "num_predict": body.get("max_tokens")})
        _, answer = split_output(prompt, output)
        choice = {"index": 0, "text": answer, "finish_reason": reason}
        self._json(200, _envelope("text_completion", choice))

    def _v1_chat(self, body: dict[str, Any]) -> None:
        # Whole replies only here: the thinking in `message.reasoning`.
        prompt = chatml(list(body.get("messages") or []), generation=True, opens_think=True)
        stops = body.get("stop") or []
        output, reason = self._run(prompt, {"stop": stops, "num_predict": body.get("max_tokens")})
        thinking, answer = split_output(prompt, output)
        message = {"role": "assistant", "content": answer, "reasoning": thinking}
        choice = {"index": 0, "message": message, "finish_reason": reason}
        self._json(200, _envelope("chat.completion", choice))


def _envelope(kind: str, choice: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "x-1",
        "object": kind,
        "created": int(time.time()),
        "model": MODEL,
        "choices": [choice],
    }


@contextmanager
def ollama_server(model: Model, *, thinks: bool = True) -> Iterator[OllamaServer]:
    """Run an Ollama-like server for `model` on a free port."""
    served = OllamaServer(thinks=thinks)
    handler = type("Handler", (_Handler,), {"served": served, "model": staticmethod(model)})
    with serving(handler) as root:
        served.root = root
        yield served
