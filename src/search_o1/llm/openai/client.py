"""The `openai` backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, ...).

Default mode is `/v1/completions` with a raw prompt: the instruction messages are rendered
once per chain (cached) and the assistant's text so far is appended byte-for-byte, so each
request extends the previous one and the server's prefix cache reuses it. `api_mode="chat"`
serves servers without raw completions: thinking returned apart (`reasoning_content`,
`reasoning`) is read back into the chain, and the chain is continued the way the server
supports (vLLM/SGLang `continue_final_message`, DeepSeek prefix, prefill, or raw
completions after all); the rules are pure functions in `llm.reasoning`.

The client composes its parts, each owning its state: the HTTP side (`connection`: pool,
retries, deadlines, typed errors), what the server is (`discovery`), which endpoint and
continuation (`endpoints`, after the rules in `continuation`), which fields it refused
(`fields`), reading a stream (`stream`), tools turns (`tools`, over the chat wire in
`tool_wire` or the Responses API in `responses`); bodies and replies are pure functions
in `wire`. This module owns the text requests. One instance talks to one server;
`PoolLLM` routes over several.

Every request is streamed (unless `stream=False`), whether or not anyone watches the text:
that is what lets a stalled server be told from a slow one. A stream cut off midway is
continued from the text received when the prompt is raw (completions mode: the received
text is appended byte for byte, exactly as the engine continues a chain); in chat mode it
is resent from the start, unless its text was already shown live (`on_text`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from search_o1._http import RetryPolicy
from search_o1.errors import BackendError, ConfigError
from search_o1.llm.base import CompletionRequest, normalise_stop
from search_o1.llm.openai import errors, ollama, responses, wire
from search_o1.llm.openai.connection import Connection
from search_o1.llm.openai.continuation import Continuation, closes_thinking
from search_o1.llm.openai.discovery import Discovery, one_url, root
from search_o1.llm.openai.endpoints import Route
from search_o1.llm.openai.fields import FieldLearner
from search_o1.llm.openai.stream import (
    Kept,
    StopWatch,
    StreamCut,
    is_streamed,
    malformed,
    read_stream,
    read_whole,
)
from search_o1.llm.openai.tools import CHAT, TurnParts, converse
from search_o1.llm.reasoning import ChainJoiner, join_reply, thinking_open
from search_o1.llm.templates import (
    SERVER,
    ServerTemplateUnavailable,
    local_template,
    render_continuation_on_vllm,
)
from search_o1.llm.templates import render_on_server as _render_on_server
from search_o1.llm.tools import ToolRequest
from search_o1.markers import THINK_OPEN
from search_o1.text_safety import scrub_count
from search_o1.tokens import estimate_tokens
from search_o1.tool_chat import ToolReply
from search_o1.types import Completion, Message, Prompt, TextSink

log = logging.getLogger(__name__)
# Servers whose chat-template fallback was announced (in this process).
_CHATML_FALLBACK_SAID: set[str] = set()
BACKEND = "openai"
_RENDER_CACHE_SIZE = 4096
# A whole model request, all of its tokens: long generations (32k tokens at 10 tokens/s)
# fit; a server dripping a token a minute does not hold a run for ever.
DEADLINE_S = 3600.0
# Silence inside a started stream; healthy servers send a token every few tens of ms,
# and even a preempted vLLM sequence resumes well within this.
STALL_S = 120.0


class OpenAILLM:
    """An OpenAI-compatible HTTP model. One `httpx.AsyncClient` per instance; `aclose()` it.

    `chat_template`: None tries the server's own template and falls back to `chatml` with a
    warning; "server" insists on the server's; a built-in name or .jinja path renders here.
    One instance talks to one server; several equivalent servers are a `PoolLLM` of these
    (pipeline.build_llm), which routes each chain with prefix affinity and fails over.
    `max_connections`: requests this client may have open at once; keep it at least the
    scheduler's model-request limit, or requests beyond it queue inside httpx.
    `continuation`: how a chat request continues a chain ("continue_final", "prefix",
    "prefill"; "raw" means completions mode); None picks it from what the server is.
    `tools_api`: the wire of tools-mode turns ("chat", "responses", or "auto": OpenAI's
    Responses API on api.openai.com only).
    `timeout_s` bounds each read, `deadline_s` a whole request, `stall_timeout_s` the
    silence inside a started stream. `retry` (default: `retries` with the package's
    back-off) says what is tried again; `transport` replaces the connection pool (tests
    pass `httpx.MockTransport`).
    """

    name = BACKEND

    def __init__(
        self,
        base_url: str | Sequence[str],
        *,
        model: str | None = None,
        api_key: str | None = None,
        api_mode: Literal["completions", "chat", "tools"] = "completions",
        tools_api: Literal["auto", "chat", "responses"] = "auto",
        chat_template: str | None = None,
        context_length: int | None = None,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        deadline_s: float | None = DEADLINE_S,
        stall_timeout_s: float | None = STALL_S,
        retries: int = 4,
        retry: RetryPolicy | None = None,
        max_connections: int = 256,
        continuation: Continuation | None = None,
        stream: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = one_url(base_url)
        self.tools_api = tools_api  # the wire of tools turns (responses.chosen)
        self.stream = stream
        self._template_spec = chat_template
        self._local = None if chat_template in (None, SERVER) else local_template(chat_template)
        self._renders: OrderedDict[tuple[Message, ...], str] = OrderedDict()
        self._connection = Connection(
            self.base_url,
            api_key=api_key,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            max_connections=max_connections,
            retry=retry or RetryPolicy(retries=max(0, retries)),
            deadline_s=deadline_s,
            stall_timeout_s=stall_timeout_s,
            transport=transport,
        )
        # What the server is, asked on first use.
        self._discovery = Discovery(
            self._connection, model=model, configured_context=context_length
        )
        self._fields = FieldLearner()  # what the server refused so far, from its 400s
        self._route = Route(self.base_url, api_mode, continuation)
        self._opens_think: bool | None = None  # see _thinking_continues

    @property
    def model(self) -> str | None:
        """The model id: the configured one, or the server's first once discovered."""
        return self._discovery.model

    @property
    def api_mode(self) -> Literal["completions", "chat"]:
        """The endpoint text calls go to now (it moves when the server refuses one)."""
        return self._route.mode

    @property
    def retry(self) -> RetryPolicy:
        return self._connection.retry

    @property
    def base_urls(self) -> list[str]:
        """`[base_url]`: the server list the readiness probe (serve/health.py) checks."""
        return [self.base_url]

    # ---- the LLM protocol ----------------------------------------------------------------

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        # Falls back between chat and raw completions as the server allows (endpoints).
        return await self._route.complete(request, on_text, self._complete)

    async def _complete(self, request: CompletionRequest, on_text: TextSink | None) -> Completion:
        started = time.monotonic()
        request, replaced = _scrubbed(request)
        prompt = request.prompt
        info = await self._discovery.info()
        opens_think = await self._thinking_continues(info, request)
        plan = self._route.plan(info, request, opens_think)
        url, sent = await self._route.target(request, plan, self.render)
        native = info.kind == "ollama"
        if native:
            url = ollama.endpoint(root(self.base_url), url)
        kept = Kept() if isinstance(sent, str) else None
        stream = self.stream or on_text is not None

        def body() -> dict[str, Any]:
            asked, text = request, sent
            if kept is not None and isinstance(sent, str):
                asked, text = kept.resume(request, sent)
            model, context = self.model, self._discovery.configured_context
            if native:
                out = ollama.body(asked, model=model, prompt=text, stream=stream, context=context)
                return self._fields.apply(out, kind=info.kind)
            extras = self._fields.extras
            out = wire.build_body(
                asked, model=model, prompt=text, stream=stream, kind=info.kind, extras=extras
            )
            out = out | plan.fields if plan is not None and extras else out
            return self._fields.apply(out, kind=info.kind)

        # A raw prompt may end inside the thinking too (a template that opens it): a
        # server that still splits the thinking off must not open it a second time.
        thinking = plan.thinking if plan is not None else thinking_open(str(sent))
        reading = _Reading(thinking, request.stop, native)
        reply = await self._complete_request(url, body, on_text, reading, kept)
        _require_visible_thinking(url, reply, request)
        content = reply.text
        if plan is not None and not stream and info.kind != "vllm":
            # llama.cpp's non-streamed chat reply repeats the prefilled assistant text.
            content = content.removeprefix(prompt.continuation)
        raw = join_reply(thinking, reply.reasoning, content)
        how = plan.how if plan is not None else "raw"
        completion = _completion(reply, raw, sent, request.stop, time.monotonic() - started, how)
        if replaced:
            completion = dataclasses.replace(completion, replaced=completion.replaced + replaced)
        return completion

    async def _thinking_continues(self, info: wire.ServerInfo, request: CompletionRequest) -> bool:
        """Whether a chain continued over chat stays inside its thinking here; checked
        once per client, at the first continuation. Returns whether the model's
        generation prompt opens `<think>` (SGLang appends the chain after it).

        Qwen3-family templates close the thinking: vLLM renders `<think>\\n\\n</think>
        \\n\\n` before a continued message (its /tokenize shows it), and SGLang appends
        the chain after a generation prompt with no `<think>`. vLLM then continues raw;
        SGLang gets the chain with its own `<think>` (from the configured template's
        generation prompt; without one, from the model's name, see `qwen3_hybrid`).
        """
        prompt = request.prompt
        if self._route.mode != "chat" or not prompt.continuation:
            return True
        if self._opens_think is None:
            self._opens_think = await self._template_opens_think(info, prompt.messages)
            if info.kind == "vllm" and await self._vllm_closes_thinking(prompt.messages):
                self._route.continue_raw(
                    f"{self.base_url}: the model's chat template (Qwen3-style) closes the "
                    "thinking before a continued message, so a chain continued over chat "
                    "would go on outside its thinking"
                )
        return self._opens_think

    async def _template_opens_think(
        self, info: wire.ServerInfo, messages: tuple[Message, ...]
    ) -> bool:
        if self._template_spec not in (None, SERVER):
            return (await self.render(messages)).rstrip().endswith(THINK_OPEN)
        # SGLang cannot show how it renders a continued chain (its /tokenize takes text
        # only), so its template is unknown here: the model's name is all there is.
        if info.kind == "sglang" and qwen3_hybrid(self.model or ""):
            log.warning(
                "%s: SGLang does not show its chat template; %s looks like a Qwen3 model "
                "whose generation prompt opens no <think>, so a continued chain brings its "
                "own (set --chat-template if it is another)",
                self.base_url,
                self.model,
            )
            return False
        return True  # the QwQ/R1 rule (their prompt opens <think>)

    async def _vllm_closes_thinking(self, messages: tuple[Message, ...]) -> bool:
        question = "search-o1 checks how a continued chain is rendered"
        chain = "<think>\nso far"
        system = tuple(m for m in messages if m.role == "system")
        probe = (*system, Message("user", question), Message("assistant", chain))
        conn, server = self._connection, root(self.base_url)
        try:
            async with conn.deadline(server):
                rendered = await render_continuation_on_vllm(
                    conn.client, server, probe, model=self.model
                )
        except httpx.TransportError:
            return False  # best effort: the continuation itself will tell
        return rendered is not None and closes_thinking(rendered, question, chain)

    async def converse(
        self,
        request: ToolRequest,
        *,
        on_text: TextSink | None = None,
        on_reasoning: TextSink | None = None,
    ) -> ToolReply:
        """One turn with function tools (`--api-mode tools`): chat completions or the
        Responses API, as `tools_api` says."""
        kind = (await self._discovery.info()).kind
        turn = responses.RESPONSES if responses.chosen(self.tools_api, kind) else CHAT
        parts = TurnParts(self._connection, self._discovery, self._fields)
        return await converse(parts, request, turn, on_text=on_text, on_reasoning=on_reasoning)

    async def context_length(self) -> int | None:
        """The server's context window when it reports one, else the configured one."""
        return await self._discovery.context_length()

    async def aclose(self) -> None:
        await self._connection.aclose()

    # ---- prompt rendering ----------------------------------------------------------------

    async def render(self, messages: tuple[Message, ...]) -> str:
        """The instruction prompt for `messages`, rendered once and then reused verbatim."""
        cached = self._renders.get(messages)
        if cached is None:
            cached = await self._render_uncached(messages)
            self._renders[messages] = cached
            if len(self._renders) > _RENDER_CACHE_SIZE:
                self._renders.popitem(last=False)
        return cached

    async def _render_uncached(self, messages: tuple[Message, ...]) -> str:
        if self._local is not None:
            return self._local(messages)
        await self._discovery.info()  # vLLM's /tokenize wants the model name
        server = root(self.base_url)
        try:
            return await self.retry.call(
                lambda: self._render_on(server, messages), what=f"{server} (chat template)"
            )
        except ServerTemplateUnavailable:
            if self._template_spec == SERVER:
                raise
            # No template given and the server cannot render one: ChatML is the most
            # common format among open reasoning models; say so once per server (items
            # rendering at once all land here, and each reproduce cell has its client).
            if server not in _CHATML_FALLBACK_SAID:
                _CHATML_FALLBACK_SAID.add(server)
                log.warning("server at %s cannot render chat templates; using chatml", server)
            self._local = local_template("chatml")
            return self._local(messages)

    async def _render_on(self, root: str, messages: tuple[Message, ...]) -> str:
        conn = self._connection
        try:
            async with conn.deadline(root):
                return await _render_on_server(conn.client, root, messages, model=self.model)
        except httpx.TransportError as e:
            raise errors.transport_error(root, e) from None

    # ---- requests, retries, errors -------------------------------------------------------

    async def _complete_request(
        self,
        url: str,
        body: Callable[[], dict[str, Any]],
        on_text: TextSink | None,
        reading: _Reading,
        kept: Kept | None = None,
    ) -> wire.Reply:
        """POST a completion with retries; `kept` (raw prompts) collects the text of
        streams cut off midway, and the next attempt continues after it."""
        shown: list[str] = []

        def sink(piece: str) -> None:
            if on_text is not None:
                shown.append(piece)
                on_text(piece)

        async def attempt() -> wire.Reply:
            try:
                reply = await self._post_once(url, body(), sink, reading)
            except StreamCut as cut:
                if kept is not None:
                    kept.add(cut)
                    shown.clear()  # kept text stays true: the next attempt extends it
                raise errors.unless_shown(cut, shown) from None
            except BackendError as e:
                if not shown and self._fields.learn(url, e):
                    return await attempt()
                raise errors.unless_shown(e, shown) from None
            return reply if kept is None else kept.join(reply)

        return await self.retry.call(attempt, what=url)

    async def _post_once(
        self, url: str, body: dict[str, Any], on_text: TextSink, reading: _Reading
    ) -> wire.Reply:
        """One request. A stream is read until its end or a stop string (`read_stream`);
        leaving this block unread closes the connection, which tells the server to stop
        generating (vLLM, SGLang and llama.cpp abort a request whose client went away)."""
        thinking, stops = reading.thinking, reading.stops
        conn = self._connection
        async with conn.deadline(url), conn.open(url, body) as response:
            if response.status_code != 200:
                await response.aread()
                raise conn.http_error(url, response, self.model)
            if reading.streamed(body, response):
                stall = conn.stall_timeout_s
                joiner = ChainJoiner(thinking)
                state = ollama.StreamState(joiner) if reading.native else None
                decoder = ollama.NdjsonDecoder() if reading.native else None
                reply = await read_stream(
                    url,
                    response,
                    on_text,
                    stall_s=stall,
                    thinking=thinking,
                    state=state,
                    stops=stops,
                    decoder=decoder,
                )
                return _unless_cut(url, reply)
            parse = ollama.parse_reply if reading.native else wire.parse_reply
            reply = await read_whole(url, response, parse)
            if body.get("stream"):  # a server that ignored `stream`: show it at once
                watch = StopWatch(stops, on_text)
                watch.feed(join_reply(thinking, reply.reasoning, reply.text))
                watch.flush()
            return _unless_cut(url, reply)


@dataclass(frozen=True)
class _Reading:
    """How one text request's reply is read: whether the chain is inside its thinking,
    the stop strings that end it, and whether it is Ollama's native wire (NDJSON)."""

    thinking: bool
    stops: Sequence[str]
    native: bool = False

    def streamed(self, body: dict[str, Any], response: httpx.Response) -> bool:
        if self.native:
            ctype = response.headers.get("content-type", "")
            return bool(body.get("stream")) and "ndjson" in ctype
        return is_streamed(body, response)


def qwen3_hybrid(model: str) -> bool:
    """Whether `model` names a Qwen3 model whose chat template opens no `<think>` in its
    generation prompt (the hybrid ones: the model writes it). The -Thinking releases'
    templates open it; -Instruct ones do not think.

    >>> [qwen3_hybrid(m) for m in ("Qwen/Qwen3-8B", "Qwen3-30B-A3B-Thinking-2507", "QwQ-32B")]
    [True, False, False]
    """
    name = model.rsplit("/", 1)[-1].lower()
    return "qwen3" in name and "thinking" not in name and "instruct" not in name


def _unless_cut(url: str, reply: wire.Reply) -> wire.Reply:
    """`reply`, unless the server says it ended the generation itself (`finish_reason`
    "abort", ...): then it is a cut stream, whose text a raw prompt continues from and
    a chat request asks for again. A stop string the client saw first ends it anyway."""
    reason = reply.finish_reason
    if reply.client_stop is not None:
        return reply
    if reason == wire.FILTERED:
        raise malformed(url, wire.Filtered())
    if reason not in wire.CUT_BY_SERVER:
        return reply
    why = f"the server ended the generation early (finish_reason {reason!r})"
    done = reply.completion_tokens
    raise StreamCut(url, why, reply, done if done is not None else estimate_tokens(reply.text))


def _require_visible_thinking(url: str, reply: wire.Reply, request: CompletionRequest) -> None:
    """A model that thinks where we cannot see it can never be seen to search there.

    Hosted reasoning models (OpenAI o-series, GPT-5, ...) count reasoning tokens but
    return no reasoning text. With stop strings (a marker method), answering anyway would
    look like a model that never searched; say why instead.
    """
    if request.stop and reply.reasoning_tokens and not reply.reasoning:
        raise ConfigError(
            f"{url}: the model reasons ({reply.reasoning_tokens} reasoning tokens) but the "
            "server returns none of it, so a search query written while reasoning can "
            "never be seen; use --api-mode tools"
        )


def _completion(
    reply: wire.Reply,
    raw: str,
    sent: str | list[dict[str, Any]],
    stop: Sequence[str],
    latency_s: float,
    continuation: str | None = None,
) -> Completion:
    finish: Literal["stop", "length"] = "length" if reply.finish_reason == "length" else "stop"
    text, hit = normalise_stop(raw, finish, stop, server_stop=reply.server_stop)
    by_client = False
    if hit is not None and raw.startswith(hit, len(text)):
        # The model wrote the stop string: the call ends there, whoever stopped. A server
        # that ignored it, or applied it to the answer only, went on past it (to
        # max_tokens, maybe); that text is dropped.
        by_client = reply.client_stop is not None or len(raw) > len(text) + len(hit)
        by_client = by_client or finish == "length"
        finish = "stop"
    text, replaced = scrub_count(text)
    prompt_tokens = reply.prompt_tokens
    if not prompt_tokens:  # only then: serialising a long chat prompt is not free
        prompt_tokens = estimate_tokens(sent if isinstance(sent, str) else json.dumps(sent))
    completion_tokens = estimate_tokens(raw)
    if reply.completion_tokens is not None:
        completion_tokens = reply.completion_tokens
    if by_client and hit is not None and raw:
        # The text dropped after the stop string is not in the chain: counting it would
        # spend the question's token budget and overstate the chain's length. The
        # server's count, scaled to the text kept.
        kept = len(text) + len(hit)
        completion_tokens = max(1, round(completion_tokens * kept / len(raw)))
    return Completion(
        text=text,
        finish=finish,
        stop=hit if finish == "stop" else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        latency_s=latency_s,
        continuation=continuation,
        client_stop=by_client,
        replaced=replaced,
    )


def _scrubbed(request: CompletionRequest) -> tuple[CompletionRequest, int]:
    """`request` with lone surrogates in its prompt made U+FFFD, and how many there were
    (a request body holding one cannot be encoded as UTF-8)."""
    prompt = request.prompt
    continuation, count = scrub_count(prompt.continuation)
    messages = []
    for message in prompt.messages:
        content, n = scrub_count(message.content)
        count += n
        messages.append(dataclasses.replace(message, content=content) if n else message)
    if not count:
        return request, 0
    return request.with_prompt(Prompt(tuple(messages), continuation)), count
