"""A real HTTP server on 127.0.0.1 for web tests: search providers' wire formats and pages.

    with web_server({"/search": Reply(body={"organic": []})}) as s:
        backend = SerperSearch(endpoint=s.url("/search"), api_key="k")

`routes` maps a path (no query string) to a Reply or to a function of the Request that
returns one; it can be changed while the server runs. The "*" route, if any, answers
every path no other route names (a reader service, whose paths are page URLs). Every
request is recorded in `requests`; `max_in_flight` is the most requests it was ever
handling at once. Replies can wait before answering (`delay_s`) or trickle the body
(`drip_s`), and omit Content-Length (`length=False`, the body then ends when the
connection closes).

Only stdlib: ThreadingHTTPServer in a daemon thread.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.servers._base import QuietServer


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: Any = b""  # bytes, str, or anything JSON-serialisable
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drip_s: float = 0.0  # seconds between body bytes
    length: bool = True

    def payload(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, self.content_type or "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), self.content_type or "text/html; charset=utf-8"
        return json.dumps(self.body).encode(), self.content_type or "application/json"


Route = Reply | Callable[[Request], Reply]


class WebServer:
    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"server_ref": self})
        self._httpd = QuietServer(("127.0.0.1", 0), handler)
        self._httpd.block_on_close = False
        self.port = int(self._httpd.server_address[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def hits(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    server_ref: WebServer
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _handle(self) -> None:
        srv = self.server_ref
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = Request(
            self.command,
            parts.path,
            {k: v[0] for k, v in parse_qs(parts.query).items()},
            {k.lower(): v for k, v in self.headers.items()},
            self.rfile.read(length) if length else b"",
        )
        with srv._lock:
            srv.requests.append(request)
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        try:
            route = srv.routes.get(parts.path) or srv.routes.get("*")
            reply = Reply(404, "not found") if route is None else route
            if callable(reply):
                reply = reply(request)
            self._reply(reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to do
        finally:
            with srv._lock:
                srv.in_flight -= 1

    def _reply(self, reply: Reply) -> None:
        if reply.delay_s:
            time.sleep(reply.delay_s)
        body, ctype = reply.payload()
        self.send_response(reply.status)
        self.send_header("Content-Type", ctype)
        if reply.length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.close_connection = True
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if reply.drip_s:
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(reply.drip_s)
        else:
            self.wfile.write(body)

    do_GET = _handle
    do_POST = _handle


def page_reader(*, key: str | None = None, preamble: bool = True, timeout_s: float = 2.0) -> Route:
    """A Jina-Reader-style service, as the "*" route: GET /{page url} reads the page and
    answers its visible text as text/plain, after a Jina-like preamble (URL Source) unless
    `preamble` is False (for scripted models that read a document's first line).
    It reads only pages on 127.0.0.1 and answers 422 for any other page or a failing one,
    as Jina does; with `key`, a request without `Authorization: Bearer KEY` gets 401.
    """
    from search_o1.page_text import html_to_text

    def read(r: Request) -> Reply:
        if key is not None and r.headers.get("authorization") != f"Bearer {key}":
            return Reply(401, {"code": 401, "message": "invalid API key"})
        url = r.path[1:] + ("?" + urlencode(r.query) if r.query else "")
        if not url.startswith("http://127.0.0.1:"):
            return Reply(422, {"code": 422, "message": f"cannot read {url}"})
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as page:
                html = page.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as e:
            return Reply(422, {"code": 422, "message": f"failed to read {url}: {e}"})
        text = html_to_text(html)  # main content, as Jina returns by default
        if preamble:
            text = f"URL Source: {url}\n\nMarkdown Content:\n{text}"
        return Reply(body=text, content_type="text/plain; charset=utf-8")

    return read


@contextmanager
def web_server(routes: dict[str, Route] | None = None) -> Iterator[WebServer]:
    server = WebServer(routes if routes is not None else {})
    try:
        yield server
    finally:
        server.stop()


def make_pdf(text: str, title: str | None = None) -> bytes:
    """A minimal one-page PDF showing `text` (ASCII) in Helvetica, built by hand, with a
    correct xref table and, when `title` is given, an Info title."""

    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    stream = f"BT /F1 12 Tf 72 720 Td ({escape(text)}) Tj ET".encode()
    info = f"<< /Title ({escape(title)}) >>" if title else "<< >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        info.encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
