"""What every loopback test server shares: running on a free port, quiet logs, JSON."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that does not print a client hanging up as a fault."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Tests cancel runs, time out and disconnect on purpose: a broken pipe or reset
        # is expected there, and its traceback only buries real failures in the log.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serving(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on a free loopback port from a daemon thread, for the `with` block;
    yields the server's root URL (http://127.0.0.1:PORT)."""
    httpd = QuietServer(("127.0.0.1", 0), handler)
    host, port = httpd.server_address[:2]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://{host!s}:{port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class JSONHandler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1 with no request log, and one way to answer with JSON."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate small writes; with Nagle on, the second waits for
    # the client's delayed ACK (about 40 ms on Linux) on every keep-alive request.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return None

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _models(self, *ids: str) -> None:
        """Answer GET /v1/models with these model ids; any other GET is a 404."""
        if self.path.rstrip("/") != "/v1/models":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        data = [{"id": i, "object": "model"} for i in ids]
        self._json(200, {"object": "list", "data": data})
