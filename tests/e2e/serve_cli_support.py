"""What the `serve` and `view` CLI tests share: the installed command, and a free
loopback port to start it on."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

EXE = Path(sys.executable).with_name("search-o1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
