"""Building the MCP server leaves the process's logging as it found it (the SDK would
set up the root logger with its own handler when nothing has yet)."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")


def test_building_the_server_leaves_root_logging_alone() -> None:
    from search_o1.mcp.server import build_server

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        root.handlers[:] = []  # as in a fresh process: nothing set up yet
        build_server(lambda: None)  # type: ignore[arg-type,return-value]
        assert root.handlers == [] and root.level == level
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
