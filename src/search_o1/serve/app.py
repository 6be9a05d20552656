"""The HTTP app of `search-o1 serve`: OpenAI-compatible chat, /retrieve, /mcp (MCP over
streamable HTTP, see mcp_mount.py), /health, the page.

`create_app` takes what builds the engine: Settings (the CLI's way: the pipeline is
opened on startup and closed on shutdown), an async context manager factory, or a ready
Engine (tests: a scripted model and in-memory search, no HTTP model at all).
"""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from search_o1.config import Settings
from search_o1.engine import Engine, method_names
from search_o1.errors import QueueFull, SearchO1Error
from search_o1.pipeline import open_pipeline
from search_o1.serve import chat_completions as wire
from search_o1.serve.guard import BrowserGuard, host_names
from search_o1.serve.health import health_report
from search_o1.serve.mcp_mount import mcp_mount
from search_o1.serve.page import page_routes
from search_o1.serve.request_log import RUN_KEY, RequestLog
from search_o1.serve.responses import CompletionResponse, EventStreamResponse
from search_o1.serve.retrieve import parse_retrieve, retrieve
from search_o1.serve.runs import Limiter, Run, cancel_all
from search_o1.tasks import TASKS
from search_o1.text_safety import scrub_data

EngineFactory = Callable[[], AbstractAsyncContextManager[Engine]]
EngineSource = Engine | Settings | EngineFactory
DEFAULT_MODEL_NAME = "search-o1"
# Paths that need the bearer key; the page, its assets and /health stay open so a
# load balancer can probe and a browser can load the page that then asks for the key.
# (/health shows where the model server is only to a client that sent the key.)
_PROTECTED = ("/v1/", "/retrieve", "/mcp")
# A chat request is a conversation of text; a body past this is refused with 413 before
# it is read whole (an authorised client could otherwise make the server hold any size).
MAX_BODY_BYTES = 4 * 1024 * 1024


@dataclass
class ServeState:
    limiter: Limiter
    model_name: str
    api_key: str | None
    engine: Engine | None = None
    runs: set[Run] = field(default_factory=set)
    model_api_key: str | None = None  # the model server's key, for health probes
    default_max_tokens: int | None = None  # a request's chain budget when it gives none


@dataclass(frozen=True)
class ServeHooks:
    """What the CLI hears from the app's lifespan: `on_ready` once the pipeline is open
    (it announces the address then), `on_stopped` once it is closed again, and
    `on_startup_error` a SearchO1Error met while opening it (it stops the server and
    prints one line). Without that hook, such an error fails the startup as usual.
    `on_request` hears each request's log line (see serve/request_log.py)."""

    on_ready: Callable[[], None] | None = None
    on_startup_error: Callable[[SearchO1Error], None] | None = None
    on_stopped: Callable[[], None] | None = None
    on_request: Callable[[str], None] | None = None  # one line per request as it ends


def create_app(
    source: EngineSource,
    *,
    api_key: str | None = None,
    max_concurrency: int = 4,
    max_queue: int = 16,
    model_name: str = DEFAULT_MODEL_NAME,
    max_body_bytes: int = MAX_BODY_BYTES,
    hooks: ServeHooks | None = None,
    default_max_tokens: int | None = None,
    hosts: Iterable[str] | None = None,
    cors_origins: Sequence[str] = (),
) -> Starlette:
    """The serve app. Its state (`app.state.serve`) exposes the limiter's counters.

    `default_max_tokens` bounds the chain of a request that sends no max_tokens (shown
    in /v1/models); None leaves it to the settings. `hosts`: the Host names it answers
    to (default: the loopback names; see `guard.host_names`); `cors_origins`: other
    sites' pages allowed to call it.
    """
    key = source.api_key if isinstance(source, Settings) else None  # for health probes
    state = ServeState(
        Limiter(max_concurrency, max_queue),
        model_name,
        api_key,
        model_api_key=key,
        default_max_tokens=default_max_tokens,
    )
    hooks = hooks or ServeHooks()
    mcp = mcp_mount(lambda: state.engine, state.limiter)
    routes = [
        Route("/v1/chat/completions", _chat, methods=["POST"]),
        Route("/v1/models", _models, methods=["GET"]),
        Route("/retrieve", _retrieve, methods=["POST"]),
        Route("/health", _health, methods=["GET"]),
        Route("/api/mode", _mode, methods=["GET"]),
        mcp.route,
        *page_routes(),
    ]
    app = Starlette(
        routes=routes,
        lifespan=_lifespan(source, state, hooks, mcp.lifespan),
        exception_handlers={HTTPException: _http_error, wire.WireError: _wire_error},  # type: ignore[dict-item]
    )
    app.state.serve = state
    # The last added runs first: the browser checks, then the key, before any body is read.
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(BearerAuth, api_key=api_key)
    allowed = host_names("127.0.0.1") if hosts is None else hosts
    app.add_middleware(BrowserGuard, hosts=allowed, cors_origins=cors_origins)
    if hooks.on_request is not None:  # outermost: refusals by the guards are logged too
        app.add_middleware(RequestLog, emit=hooks.on_request)
    return app


def _lifespan(
    source: EngineSource,
    state: ServeState,
    hooks: ServeHooks,
    mcp: Callable[[], AbstractAsyncContextManager[object]],
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            try:
                state.engine = await stack.enter_async_context(_open(source))
            except SearchO1Error as e:
                if hooks.on_startup_error is None:
                    raise
                hooks.on_startup_error(e)
                yield
                return
            # Entered after the engine, so closed before it: MCP sessions (and the asks
            # they run) end while the backends are still open.
            await stack.enter_async_context(mcp())
            if hooks.on_ready is not None:
                hooks.on_ready()
            try:
                yield
            finally:
                # uvicorn has already waited out its graceful-shutdown period for open
                # responses; whatever still runs now is cancelled before backends close.
                await cancel_all(state.runs)
                state.engine = None
        if hooks.on_stopped is not None:
            hooks.on_stopped()

    return lifespan


def _open(source: EngineSource) -> AbstractAsyncContextManager[Engine]:
    if isinstance(source, Engine):
        return _given(source)
    if isinstance(source, Settings):
        return open_pipeline(source)
    return source()


@asynccontextmanager
async def _given(engine: Engine) -> AsyncIterator[Engine]:
    yield engine  # the caller owns it and closes it


def _state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def _engine(request: Request) -> Engine:
    engine = _state(request).engine
    if engine is None:
        raise wire.WireError(503, "the server is starting or stopping", type="server_error")
    return engine


async def _json_body(request: Request) -> Any:
    try:
        # A JSON escape such as \ud800 parses to a lone surrogate, which no reply or model
        # request could encode: made U+FFFD where the client's text enters.
        return scrub_data(await request.json())[0]
    except ValueError:  # not JSON, not UTF-8, or an integer past Python's digit limit
        raise wire.WireError(400, "the request body is not valid JSON") from None
    except RecursionError:  # arrays or objects nested deeper than parsing (or scrubbing) goes
        raise wire.WireError(400, "the request body is nested too deeply") from None


# ---------------------------------------------------------------------- routes


async def _chat(request: Request) -> Response:
    state = _state(request)
    chat = wire.parse_chat_request(await _json_body(request), model_name=state.model_name)
    overrides = chat.overrides
    if state.default_max_tokens is not None:
        overrides = {"max_tokens": state.default_max_tokens, **overrides}
    engine = engine_for(_engine(request), overrides)
    try:
        ticket = state.limiter.admit()
    except QueueFull:
        raise wire.WireError(
            429,
            f"all {state.limiter.max_running} run slots and {state.limiter.max_queued} "
            "queue places are taken; retry shortly",
            type="rate_limit_error",
            code="rate_limit_exceeded",
        ) from None
    run = Run(
        engine,
        chat.question,
        ticket=ticket,
        registry=state.runs,
        task=chat.task,
        method=chat.method,
    )
    setattr(request.state, RUN_KEY, run)  # for the request's log line
    maker = wire.ChunkMaker(wire.new_completion_id(), state.model_name)
    if chat.stream:
        return EventStreamResponse(run, maker, include_usage=chat.include_usage)
    return CompletionResponse(run, maker)


def engine_for(base: Engine, overrides: dict[str, Any]) -> Engine:
    """The engine for one request: the shared one, or a light copy with its own options.

    Options are frozen and an Engine reads them throughout a run, so a request's
    temperature or token budget gets an Engine of its own over the same backends.
    `overrides` holds `max_tokens`, `temperature` and `top_p` (see chat_completions).
    """
    if not overrides:
        return base
    options = base.options
    sampling = {k: overrides[k] for k in ("temperature", "top_p") if k in overrides}
    limits, reader = options.limits, options.reader
    if "max_tokens" in overrides:
        limits = dataclasses.replace(limits, max_total_tokens=overrides["max_tokens"])
        # The client's budget bounds the chain it reads. Reason-in-Documents keeps the
        # server's own limit: a small budget would cut its analysis before the facts.
        own = reader.max_call_tokens or options.limits.call_budget(0)
        reader = dataclasses.replace(reader, max_call_tokens=own)
    sampled = dataclasses.replace(options.sampling, **sampling)
    return base.with_options(
        dataclasses.replace(options, limits=limits, reader=reader, sampling=sampled)
    )


async def _models(request: Request) -> Response:
    state = _state(request)
    model = {
        "id": state.model_name,
        "object": "model",
        "created": 0,
        "owned_by": "search-o1",
        # What a request without max_tokens gets (null: the server's settings decide).
        wire.EXTENSION: {"default_max_tokens": state.default_max_tokens},
    }
    return JSONResponse({"object": "list", "data": [model]})


async def _retrieve(request: Request) -> Response:
    parsed = parse_retrieve(await _json_body(request))
    search = _engine(request).search
    if search is None:
        raise wire.WireError(404, "this server has no search backend", code="no_search_backend")
    return JSONResponse(await retrieve(search, parsed))


async def _health(request: Request) -> Response:
    state = _state(request)
    if state.engine is None:
        return JSONResponse({"status": "starting"}, status_code=503)
    # Where the model server is, and its errors, only to a client that sent the key.
    shown = state.api_key is None or authorised(request.scope, state.api_key.encode())
    report = await health_report(state.engine, api_key=state.model_api_key, detail=shown)
    report["runs"] = state.limiter.stats.as_dict()
    return JSONResponse(report, status_code=200 if report["status"] == "ok" else 503)


async def _mode(request: Request) -> Response:
    """What the page needs to set itself up: serve mode, model name, whether a key is needed."""
    state = _state(request)
    engine = state.engine
    return JSONResponse(
        {
            "mode": "serve",
            "model": state.model_name,
            "auth": state.api_key is not None,
            "methods": method_names(),
            "tasks": list(TASKS),
            "task": engine.options.task if engine else "qa",
        }
    )


# ---------------------------------------------------------------------- errors & auth


async def _wire_error(request: Request, exc: wire.WireError) -> Response:
    headers = {"Retry-After": "1"} if exc.status == 429 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    # Unknown routes and methods answer in the same error shape as everything else.
    code = "not_found" if exc.status_code == 404 else None
    body = wire.error_body(str(exc.detail), type="invalid_request_error", code=code)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


class BearerAuth:
    """`Authorization: Bearer KEY` on the API paths, when the server has a key."""

    def __init__(self, app: ASGIApp, *, api_key: str | None) -> None:
        self.app = app
        self.key = api_key.encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.key is None or scope["type"] != "http" or not _protected(scope["path"]):
            await self.app(scope, receive, send)
            return
        if authorised(scope, self.key):
            await self.app(scope, receive, send)
            return
        body = wire.error_body(
            "Incorrect or missing API key: send Authorization: Bearer KEY",
            type="invalid_request_error",
            code="invalid_api_key",
        )
        headers = {"WWW-Authenticate": "Bearer"}
        await JSONResponse(body, status_code=401, headers=headers)(scope, receive, send)


def authorised(scope: Scope, key: bytes) -> bool:
    """Whether the request carries `Authorization: Bearer <key>`."""
    given = dict(scope["headers"]).get(b"authorization", b"")
    scheme, _, token = given.partition(b" ")
    # compare_digest: the time taken does not tell an attacker how much matched.
    return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), key)


class BodyLimit:
    """Refuse request bodies over `max_bytes` with 413, reading no more than that.

    A declared Content-Length over the cap is refused unread; a chunked body is read up
    to the cap, then refused. Below the cap the body is handed on as one message.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        body = None if _too_big(declared, self.max_bytes) else await self._read(receive)
        if body is None:
            await self._refuse(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # later calls: disconnects, as before
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)  # the client left; the app will see no more
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = wire.error_body(
            f"the request body is over {self.max_bytes} bytes",
            type="invalid_request_error",
            code="request_too_large",
        )
        await JSONResponse(body, status_code=413, headers={"Connection": "close"})(
            scope, receive, send
        )


def _too_big(declared: bytes, cap: int) -> bool:
    try:
        return int(declared) > cap
    except ValueError:
        return False  # not a number: the read below still stops at the cap


def _protected(path: str) -> bool:
    return any(path == p or path.startswith(p) for p in _PROTECTED)
