"""search-o1 as a tool for other agents, over the Model Context Protocol.

`build_server(engine)` makes an MCP server (the official SDK's `MCPServer`) with three
tools: `ask` (a question answered with its sources and searches, progress per search),
`search` (the facts Reason-in-Documents extracts for one query, with sources) and
`retrieve` (raw hits). `search-o1 mcp` serves it over stdio; `search-o1 serve` mounts
it at `/mcp` (streamable HTTP). Needs the [mcp] extra.
"""

from __future__ import annotations

from search_o1.mcp.server import build_server, run_stdio

__all__ = ["build_server", "run_stdio"]
