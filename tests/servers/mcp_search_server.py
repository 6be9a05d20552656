"""An MCP search server written with the official SDK, for `--search mcp` tests.

    python tests/servers/mcp_search_server.py CORPUS.jsonl [--log FILE]

serves over stdio; `http_app(corpus)` gives the same server as a streamable HTTP app.
It searches a JSONL corpus (id, title, text) by shared words and offers the results in
four shapes, one tool each: `search` (structured JSON: id, title, url, text, score),
`links` (resource links), `plain` (one text block per result) and `listing` (one text
block listing every result, as Brave's reference server writes them). `--log` appends one
line per tool call, so a test can tell that a replayed run never reached the server.

Standalone on purpose: it imports only the SDK and the standard library, as a third
party's server would.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ResourceLink, TextContent
from pydantic import BaseModel, Field


class Result(BaseModel):
    id: str
    title: str
    url: str
    text: str
    score: float


class Results(BaseModel):
    results: list[Result]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 2}


def build(corpus: Path, log: Path | None = None) -> MCPServer[Any]:
    rows = [json.loads(line) for line in corpus.read_text("utf-8").splitlines() if line.strip()]
    server: MCPServer[Any] = MCPServer("test-search", log_level="WARNING")

    def ranked(query: str, limit: int) -> list[Result]:
        if log is not None:
            with log.open("a", encoding="utf-8") as f:
                f.write(query + "\n")
        wanted = _words(query)
        scored = []
        for row in rows:
            score = len(wanted & _words(f"{row['title']} {row['text']}"))
            if score:
                url = f"https://corpus.test/{row['id']}"
                scored.append(
                    Result(
                        id=row["id"],
                        title=row["title"],
                        url=url,
                        text=row["text"],
                        score=float(score),
                    )
                )
        scored.sort(key=lambda r: -r.score)
        return scored[:limit]

    @server.tool()
    def search(
        query: Annotated[str, Field(description="What to look for.")], max_results: int = 5
    ) -> Results:
        """Search the corpus."""
        return Results(results=ranked(query, max_results))

    @server.tool()
    def links(q: str, limit: int = 5) -> list[ResourceLink]:
        """Search the corpus; results as resource links."""
        return [
            ResourceLink(type="resource_link", uri=r.url, name=r.title, description=r.text)
            for r in ranked(q, limit)
        ]

    @server.tool()
    def plain(text: str) -> list[TextContent]:
        """Search the corpus; each result one text block."""
        return [TextContent(type="text", text=f"{r.title}\n{r.text}") for r in ranked(text, 5)]

    @server.tool()
    def listing(query: str) -> str:
        """Search the corpus; the results listed in one text block, as Brave's reference
        server writes them (Title, Description and URL lines, a blank line between)."""
        return "\n\n".join(
            f"Title: {r.title}\nDescription: {r.text}\nURL: {r.url}" for r in ranked(query, 5)
        )

    return server


def http_app(corpus: Path, log: Path | None = None, *, key: str | None = None) -> Any:
    """The server over streamable HTTP at /mcp; with `key`, every HTTP request must carry
    `Authorization: Bearer KEY` (else 401), as a hosted MCP server asks for its token."""
    app = build(corpus, log).streamable_http_app(streamable_http_path="/mcp")
    if key is None:
        return app

    async def keyed(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {key}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return keyed


if __name__ == "__main__":
    args = sys.argv[1:]
    log_file = Path(args[args.index("--log") + 1]) if "--log" in args else None
    build(Path(args[0]), log_file).run("stdio")
