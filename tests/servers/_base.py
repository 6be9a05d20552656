"""What every loopback test server's request handler shares: quiet logs, JSON answers."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


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
