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
  trimmed unless `no_stop_trim`. The reasoning split ignores the prompt: all before the
  first `</think>` is reasoning (`sglang_split`).
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

Where stop strings fire (`Flavour.stops`): "all" is vLLM's V1 detokenizer today (the
whole output, thinking included: `v1/engine/detokenizer.py`) and SGLang's
(`schedule_batch.py` checks the output text); "content" is what hosted APIs do and
vLLM PRs #52486/#45846 would do (no stop until `</think>`; issues #52393, #53066), and
what DeepSeek is taken to do (worst case); "none" is a server that ignores them. A
server that let a requested stop string pass counts, per generation, the tokens it sent
after it (`overruns`): streaming, it goes on token by token, as a model does, until it
sees the client hang up (vLLM, SGLang and llama.cpp abort a request whose connection
closed), giving the client a moment per token to do so.

The "model" is a function of the raw prompt the server would feed it (its chat template
rendered here: ChatML whose generation prompt opens `<think>\\n`, as QwQ's and R1's do) and
returns raw output; the server then splits it at `</think>` like a reasoning parser.
Only stdlib: ThreadingHTTPServer in a daemon thread.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal

from tests.servers import chat_templates as templates
from tests.servers._base import JSONHandler, serving

Model = Callable[[str], str]  # raw prompt -> raw output (thinking, `</think>`, answer)
THINK, UNTHINK = "<think>", "</think>"
CHUNK = 5
# After a stop string it let pass, the server waits up to this long per token for the
# client to hang up (a model's pace, slowed so that a loaded machine cannot lose the
# race), for at most PACED tokens; then it sends the rest at once.
PACE_S = 0.25
PACED = 32


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
    template: str = "qwq"  # the model's chat template: "qwq", "r1" or "qwen3"
    stops: Literal["all", "content", "none"] = "all"  # where stop strings fire
    streams: bool = True  # False: answers one JSON body even when asked to stream
    chunk: int = CHUNK  # characters per streamed piece


VLLM_010 = Flavour("vllm-0.10", "vllm", ("reasoning_content",), "vllm", completions=True)
VLLM_011 = Flavour("vllm-0.11", "vllm", ("reasoning", "reasoning_content"), "vllm", True)
VLLM = Flavour("vllm", "vllm", ("reasoning",), "vllm", completions=True)
SGLANG = Flavour("sglang", "sglang", ("reasoning_content",), "sglang", completions=True)
DEEPSEEK = Flavour(
    "deepseek",
    "deepseek",
    ("reasoning_content",),
    "deepseek",
    null_content=True,
    counts_reasoning=True,
    stops="content",
)
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
    """The raw prompt this server builds from a chat request, through the model's chat
    template (`Flavour.template`, tests/servers/chat_templates.py), continuation rules
    included."""
    messages = [dict(m) for m in body.get("messages") or []]
    last = messages[-1] if messages else {}
    trailing = last.get("role") == "assistant"
    family = flavour.template
    kwargs = body.get("chat_template_kwargs") or {}
    thinking = kwargs.get("enable_thinking", True) is not False
    kind = flavour.continuation
    if kind == "refuse" and trailing and thinking:
        raise BadRequest("Assistant response prefill is incompatible with enable_thinking.")
    if kind == "vllm" and body.get("continue_final_message"):
        if body.get("add_generation_prompt", True):
            raise BadRequest(
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
            )
        return _continued(family, messages)
    if kind == "sglang" and trailing and body.get("continue_final_message"):
        # serving_chat.py: the last assistant message is dropped, the rest rendered with
        # the generation prompt, and the message's content appended as it is.
        head = templates.render(family, messages[:-1], add_generation_prompt=True)
        return head + str(last.get("content") or "")
    if kind == "sglang" and trailing:
        messages[-1] = {"role": "user", "content": last.get("content")}
    if last.get("prefix"):
        return _deepseek_prefix(messages, path, family)
    if kind in ("prefill", "refuse") and trailing:
        return _continued(family, messages)
    return templates.render(family, messages, add_generation_prompt=True, enable_thinking=thinking)


def _continued(family: str, messages: list[dict[str, Any]]) -> str:
    try:
        return templates.continue_final(family, messages)
    except templates.NotInRendering as e:
        raise BadRequest(str(e)) from None


def _deepseek_prefix(messages: list[dict[str, Any]], path: str, family: str) -> str:
    if not path.startswith("/beta/"):
        raise BadRequest("prefix completion is only available at the beta endpoint")
    last = messages[-1]
    head = templates.render(family, messages[:-1], add_generation_prompt=True)
    thinking = str(last.get("reasoning_content") or "")
    content = str(last.get("content") or "")
    return head + thinking + (UNTHINK + content if content else "")


def vllm_whole_split(family: str, output: str) -> tuple[str, str]:
    """(reasoning, content) of a non-streamed vLLM reply, from the output alone: the
    deepseek_r1 parser (QwQ, R1) takes all before `</think>` as reasoning, all of it when
    there is none; the qwen3 parser splits only an output holding both tags, else it is
    all content."""
    body = output.lstrip().removeprefix(THINK)
    if family != "qwen3":
        thinking, sep, answer = body.partition(UNTHINK)
        return (thinking, answer) if sep else (body, "")
    if THINK not in output or UNTHINK not in output:
        return "", output
    thinking, _, answer = body.partition(UNTHINK)
    return thinking, answer


def sglang_split(output: str) -> tuple[str, str]:
    """(reasoning, content) as SGLang's reasoning parser returns them, streamed or not.

    It never looks at the prompt (`parser/reasoning_parser.py`): it starts inside the
    reasoning when forced, and `serving_chat.py` forces it for the deepseek-r1 parser
    and, unless `enable_thinking` is false, for qwen3; a leading `<think>` is dropped and
    everything before the first `</think>` is reasoning. Newer releases also look at the
    content of a continued message (`previous_content`); the older rule is the worst
    case: a chain continued after its `</think>` gets its new text called reasoning.
    """
    body = output.removeprefix(THINK)
    thinking, sep, answer = body.partition(UNTHINK)
    return (thinking, answer) if sep else (body, "")


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


def requested_stops(body: dict[str, Any]) -> list[str]:
    stops = body.get("stop") or []
    return [s for s in ([stops] if isinstance(stops, str) else stops) if s]


def cut_at_stop(
    prompt: str, text: str, body: dict[str, Any], keep: bool, where: str = "all"
) -> tuple[str, str, str | None]:
    """The output as the server returns it, its finish reason and the stop string that
    ended it: cut at the first stop string that fires (`where`: "all", "content" = only
    after the thinking ended, "none")."""
    hits = sorted(
        (i, s)
        for s in requested_stops(body)
        for i in _positions(text, s)
        if where == "all" or (where == "content" and not in_thinking(prompt + text[:i]))
    )
    if not hits:
        return text, "stop", None
    i, s = hits[0]
    return text[:i] + (s if keep else ""), "stop", s


def _positions(text: str, stop: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(stop), text)]


def passed_stop(text: str, body: dict[str, Any]) -> int | None:
    """Where the text after the first requested stop string begins, if one is in `text`."""
    found = [(i, s) for s in requested_stops(body) if (i := text.find(s)) >= 0]
    if not found:
        return None
    i, s = min(found)
    return i + len(s)


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
        # Per generation that let a requested stop string pass: the tokens (4 characters
        # each) it sent after it before the client hung up, or in all (a whole reply).
        self.overruns: list[int] = []

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if p.endswith("/chat/completions")]


class _Handler(JSONHandler):
    flavour: Flavour
    model: Model
    served: ReasoningServer
    matched: str | None = None  # the stop string that ended the last generation
    lock = threading.Lock()

    def _error(self, status: int, message: str) -> None:
        if self.flavour.continuation == "sglang":
            # SGLang's ErrorResponse is the body itself (`protocol.py`), not under "error".
            body = {"object": "error", "message": message, "type": "BadRequestError"}
            return self._json(status, body | {"param": None, "code": status})
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
            if self.path in ("/tokenize", "/detokenize") and self.flavour.continuation == "vllm":
                return self._tokens(body)
            if self.path.endswith("/chat/completions"):
                return self._chat(body)
            if self.path == "/v1/completions" and self.flavour.completions:
                return self._completions(body)
        except BadRequest as e:
            return self._error(400, str(e))
        self._error(404, f"no route {self.path}")

    def _tokens(self, body: dict[str, Any]) -> None:
        """vLLM's /tokenize (chat messages through the template) and /detokenize; a
        token here is one character's code point."""
        if self.path == "/detokenize":
            text = "".join(map(chr, body.get("tokens") or []))
            return self._json(200, {"prompt": text})
        messages = [dict(m) for m in body.get("messages") or []]
        kwargs = body.get("chat_template_kwargs") or {}
        if body.get("continue_final_message"):
            if body.get("add_generation_prompt"):
                raise BadRequest(
                    "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
                )
            text = _continued(self.flavour.template, messages)
        else:
            generation = bool(body.get("add_generation_prompt", True))
            thinking = kwargs.get("enable_thinking", True) is not False
            text = templates.render(
                self.flavour.template,
                messages,
                add_generation_prompt=generation,
                enable_thinking=thinking,
            )
        tokens = [ord(c) for c in text]
        self._json(200, {"tokens": tokens, "count": len(tokens), "max_model_len": 32768})

    def _generate(self, prompt: str, body: dict[str, Any]) -> tuple[str, str]:
        with self.lock:
            self.served.prompts.append(prompt)
        keep, where = _keeps_stop(self.flavour, body), self.flavour.stops
        output, finish, self.matched = cut_at_stop(prompt, self.model(prompt), body, keep, where)
        limit = body.get("max_tokens")
        if isinstance(limit, int) and len(output) > limit * 4:
            output, finish, self.matched = output[: limit * 4], "length", None
        return output, finish

    def _whole_overrun(self, output: str, body: dict[str, Any]) -> None:
        """A whole reply that let a stop string pass: all it generated after it."""
        after = passed_stop(output, body)
        if after is not None and after < len(output):
            with self.lock:
                self.served.overruns.append(_tokens(output[after:]))

    def _completions(self, body: dict[str, Any]) -> None:
        text, finish = self._generate(str(body["prompt"]), body)
        usage = _usage(body["prompt"], text, 0, False)
        if body.get("stream") and self.flavour.streams:
            size = self.flavour.chunk
            pieces = [{"text": text[i : i + size]} for i in range(0, len(text), size)]
            return self._sse("text_completion", pieces, finish, usage, body)
        self._whole_overrun(text, body)
        choice = {"index": 0, "text": text, "finish_reason": finish}
        self._json(200, _envelope("text_completion", [choice], usage))

    def _chat(self, body: dict[str, Any]) -> None:
        prompt = render_chat(self.flavour, body, self.path)
        output, finish = self._generate(prompt, body)
        streamed = bool(body.get("stream")) and self.flavour.streams
        thinking, answer = split_output(prompt, output)
        if not streamed and self.flavour.continuation == "vllm":
            thinking, answer = vllm_whole_split(self.flavour.template, output)
        if self.flavour.continuation == "sglang":
            thinking, answer = sglang_split(output)
        usage = _usage(prompt, output, len(thinking), self.flavour.counts_reasoning)
        if streamed:
            deltas = self._deltas(thinking, answer)
            return self._sse("chat.completion.chunk", deltas, finish, usage, body)
        self._whole_overrun(thinking + answer, body)
        message: dict[str, Any] = {"role": "assistant", "content": answer}
        message.update(self._reasoning(thinking))
        if not answer and self.flavour.owned_by in ("vllm", "deepseek"):
            message["content"] = None  # SGLang sends "" (serving_chat.py), these null
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if self.flavour.continuation == "sglang":
            choice["matched_stop"] = self.matched  # the stop string, or null
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
        size = self.flavour.chunk
        for i in range(0, len(thinking), size):
            delta = self._reasoning(thinking[i : i + size])
            if self.flavour.null_content:
                delta["content"] = None
            out.append({"delta": delta})
        out += [{"delta": {"content": answer[i : i + size]}} for i in range(0, len(answer), size)]
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
        full = "".join(map(_piece_text, pieces))
        passing = (after := passed_stop(full, body)) is not None and after < len(full)
        sent, overrun = "", None  # overrun: characters sent after a stop string let pass
        try:
            for piece in [*pieces, {**last, "finish_reason": finish}]:
                if overrun is not None and overrun < PACED * 4 and self._client_gone(PACE_S):
                    return  # the client hung up: the generation is aborted
                self._chunk(_envelope(kind, [{"index": 0, "finish_reason": None, **piece}]))
                text = _piece_text(piece)
                if overrun is not None:
                    overrun += len(text)
                    continue
                sent += text
                after = passed_stop(sent, body) if passing else None
                overrun = None if after is None else len(sent) - after
        finally:
            if overrun is not None:
                with self.lock:
                    self.served.overruns.append(_tokens("x" * overrun))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._chunk(_envelope(kind, [], usage))
        self._raw(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _client_gone(self, wait: float) -> bool:
        """Whether the client closed the connection (waiting up to `wait` s to see)."""
        readable, _, _ = select.select([self.connection], [], [], wait)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

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


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _piece_text(piece: dict[str, Any]) -> str:
    """The text a stream piece carries: raw text, or a delta's reasoning and content."""
    if "text" in piece:
        return str(piece["text"] or "")
    delta = piece.get("delta") or {}
    thought = next((delta[f] for f in ("reasoning_content", "reasoning") if delta.get(f)), "")
    return str(thought) + str(delta.get("content") or "")


def _usage(prompt: Any, output: str, thinking_chars: int, counted: bool) -> dict[str, Any]:
    tokens = _tokens
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

    Reads the chain after the last assistant header (any family's); writes `<think>`
    itself when the template did not open it (Qwen3 style); answers after `</think>`.
    Given search results outside one open think block (a template that closed the
    thinking before a continued chain, or a chain appended with no `<think>`), it does
    what a model then may: it goes on outside its thinking and answers at once, wrongly
    (the worst case). As the reader (Reason-in-Documents) it thinks a line, then gives
    the first document's text.
    """
    if "**Current search query**" in prompt:
        docs = prompt.split("**Search results**", 1)[1]
        first = re.search(r"\*\*Document 1\*\*: [^\n]*\n([^\n]+)", docs)
        fact = first.group(1) if first else "nothing"
        return f"The first document answers it.\n{UNTHINK}\n\n**Final Information**\n\n{fact}"
    chain = templates.assistant_turn(prompt)
    opener = "" if THINK in chain else THINK + "\n"
    results = re.findall(re.escape(BEGIN_R) + r"\n(.*?)\n" + re.escape(END_R), chain, re.S)
    if results and (chain.count(THINK) != 1 or not in_thinking(chain)):
        return "\n\nThe designer was born in \\boxed{Nowhere}."
    if not results:
        return f"{opener}First the designer. {BEGIN_Q}Glimmer Bridge designer{END_Q} more"
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return f"Now where {name} was born. {BEGIN_Q}{name} birthplace{END_Q} more"
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    town = place.group(1) if place else "?"
    return f"So it is {town}.\n{UNTHINK}\n\nThe designer was born in \\boxed{{{town}}}."


def answer_searcher(prompt: str) -> str:
    """`two_hop_thinker`'s two searches, written in its answer after a closed think block
    (models do search after `</think>`). The reader is `two_hop_thinker`'s."""
    if "**Current search query**" in prompt:
        return two_hop_thinker(prompt)
    chain = templates.assistant_turn(prompt)
    results = re.findall(re.escape(BEGIN_R) + r"\n(.*?)\n" + re.escape(END_R), chain, re.S)
    if not results:
        opener = "" if THINK in chain else THINK + "\n"
        query = f"{BEGIN_Q}Glimmer Bridge designer{END_Q}"
        return f"{opener}I will look both up.\n{UNTHINK}\n\nFirst the designer. {query} more"
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return f"Now where {name} was born. {BEGIN_Q}{name} birthplace{END_Q} more"
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    return f"The designer was born in \\boxed{{{place.group(1) if place else '?'}}}."


def thinks_on(model: Model, tokens: int = 40_000) -> Model:
    """`model`, going on past its end-of-query marker as a model does when nothing stops
    it: about `tokens` more tokens of thinking (by default past any call's `max_tokens`,
    so the server ends on "length"), then a wrong answer. A client that does not end the
    call at the marker loses the search."""
    filler = " No result came, so I will guess."  # 33 characters: about 8 tokens

    def model_on(prompt: str) -> str:
        out = model(prompt)
        head, marker, _ = out.partition(END_Q)
        if not marker:
            return out
        ramble = filler * (tokens * 4 // len(filler))
        return f"{head}{END_Q}{ramble}\n{UNTHINK}\n\nIt was \\boxed{{Nowhere}}."

    return model_on
