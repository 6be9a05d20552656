"""The `openai` backend: any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, ...).

Default mode is `/v1/completions` with a raw prompt: the instruction messages are rendered
once per chain (cached) and the assistant's text so far is appended byte-for-byte, so each
request extends the previous one and the server's prefix cache reuses it. `api_mode="chat"`
serves servers without raw completions: the text so far goes in a final assistant message
that the server continues (vLLM `continue_final_message`, llama.cpp prefill).

Wire details (bodies, replies, SSE, error texts) live in `_openai_wire`; this module owns
the connection: discovery, retries, timeouts, connection pooling and the mapping to typed
errors. One instance talks to one server; `PoolLLM` routes over several.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Literal, TypeVar, cast

import httpx

from search_o1._http import retry_after_s
from search_o1.config import Settings
from search_o1.errors import BackendError, ConfigError, ContextOverflowError
from search_o1.llm import _openai_wire as wire
from search_o1.llm import _reasoning as rsn
from search_o1.llm._transport import ShardedTransport
from search_o1.llm.base import CompletionRequest, normalise_stop
from search_o1.llm.templates import SERVER, ServerTemplateUnavailable, local_template
from search_o1.llm.templates import render_on_server as _render_on_server
from search_o1.tokens import estimate_tokens
from search_o1.types import Completion, Message, TextSink

log = logging.getLogger(__name__)
BACKEND = "openai"
_RENDER_CACHE_SIZE = 4096
# How long to wait for the end of a streamed body after its `[DONE]` (see _drain).
_DRAIN_S = 0.25
T = TypeVar("T")


def _root(base_url: str) -> str:
    """The server root for non-/v1 endpoints (/apply-template, /tokenize, /props)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _host_kind(base_url: str) -> wire.ServerKind:
    # Only for hosted APIs, whose rules (extra fields, continuation) follow the host;
    # self-hosted servers say what they are in /v1/models.
    return cast(wire.ServerKind, rsn.host_kind(base_url))


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
    """

    name = BACKEND

    def __init__(
        self,
        base_url: str | Sequence[str],
        *,
        model: str | None = None,
        api_key: str | None = None,
        api_mode: Literal["completions", "chat"] = "completions",
        chat_template: str | None = None,
        context_length: int | None = None,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        max_connections: int = 256,
        continuation: rsn.Continuation | None = None,
    ) -> None:
        # A one-element list is accepted as before; several servers need a PoolLLM.
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if len(urls) != 1:
            raise ValueError(
                f"OpenAILLM talks to one server, got {len(urls)} base URLs; "
                "for several use search_o1.llm.pool.PoolLLM (pipeline.build_llm does)"
            )
        self.base_url = urls[0].rstrip("/")
        self.model = model
        self.api_mode: Literal["completions", "chat"] = (
            "completions" if continuation == "raw" else api_mode
        )
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._configured_context = context_length
        self._template_spec = chat_template
        self._local = None if chat_template in (None, SERVER) else local_template(chat_template)
        self._renders: OrderedDict[tuple[Message, ...], str] = OrderedDict()
        self._info: wire.ServerInfo | None = None
        self._context: int | None = None
        self._context_known = False
        self._send_extras = True
        self._chat_forced = False  # chat because the server has no /completions
        self._continuation = continuation  # None: chosen by what the server is
        self._lock = asyncio.Lock()
        self._secret = api_key  # only for the header and for redacting error texts
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        # httpx's default cap (100 connections) is below the scheduler's 256 model requests
        # in flight; requests past it queued in httpcore, whose pool then matched every
        # queued request against every connection on each request and response (half the
        # orchestrator's CPU at 200 questions on one server).
        size = max(1, max_connections)
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=timeout,
            transport=ShardedTransport(size),
            # Only for proxies taken from the environment, which get their own transports.
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
        )

    @property
    def base_urls(self) -> list[str]:
        """`[base_url]`: the server list the readiness probe (serve/health.py) checks."""
        return [self.base_url]

    @classmethod
    def from_settings(
        cls, settings: Settings, *, role: Literal["main", "reader"] = "main"
    ) -> OpenAILLM:
        """Build from settings; the reader role uses reader_base_url/reader_model when set.

        One server only: pipeline.build_llm turns several base URLs into a PoolLLM of these.
        """
        urls = list(settings.base_url)
        model = settings.model
        if role == "reader":
            urls = [settings.reader_base_url] if settings.reader_base_url else urls
            model = settings.reader_model or model
        if not urls:
            raise ConfigError("the openai backend needs --base-url (e.g. http://host:8000/v1)")
        if len(urls) > 1:
            raise ConfigError(
                "OpenAILLM.from_settings takes one --base-url; "
                "search_o1.pipeline.build_llm routes over several"
            )
        return cls(
            urls[0],
            model=model,
            api_key=settings.api_key,
            api_mode=settings.api_mode,
            chat_template=settings.chat_template,
            context_length=settings.context_length,
            timeout_s=settings.timeout,
            connect_timeout_s=settings.connect_timeout,
            retries=settings.retries,
            max_connections=settings.max_llm_inflight,
        )

    # ---- the LLM protocol ----------------------------------------------------------------

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        try:
            return await self._complete(request, on_text)
        except _NoEndpoint:
            if self.api_mode != "completions":
                raise
            # Chat-only servers (many hosted APIs and thin wrappers) have no raw
            # completions: continue the chain as a final assistant message instead.
            log.warning("%s has no /completions; using /chat/completions", self.base_url)
            self.api_mode = "chat"
            self._chat_forced = True
            return await self._complete(request, on_text)
        except BackendError as e:
            if not self._continuation_refused(request, e):
                raise
            return await self._complete_raw_instead(request, on_text, e)

    def _continuation_refused(self, request: CompletionRequest, error: BackendError) -> bool:
        return (
            self.api_mode == "chat"
            and bool(request.prompt.continuation)
            and rsn.rejects_continuation(error.status or 0, str(error))
        )

    async def _complete_raw_instead(
        self, request: CompletionRequest, on_text: TextSink | None, error: BackendError
    ) -> Completion:
        """The server will not continue a chat message: raw completions, if it has them."""
        cannot = f"{self.base_url} cannot continue a chain after a search over chat ({error})"
        if self._chat_forced:
            raise BackendError(BACKEND, f"{cannot}, and has no raw completions: use a "
                               "server that can, or --api-mode tools")  # fmt: skip
        log.warning("%s; continuing with raw /completions", cannot)
        self.api_mode = "completions"
        try:
            return await self._complete(request, on_text)
        except _NoEndpoint:
            self.api_mode, self._chat_forced = "chat", True
            raise BackendError(BACKEND, f"{cannot}, and has no raw completions: use a "
                               "server that can, or --api-mode tools") from None  # fmt: skip

    async def _complete(self, request: CompletionRequest, on_text: TextSink | None) -> Completion:
        started = time.monotonic()
        prompt = request.prompt
        info = await self._discover()
        sent: str | list[dict[str, Any]]
        plan: rsn.ChatPlan | None = None
        if self.api_mode == "chat":
            plan = self._chat_plan(info, request)
            url, sent = plan.url, plan.messages
        else:
            url = self.base_url + "/completions"
            sent = await self.render(prompt.messages) + prompt.continuation

        def body() -> dict[str, Any]:
            out = wire.build_body(
                request,
                model=self.model,
                prompt=sent,
                stream=on_text is not None,
                kind=info.kind,
                extras=self._send_extras,
            )
            return out | plan.fields if plan is not None and self._send_extras else out

        thinking = plan.thinking if plan is not None else False
        reply = await self._complete_request(url, body, on_text, thinking)
        _require_visible_thinking(url, reply, request)
        content = reply.text
        if plan is not None and on_text is None and info.kind != "vllm":
            # llama.cpp's non-streamed chat reply repeats the prefilled assistant text.
            content = content.removeprefix(prompt.continuation)
        raw = rsn.join_reply(thinking, reply.reasoning, content)
        how = plan.how if plan is not None else "raw"
        return _completion(reply, raw, sent, request.stop, time.monotonic() - started, how)

    def _chat_plan(self, info: wire.ServerInfo, request: CompletionRequest) -> rsn.ChatPlan:
        """How this server continues a chain over chat, from what it is (see _reasoning)."""
        prompt = request.prompt
        how = self._continuation or rsn.CHAT_CONTINUATION.get(info.kind, "continue_final")
        if how is None and prompt.continuation:
            raise ConfigError(
                f"{self.base_url} ({info.kind}) cannot continue a partial answer, so a chain "
                "cannot resume after a search; use --api-mode tools"
            )
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        return rsn.chat_plan(
            self.base_url, info.kind, how or "prefill", messages, prompt.continuation
        )

    async def context_length(self) -> int | None:
        """The server's context window when it reports one, else the configured one."""
        if not self._context_known:
            info = await self._discover()
            self._context = info.context_length or await self._props_context()
            self._context = self._context or self._configured_context
            self._context_known = True
        return self._context

    async def aclose(self) -> None:
        await self._client.aclose()

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
        await self._discover()  # vLLM's /tokenize wants the model name
        root = _root(self.base_url)
        try:
            return await self._retrying(
                lambda: self._render_on(root, messages), what=f"{root} (chat template)"
            )
        except ServerTemplateUnavailable:
            if self._template_spec == SERVER:
                raise
            # No template given and the server cannot render one: ChatML is the most
            # common format among open reasoning models; say so once.
            log.warning("server at %s cannot render chat templates; using chatml", root)
            self._local = local_template("chatml")
            return self._local(messages)

    async def _render_on(self, root: str, messages: tuple[Message, ...]) -> str:
        try:
            return await _render_on_server(self._client, root, messages, model=self.model)
        except httpx.TransportError as e:
            raise _transport_error(root, e) from None

    # ---- discovery -----------------------------------------------------------------------

    async def _discover(self) -> wire.ServerInfo:
        """GET /v1/models once: the server kind, a default model id, maybe the context."""
        if self._info is not None:
            return self._info
        async with self._lock:
            if self._info is None:
                url = self.base_url + "/models"
                info = await self._retrying(lambda: self._fetch_models(url), what=url)
                if self.model is None:
                    self.model = self._default_model(info)
                self._info = info
        return self._info

    async def _fetch_models(self, url: str) -> wire.ServerInfo:
        try:
            response = await self._client.get(url)
        except httpx.TransportError as e:
            raise _transport_error(url, e) from None
        if wire.is_retryable(response.status_code):
            raise self._http_error(url, response)
        try:
            payload = response.json() if response.status_code == 200 else None
        except ValueError:
            payload = None  # discovery is best effort; the completion call will tell
        return wire.parse_models(payload, host_kind=_host_kind(url))

    def _default_model(self, info: wire.ServerInfo) -> str | None:
        if info.model_ids:
            return info.model_ids[0]
        if info.kind == "openai":
            raise BackendError(BACKEND, "no model given: set --model")
        return None  # llama.cpp-like servers serve one model and ignore the field

    async def _props_context(self) -> int | None:
        try:
            response = await self._client.get(_root(self.base_url) + "/props")
            return wire.props_context(response.json()) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    # ---- requests, retries, errors -------------------------------------------------------

    async def _retrying(self, attempt: Callable[[], Awaitable[T]], *, what: str) -> T:
        """Run `attempt` until it succeeds, a non-retryable error, or retries run out."""
        for tries in itertools.count():
            try:
                return await attempt()
            except BackendError as e:
                if not e.retryable or tries >= self.retries:
                    raise
                delay = self._delay(tries, e.retry_after)
                log.info("%s failed (%s); retry %d in %.2fs", what, e, tries + 1, delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s * 4)
        backoff = min(self.max_backoff_s, self.backoff_s * 2.0**attempt)
        return backoff * (0.5 + random.random() / 2)  # jitter spreads retrying clients

    async def _complete_request(
        self,
        url: str,
        body: Callable[[], dict[str, Any]],
        on_text: TextSink | None,
        thinking: bool = False,
    ) -> wire.Reply:
        shown: list[str] = []

        def sink(piece: str) -> None:
            shown.append(piece)
            if on_text is not None:
                on_text(piece)

        async def attempt() -> wire.Reply:
            try:
                return await self._post_once(url, body(), sink, thinking)
            except BackendError as e:
                if shown:  # text already shown live cannot be taken back: no replay
                    e.retryable = False
                elif self._send_extras and _names_extra(e):
                    log.warning("%s rejects non-standard fields; sending standard ones", url)
                    self._send_extras = False
                    return await self._post_once(url, body(), sink, thinking)
                raise

        return await self._retrying(attempt, what=url)

    async def _post_once(
        self, url: str, body: dict[str, Any], on_text: TextSink, thinking: bool = False
    ) -> wire.Reply:
        async with self._open(url, body) as response:
            if response.status_code != 200:
                await response.aread()
                raise self._http_error(url, response)
            # Some servers ignore `stream` and answer with one JSON body: read it whole.
            if body.get("stream") and "json" not in response.headers.get("content-type", ""):
                return await _read_stream(url, response, on_text, thinking)
            await response.aread()
            try:
                reply = wire.parse_reply(response.json())
            except ValueError as e:
                raise _malformed(url, e) from None
            shown = rsn.join_reply(thinking, reply.reasoning, reply.text)
            if body.get("stream") and shown:
                on_text(shown)
            return reply

    @asynccontextmanager
    async def _open(self, url: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        try:
            async with self._client.stream("POST", url, json=body) as response:
                yield response
        except httpx.TransportError as e:
            raise _transport_error(url, e) from None

    def _http_error(self, url: str, response: httpx.Response) -> BackendError:
        status = response.status_code
        message = wire.body_message(response.text)
        if self._secret:  # some servers quote the key they rejected
            message = message.replace(self._secret, "***")
        if wire.is_overflow(status, message):
            return ContextOverflowError(BACKEND, f"{url}: {message}", status=status)
        if status in (404, 405) and "model" not in message.lower():
            return _NoEndpoint(BACKEND, f"endpoint not found: {url}: {message}", status=status)
        if status == 404:
            message = f"unknown model {self.model!r} at {url}: {message}"
        elif status in (401, 403):
            message = f"{url}: not authorised (check the API key variable): {message}"
        else:
            message = f"{url}: {message}"
        return BackendError(
            BACKEND,
            message,
            status=status,
            retry_after=retry_after_s(response.headers.get("retry-after")),
            retryable=wire.is_retryable(status),
        )


async def _read_stream(
    url: str, response: httpx.Response, on_text: TextSink, thinking: bool = False
) -> wire.Reply:
    state = wire.StreamState(rsn.ChainJoiner(thinking))
    sse = wire.SseDecoder()
    chunks = response.aiter_bytes()
    async for chunk in chunks:
        if _apply(url, state, sse.feed(chunk), on_text):
            await _drain(chunks)
            break
    else:
        _apply(url, state, sse.flush(), on_text)
    return state.reply()


def _apply(url: str, state: wire.StreamState, payloads: list[bytes], on_text: TextSink) -> bool:
    """Feed SSE payloads to `state`; True at the `[DONE]` sentinel."""
    for data in payloads:
        if not data:
            continue
        if data == b"[DONE]":
            return True
        try:
            piece = state.feed(json.loads(data))
        except wire.StreamError as e:
            raise BackendError(BACKEND, f"{url}: error in stream: {e}") from None
        except ValueError as e:
            raise _malformed(url, e) from None
        if piece:
            on_text(piece)
    return False


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the body's end that follows `[DONE]` (the chunked-encoding terminator).

    httpcore keeps a connection for reuse only when its response was read to the end;
    stopping at `[DONE]` made every streamed request open a new TCP connection. A server
    that holds the stream open after `[DONE]` is cut off after a moment, as before.
    """
    with suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(_DRAIN_S):
            async for _ in chunks:
                pass


class _NoEndpoint(BackendError):
    """The server has no such path (404/405 not about the model)."""


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
    prompt_tokens = reply.prompt_tokens
    if not prompt_tokens:  # only then: serialising a long chat prompt is not free
        prompt_tokens = estimate_tokens(sent if isinstance(sent, str) else json.dumps(sent))
    completion_tokens = reply.completion_tokens
    return Completion(
        text=text,
        finish=finish,
        stop=hit if finish == "stop" else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=estimate_tokens(raw) if completion_tokens is None else completion_tokens,
        latency_s=latency_s,
        continuation=continuation,
    )


# Failures where the server never started (or visibly dropped) the work: safe to resend.
_RETRYABLE_TRANSPORT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
)


def _transport_error(url: str, error: httpx.TransportError) -> BackendError:
    kind = type(error).__name__
    if isinstance(error, httpx.TimeoutException) and not isinstance(error, httpx.ConnectTimeout):
        # A read timeout means a generation still running or a stuck server; resending
        # would start the whole generation again, so it is reported, not retried.
        return BackendError(BACKEND, f"{url}: no answer within the read timeout ({kind})")
    detail = str(error) or kind
    retryable = isinstance(error, _RETRYABLE_TRANSPORT)
    return BackendError(BACKEND, f"cannot reach {url}: {kind}: {detail}", retryable=retryable)


def _names_extra(error: BackendError) -> bool:
    return wire.rejects_extras(error.status or 0, str(error))


def _malformed(url: str, error: Exception) -> BackendError:
    return BackendError(BACKEND, f"{url}: malformed response from the server: {error}")
