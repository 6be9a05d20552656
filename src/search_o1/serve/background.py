"""Run an ASGI app with uvicorn in a background thread, on a free loopback port.

For tests and benchmarks (ours and users'): a real server with a real socket, so the
clients under test speak real HTTP, and `with` guarantees it stops.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp


@contextmanager
def serve_in_thread(
    app: ASGIApp, *, host: str = "127.0.0.1", timeout_s: float = 10.0
) -> Iterator[str]:
    """Yields the server's base URL (http://127.0.0.1:PORT) once it accepts requests."""
    # Binding the socket ourselves gives the port before uvicorn starts: no races.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2, access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="search-o1-serve", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start (see its log above)")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout_s)
        sock.close()
