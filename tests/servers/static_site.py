"""`python3 -m http.server` in a thread: a plain web server where a model server was
expected (what a user meets when --base-url points at the wrong port)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.servers._base import serving


class _Quiet(SimpleHTTPRequestHandler):
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def static_web_server(root: Path) -> Iterator[str]:
    """`python3 -m http.server`, in a thread: a web server, not a model server."""
    with serving(functools.partial(_Quiet, directory=str(root))) as url:
        yield url + "/v1"
