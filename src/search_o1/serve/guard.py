"""What keeps a browser on another site from driving `serve` or reading `view`.

A page on any origin can make the user's browser send requests to a server on
localhost, and with DNS rebinding (a hostile name that resolves to 127.0.0.1) read the
replies as if same-origin. Three checks stop that, before anything else runs:

- `Host` must name this server: a loopback bind answers to the loopback names, a
  wildcard bind to this machine's names and addresses, any bind to `--allowed-host`
  (a rebinding page sends its own name, and is refused);
- a request carrying an `Origin` other than the server's own is refused unless
  `--cors-origin` lists it (those also get CORS headers, preflight included, with
  what a browser MCP client needs on `/mcp`);
- a body must be `application/json`, which a page cannot send cross-origin without a
  preflight that the previous check answers with a refusal (HTML forms cannot send it).

Every response, refusals included, says how the page may be used: a
Content-Security-Policy that allows only this origin's scripts, styles and requests
and no framing, `X-Content-Type-Options: nosniff` and `X-Frame-Options: DENY`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from search_o1.serve.chat_completions import error_body

ANY_HOST = "*"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _is_wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _machine_names() -> set[str]:
    """This machine's names and addresses: what clients of a wildcard bind may use."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            infos = socket.getaddrinfo(name, None)
        except OSError:
            continue
        names.update(str(info[4][0]) for info in infos)
    return {n.lower() for n in names if n}


def host_names(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The `Host` names a server bound to `bound` answers to, plus `extra`.

    >>> sorted(host_names("127.0.0.1", ["search.example"]))
    ['127.0.0.1', '::1', 'localhost', 'search.example']
    """
    names = {n.lower().strip("[]") for n in extra}
    host = bound.lower().strip("[]")
    if _is_loopback(host) or _is_wildcard(host):
        names.update(LOOPBACK_NAMES)
    if _is_wildcard(host):
        names.update(_machine_names())
    elif not _is_loopback(host):
        names.add(host)
    return frozenset(names)


def _hostname(host_header: str) -> str:
    """'example.org:8000' -> 'example.org'; '[::1]:8000' -> '::1'; anything after the
    brackets but a port leaves the header whole, so it names no host.

    >>> _hostname("[::1]:8000"), _hostname("[::1]evil.example")
    ('::1', '[::1]evil.example')
    """
    if host_header.startswith("["):
        end = host_header.find("]")
        rest = host_header[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return host_header.lower()
        return host_header[1:end].lower()
    return host_header.rsplit(":", 1)[0].lower() if host_header.count(":") == 1 else host_header


def _same_origin(origin: str, host_header: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host_header.lower()


class BrowserGuard:
    """The checks above, as ASGI middleware (the outermost layer of `serve` and `view`)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str],
        cors_origins: Sequence[str] = (),
    ) -> None:
        self.hosts = frozenset(h.lower() for h in hosts)
        self.cors_origins = frozenset(o.rstrip("/") for o in cors_origins)
        # Allowed other origins get CORS headers (and preflights answered) from Starlette.
        self.app: ASGIApp = (
            CORSMiddleware(
                app,
                allow_origins=sorted(self.cors_origins),
                # DELETE ends an MCP session; the Mcp-* headers and Last-Event-ID are
                # what a browser MCP client sends on /mcp (streamable HTTP), and it
                # must read Mcp-Session-Id back to go on with the session.
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "Accept",
                    "Mcp-Session-Id",
                    "Mcp-Protocol-Version",
                    "Last-Event-ID",
                ],
                expose_headers=["Mcp-Session-Id"],
            )
            if self.cors_origins
            else app
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS:
                    if name.decode() not in headers:
                        headers.raw.append((name, value))
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            status, message, code = refusal
            body = error_body(message, type="invalid_request_error", code=code)
            await JSONResponse(body, status_code=status)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        """(status, message, code) when the request is refused; None when it may go on."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if ANY_HOST not in self.hosts and _hostname(host) not in self.hosts:
            return (
                421,
                f"this server does not answer to Host {host!r}; start it with "
                "--allowed-host NAME to add a name",
                "host_not_allowed",
            )
        origin = headers.get("origin")
        if (
            origin is not None
            and not _same_origin(origin, host)
            and origin.rstrip("/") not in self.cors_origins
        ):
            return (
                403,
                f"requests from the page at {origin} are refused; start the server with "
                f"--cors-origin {origin} to allow it",
                "origin_not_allowed",
            )
        if scope["method"] in _BODY_METHODS:
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "application/json":
                return (
                    415,
                    f"the request body must be application/json (got {kind or 'none'!r})",
                    "unsupported_media_type",
                )
        return None
