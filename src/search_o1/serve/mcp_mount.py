"""`/mcp` on `search-o1 serve`: the MCP tools over streamable HTTP, beside `/v1`.

The tools run over the server's engine and share its run slots: an `ask` waits for a
slot like a chat request, and is refused at once when the slots and queue are full.
The bearer key (`--auth-key-env`) is checked on `/mcp` as on `/v1` (app.py's
BearerAuth). Without the [mcp] extra, `/mcp` answers 501 with the install hint.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from search_o1.engine import Engine
from search_o1.errors import MissingExtraError, QueueFull, SearchO1Error
from search_o1.serve.chat_completions import error_body
from search_o1.serve.runs import Limiter

PATH = "/mcp"


@dataclass(frozen=True)
class McpMount:
    """The route, and what must run around serving it (the SDK's session manager)."""

    route: Route
    lifespan: Callable[[], AbstractAsyncContextManager[object]]


def mcp_mount(engine: Callable[[], Engine | None], limiter: Limiter) -> McpMount:
    """The `/mcp` route over the engine `engine()` returns (None while starting)."""
    try:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
        from mcp.server.transport_security import TransportSecuritySettings

        from search_o1.mcp.server import build_server
    except ImportError as e:
        return _missing(str(MissingExtraError(e.name or "mcp", "mcp")))

    def current() -> Engine:
        found = engine()
        if found is None:
            raise SearchO1Error("the server is starting or stopping")
        return found

    @asynccontextmanager
    async def admit() -> AsyncIterator[object]:
        try:
            ticket = limiter.admit()
        except QueueFull:
            raise SearchO1Error(
                "the server is busy: every run slot and queue place is taken; retry shortly"
            ) from None
        try:
            async with ticket:
                yield ticket
        finally:
            ticket.release()  # also when cancelled while waiting for a slot

    server = build_server(current, admit=admit)
    # Host and Origin are the serve app's concern (one rule for every path), so the
    # SDK's own check, which only knows loopback names, is off here.
    server.streamable_http_app(
        streamable_http_path=PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    return McpMount(Route(PATH, StreamableHTTPASGIApp(manager)), manager.run)


def _missing(message: str) -> McpMount:
    async def unavailable(request: Request) -> Response:
        body = error_body(message, type="server_error", code="mcp_not_installed")
        return JSONResponse(body, status_code=501)

    @asynccontextmanager
    async def nothing() -> AsyncIterator[object]:
        yield None

    return McpMount(Route(PATH, unavailable, methods=["GET", "POST", "DELETE"]), nothing)
