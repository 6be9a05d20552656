"""Loopback servers that speak the wire formats of reasoning-model servers, for tests.

    with reasoning_server(VLLM, model_fn) as srv:
        llm = OpenAILLM(srv.url, api_mode="chat")

Each `Flavour` reproduces one server as its public docs and code describe it (see the
facts file on reasoning servers; unconfirmed points are marked "assumed" below):

- vLLM with `--reasoning-parser`: thinking in `reasoning_content` (up to v0.10), in both
  `reasoning` and `reasoning_content` (v0.11), in `reasoning` only (later). Stop strings
  fire inside the thinking and come back with `include_stop_str_in_output`. A chain is
  continued with `continue_final_message: true` + `add_generation_prompt: false` (the
  pair with `add_generation_prompt: true` is a 400); the final assistant message is
  rendered and cut at its end. `/v1/completions` is raw text, no parser.
- SGLang: `reasoning_content`; `continue_final_message` drops the last assistant message,
  renders the rest with the generation prompt and appends that message's content as is;
  without the flag a trailing assistant message becomes a user message. Stop strings are
  trimmed unless `no_stop_trim`.
- DeepSeek: `reasoning_content` (content is null while it thinks, also in stream deltas);
  `usage.completion_tokens_details.reasoning_tokens`. Prefix completion only under
  `/beta`: `prefix: true` on the last assistant message, whose `reasoning_content` is the
  thinking so far. No raw completions. (Assumed: stop strings fire inside the thinking;
  `prefix` outside /beta is a 400.)
- OpenRouter: `reasoning` plus `reasoning_details` (`reasoning.text` entries) in message
  and delta; a trailing assistant message is a prefill continued verbatim (assumed: the
  provider behind it renders it like vLLM's continue_final_message). /models entries have
  no `owned_by`.
- continuation="refuse": a trailing assistant message is a 400 with llama.cpp's text
  (its prefill is refused while thinking is on).
- HIDDEN (OpenAI o-series style): the thinking is never returned, only counted in
  `reasoning_tokens`; a trailing assistant message starts a new turn.

The "model" is a function of the raw prompt the server would feed it (its chat template
rendered here: ChatML whose generation prompt opens `<think>\\n`, as QwQ's and R1's do) and
returns raw output; the server then splits it at `</think>` like a reasoning parser.
Only stdlib: ThreadingHTTPServer in a daemon thread.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal

from tests.servers._base import JSONHandler, serving

Model = Callable[[str], str]  # raw prompt -> raw output (thinking, `</think>`, answer)
THINK, UNTHINK = "<think>", "</think>"
CHUNK = 5


@dataclass(frozen=True)
class Flavour:
    name: str
    owned_by: str | None
    fields: tuple[str, ...]  # reasoning field names in message and delta
    continuation: Literal["vllm", "sglang", "deepseek", "prefill", "refuse", "none"]
    completions: bool = False  # serves raw /v1/completions
    details: bool = False  # OpenRouter's reasoning_details
    null_content: bool = False  # "content": null while thinking (DeepSeek)
    counts_reasoning: bool = False  # usage.completion_tokens_details.reasoning_tokens
    opens_think: bool = True  # the template's generation prompt ends with "<think>\n"


VLLM_010 = Flavour("vllm-0.10", "vllm", ("reasoning_content",), "vllm", completions=True)
VLLM_011 = Flavour("vllm-0.11", "vllm", ("reasoning", "reasoning_content"), "vllm", True)
VLLM = Flavour("vllm", "vllm", ("reasoning",), "vllm", completions=True)
SGLANG = Flavour("sglang", "sglang", ("reasoning_content",), "sglang", completions=True)
DEEPSEEK = Flavour(
    "deepseek", "deepseek", ("reasoning_content",), "deepseek", null_content=True,
    counts_reasoning=True,
)  # fmt: skip
OPENROUTER = Flavour(
    "openrouter", None, ("reasoning",), "prefill", details=True, counts_reasoning=True
)
HIDDEN = Flavour("hidden", "system", (), "none", counts_reasoning=True)
FLAVOURS = (VLLM_010, VLLM_011, VLLM, SGLANG, DEEPSEEK, OPENROUTER)


class BadRequest(Exception):
    """Answered as a 400 with this message, as the real server would."""


# ---- the server's chat template and reasoning parser --------------------------------------


def chatml(messages: list[dict[str, Any]], *, generation: bool, opens_think: bool) -> str:
    """QwQ-style ChatML: past assistant turns keep only the text after `</think>`."""
    out = []
    for m in messages:
        content = str(m.get("content") or "")
        if m["role"] == "assistant":
            content = content.split(UNTHINK)[-1].lstrip("\n")
        out.append(f"<|im_start|>{m['role']}\n{content}<|im_end|>\n")
    if generation:
        out.append("<|im_start|>assistant\n" + (THINK + "\n" if opens_think else ""))
    return "".join(out)


def render_chat(flavour: Flavour, body: dict[str, Any], path: str) -> str:
    """The raw prompt this server builds from a chat request, continuation rules included."""
    messages = [dict(m) for m in body.get("messages") or []]
    last = messages[-1] if messages else {}
    trailing = last.get("role") == "assistant"
    opens = flavour.opens_think
    kind = flavour.continuation
    if kind == "refuse" and trailing:
        raise BadRequest("Assistant response prefill is incompatible with enable_thinking.")
    if kind == "vllm" and body.get("continue_final_message"):
        if body.get("add_generation_prompt", True):
            raise BadRequest(
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
            )
        head = chatml(messages[:-1], generation=False, opens_think=opens)
        return head + f"<|im_start|>assistant\n{last.get('content') or ''}"
    if kind == "sglang" and trailing and body.get("continue_final_message"):
        head = chatml(messages[:-1], generation=True, opens_think=opens)
        return head + str(last.get("content") or "")
    if kind == "sglang" and trailing:
        messages[-1] = {"role": "user", "content": last.get("content")}
    if last.get("prefix"):
        return _deepseek_prefix(messages, path, opens)
    if kind == "prefill" and trailing:
        head = chatml(messages[:-1], generation=False, opens_think=opens)
        return head + f"<|im_start|>assistant\n{last.get('content') or ''}"
    return chatml(messages, generation=True, opens_think=opens)


def _deepseek_prefix(messages: list[dict[str, Any]], path: str, opens: bool) -> str:
    if not path.startswith("/beta/"):
        raise BadRequest("prefix completion is only available at the beta endpoint")
    last = messages[-1]
    head = chatml(messages[:-1], generation=True, opens_think=opens)
    thinking = str(last.get("reasoning_content") or "")
    content = str(last.get("content") or "")
    return head + thinking + (UNTHINK + content if content else "")


def in_thinking(prompt: str) -> bool:
    return prompt.rfind(THINK) > prompt.rfind(UNTHINK)


def split_output(prompt: str, output: str) -> tuple[str, str]:
    """(reasoning, content) as a `</think>`-splitting reasoning parser returns them."""
    if not in_thinking(prompt):
        if not output.lstrip().startswith(THINK):
            return "", output
        output = output.lstrip()[len(THINK) :]
    thinking, sep, answer = output.partition(UNTHINK)
    return (thinking, answer) if sep else (output, "")


def cut_at_stop(text: str, body: dict[str, Any], keep: bool) -> tuple[str, str]:
    stops = body.get("stop") or []
    stops = [stops] if isinstance(stops, str) else stops
    hits = [(i, s) for s in stops if s and (i := text.find(s)) >= 0]
    if not hits:
        return text, "stop"
    i, s = min(hits)
    return text[:i] + (s if keep else ""), "stop"


def _keeps_stop(flavour: Flavour, body: dict[str, Any]) -> bool:
    if flavour.continuation == "sglang":
        return bool(body.get("no_stop_trim"))
    return flavour.continuation == "vllm" and bool(body.get("include_stop_str_in_output"))


# ---- HTTP ----------------------------------------------------------------------------------


class ReasoningServer:
    """Handle on a running server: `url` (…/v1), `base`, and every request as (path, body)."""

    def __init__(self, root: str, flavour: Flavour) -> None:
        self.base = root
        self.url = self.base + "/v1"
        self.beta_url = self.base + "/beta"
        self.flavour = flavour
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.prompts: list[str] = []  # the raw prompt of every generation, in order

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if p.endswith("/chat/completions")]


class _Handler(JSONHandler):
    flavour: Flavour
    model: Model
    served: ReasoningServer
    lock = threading.Lock()

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def do_GET(self) -> None:
        with self.lock:
            self.served.requests.append((self.path, {}))
        if self.path.rstrip("/") not in ("/v1/models", "/models"):
            return self._error(404, f"no route {self.path}")
        entry: dict[str, Any] = {"id": "reasoner", "object": "model"}
        if self.flavour.owned_by:
            entry["owned_by"] = self.flavour.owned_by
        self._json(200, {"object": "list", "data": [entry]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        with self.lock:
            self.served.requests.append((self.path, body))
        try:
            if self.path.endswith("/chat/completions"):
                return self._chat(body)
            if self.path == "/v1/completions" and self.flavour.completions:
                return self._completions(body)
        except BadRequest as e:
            return self._error(400, str(e))
        self._error(404, f"no route {self.path}")

    def _generate(self, prompt: str, body: dict[str, Any]) -> tuple[str, str]:
        with self.lock:
            self.served.prompts.append(prompt)
        output, finish = cut_at_stop(self.model(prompt), body, _keeps_stop(self.flavour, body))
        limit = body.get("max_tokens")
        if isinstance(limit, int) and len(output) > limit * 4:
            output, finish = output[: limit * 4], "length"
        return output, finish

    def _completions(self, body: dict[str, Any]) -> None:
        text, finish = self._generate(str(body["prompt"]), body)
        usage = _usage(body["prompt"], text, 0, False)
        if body.get("stream"):
            pieces = [{"text": text[i : i + CHUNK]} for i in range(0, len(text), CHUNK)]
            return self._sse("text_completion", pieces, finish, usage, body)
        choice = {"index": 0, "text": text, "finish_reason": finish}
        self._json(200, _envelope("text_completion", [choice], usage))

    def _chat(self, body: dict[str, Any]) -> None:
        prompt = render_chat(self.flavour, body, self.path)
        output, finish = self._generate(prompt, body)
        thinking, answer = split_output(prompt, output)
        usage = _usage(prompt, output, len(thinking), self.flavour.counts_reasoning)
        if body.get("stream"):
            return self._sse("chat.completion.chunk", self._deltas(thinking, answer), finish,
                             usage, body)  # fmt: skip
        message: dict[str, Any] = {"role": "assistant", "content": answer}
        message.update(self._reasoning(thinking))
        if not answer and self.flavour.owned_by:  # vLLM, SGLang, DeepSeek: null, not ""
            message["content"] = None
        choice = {"index": 0, "message": message, "finish_reason": finish}
        self._json(200, _envelope("chat.completion", [choice], usage))

    def _reasoning(self, text: str) -> dict[str, Any]:
        if not text:
            return {}
        out: dict[str, Any] = {f: text for f in self.flavour.fields}
        if self.flavour.details:
            out["reasoning_details"] = [
                {"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}
            ]
        return out

    def _deltas(self, thinking: str, answer: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"delta": {"role": "assistant", "content": ""}}]
        for i in range(0, len(thinking), CHUNK):
            delta = self._reasoning(thinking[i : i + CHUNK])
            if self.flavour.null_content:
                delta["content"] = None
            out.append({"delta": delta})
        out += [{"delta": {"content": answer[i : i + CHUNK]}} for i in range(0, len(answer), CHUNK)]
        return out

    def _sse(
        self,
        kind: str,
        pieces: list[dict[str, Any]],
        finish: str,
        usage: dict[str, Any],
        body: dict[str, Any],
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        last: dict[str, Any] = {"delta": {}} if kind.startswith("chat") else {"text": ""}
        for piece in [*pieces, {**last, "finish_reason": finish}]:
            self._chunk(_envelope(kind, [{"index": 0, "finish_reason": None, **piece}]))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._chunk(_envelope(kind, [], usage))
        self._raw(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, payload: dict[str, Any]) -> None:
        self._raw(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _envelope(kind: str, choices: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
    out = {"id": "r-1", "object": kind, "created": int(time.time()), "model": "reasoner"}
    out["choices"] = choices
    if usage is not None:
        out["usage"] = usage
    return out


def _usage(prompt: Any, output: str, thinking_chars: int, counted: bool) -> dict[str, Any]:
    def tokens(text: str) -> int:
        return (len(text) + 3) // 4

    p, c = tokens(json.dumps(prompt)), tokens(output)
    usage: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
    if counted:
        usage["completion_tokens_details"] = {"reasoning_tokens": tokens("x" * thinking_chars)}
    return usage


@contextmanager
def reasoning_server(flavour: Flavour, model: Model, **changes: Any) -> Iterator[ReasoningServer]:
    """Run `flavour` (with dataclass `changes`, e.g. completions=False) on a free port."""
    flavour = replace(flavour, **changes) if changes else flavour
    handler = type("Handler", (_Handler,), {"flavour": flavour, "model": staticmethod(model)})
    with serving(handler) as root:
        handler.served = ReasoningServer(root, flavour)
        yield handler.served


# ---- a scripted two-hop thinker over the raw prompt -----------------------------------------

BEGIN_Q, END_Q = "<|begin_search_query|>", "<|end_search_query|>"
BEGIN_R, END_R = "<|begin_search_result|>", "<|end_search_result|>"


def two_hop_thinker(prompt: str) -> str:
    """Designer of the Glimmer Bridge -> where that person was born, searching in thought.

    Reads the chain after the last assistant header; writes `<think>` itself when the
    template did not open it (Qwen3 style); answers after `</think>`. As the reader
    (Reason-in-Documents) it thinks a line, then gives the first document's text.
    """
    if "**Current search query**" in prompt:
        docs = prompt.split("**Search results**", 1)[1]
        first = re.search(r"\*\*Document 1\*\*: [^\n]*\n([^\n]+)", docs)
        fact = first.group(1) if first else "nothing"
        return f"The first document answers it.\n{UNTHINK}\n\n**Final Information**\n\n{fact}"
    chain = prompt.rsplit("<|im_start|>assistant\n", 1)[-1]
    opener = "" if THINK in chain else THINK + "\n"
    results = re.findall(re.escape(BEGIN_R) + r"\n(.*?)\n" + re.escape(END_R), chain, re.S)
    if not results:
        return f"{opener}First the designer. {BEGIN_Q}Glimmer Bridge designer{END_Q} more"
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return f"Now where {name} was born. {BEGIN_Q}{name} birthplace{END_Q} more"
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    town = place.group(1) if place else "?"
    return f"So it is {town}.\n{UNTHINK}\n\nThe designer was born in \\boxed{{{town}}}."
