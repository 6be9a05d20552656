"""`--search mcp`: any MCP server's search tool as a search backend.

`--mcp-server` is the server: a command line ("CMD ARGS", started once and spoken to
over stdio) or a streamable HTTP URL (with `--mcp-key-env`, sent a bearer token);
`--mcp-tool` names its search tool (default: its only tool, or the one named `search`).
The tool's input schema says which argument is the query (`query`, `q`, ..., else its
first string argument) and whether it takes a result count (`k`, `top_k`, `max_results`,
`limit`, ...).

Its results become hits, whichever shape they come in: structured content or JSON text
(a list of results, or an object holding one under `results`, `hits`, `items`, ...;
each with a title, URL, text or snippet under their common names), resource links
(URI, name, description), embedded text resources, a text block that lists results
("Title:/URL:/Description:" records, numbered items, markdown links: one hit each, see
`text_listing`), or plain text (one hit per block).
Like the web backends it has a `cache_identity()`, so the shared cache records its
answers and `--cache replay` replays them without starting the server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from search_o1.errors import BackendError, ConfigError, MissingExtraError
from search_o1.search.base import scrub_hits
from search_o1.search.text_listing import hits_from_listing
from search_o1.types import Hit

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

__all__ = ["McpSearch", "ToolCall", "hits_from_result", "plan_call"]

NAME = "mcp"
QUERY_NAMES = ("query", "q", "question", "search_query", "search", "keywords", "text", "input")
COUNT_NAMES = (
    "k",
    "top_k",
    "topk",
    "max_results",
    "maxResults",
    "num_results",
    "numResults",
    "limit",
    "count",
    "n",
    "size",
)
LIST_KEYS = (
    "results",
    "hits",
    "items",
    "documents",
    "docs",
    "data",
    "organic",
    "web",
    "result",
    "passages",
)
TITLE_KEYS = ("title", "name", "heading")
URL_KEYS = ("url", "link", "href", "uri")
TEXT_KEYS = ("text", "content", "contents", "body", "page_content", "markdown")
SNIPPET_KEYS = ("snippet", "description", "summary", "abstract", "excerpt")
ID_KEYS = ("id", "doc_id", "docid", "_id")


@dataclass(frozen=True)
class ToolCall:
    """How to call a search tool: its name, its query argument, its count argument."""

    tool: str
    query_arg: str
    count_arg: str | None = None

    def arguments(self, query: str, k: int) -> dict[str, Any]:
        args: dict[str, Any] = {self.query_arg: query}
        if self.count_arg is not None:
            args[self.count_arg] = k
        return args


def plan_call(tools: Sequence[Tool], wanted: str | None) -> ToolCall:
    """The tool to call and its arguments, from the server's tool list."""
    names = [t.name for t in tools]
    if wanted is not None:
        chosen = next((t for t in tools if t.name == wanted), None)
        if chosen is None:
            raise ConfigError(
                f"--mcp-tool {wanted}: the server has no such tool; it has: "
                f"{', '.join(names) or 'none'}"
            )
    elif len(tools) == 1:
        chosen = tools[0]
    else:
        chosen = next((t for t in tools if t.name == "search"), None)
        if chosen is None:
            raise ConfigError(
                f"the MCP server has {len(tools)} tools ({', '.join(names) or 'none'}); "
                "name the search tool with --mcp-tool"
            )
    props: dict[str, Any] = dict(chosen.input_schema.get("properties") or {})
    required = list(chosen.input_schema.get("required") or [])
    strings = [n for n, p in props.items() if isinstance(p, dict) and p.get("type") == "string"]
    query = next((n for n in QUERY_NAMES if n in props), None)
    query = query or next((n for n in required if n in strings), None)
    query = query or (strings[0] if strings else None)
    if query is None:
        raise ConfigError(f"the MCP tool {chosen.name!r} takes no text argument to search with")
    count = next(
        (n for n in COUNT_NAMES if n in props and props[n].get("type") in ("integer", "number")),
        None,
    )
    return ToolCall(chosen.name, query, count)


def _first(item: Mapping[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
            return str(value)
    return ""


def _items(data: Any) -> list[Any]:
    """The list of results in a decoded JSON value (or [] when there is none)."""
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        return []
    for key in LIST_KEYS:
        value = data.get(key)
        if isinstance(value, list):
            return value
        if isinstance(value, dict) and _items(value):
            return _items(value)
    if _first(data, TITLE_KEYS + URL_KEYS + TEXT_KEYS):
        return [data]  # one result on its own
    return []


def _is_web(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def _hit_from_item(item: Any, n: int) -> Hit | None:
    if isinstance(item, str):
        return _text_hit(item) if item.strip() else None
    if not isinstance(item, dict):
        return None
    url = _first(item, URL_KEYS)
    text = _first(item, TEXT_KEYS)
    snippet = _first(item, SNIPPET_KEYS)
    title = _first(item, TITLE_KEYS) or url or text[:80]
    if not (title or text or snippet):
        return None
    score = item.get("score", item.get("relevance"))
    return Hit(
        id=_first(item, ID_KEYS) or url or str(n),
        title=title,
        text=text,
        url=url if _is_web(url) else None,
        snippet=snippet or (text[:300] if _is_web(url) else ""),
        score=float(score) if isinstance(score, int | float) else None,
        date=_first(item, ("date", "published", "published_date")) or None,
        source=NAME,
    )


def _text_hit(text: str) -> Hit:
    # Named by its content: a result's position would give two searches' different
    # results the same id.
    text = text.strip()
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
    return Hit(id=f"text-{digest}", title=text.splitlines()[0][:100], text=text, source=NAME)


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def hits_from_result(result: CallToolResult, k: int) -> list[Hit]:
    """A tool result as hits, best first, at most `k` (see the module docstring)."""
    from mcp.types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

    if result.is_error:
        said = " ".join(b.text for b in result.content if isinstance(b, TextContent))
        raise BackendError(NAME, f"the search tool failed: {said.strip() or 'no reason given'}")
    hits: list[Hit] = []
    if result.structured_content is not None and _items(result.structured_content):
        items = _items(result.structured_content)
        hits = [h for n, i in enumerate(items) if (h := _hit_from_item(i, n)) is not None]
        return hits[:k]
    for block in result.content:
        n = len(hits)
        if isinstance(block, TextContent):
            items = _items(_decoded(block.text))
            if items:
                hits.extend(h for m, i in enumerate(items) if (h := _hit_from_item(i, n + m)))
            elif listed := hits_from_listing(block.text, NAME):
                hits.extend(listed)
            elif block.text.strip():
                hits.append(_text_hit(block.text))
        elif isinstance(block, ResourceLink):
            uri = str(block.uri)
            hits.append(
                Hit(
                    id=uri,
                    title=block.title or block.name,
                    url=uri if _is_web(uri) else None,
                    snippet=block.description or "",
                    source=NAME,
                )
            )
        elif isinstance(block, EmbeddedResource) and isinstance(
            block.resource, TextResourceContents
        ):
            uri = str(block.resource.uri)
            text = block.resource.text
            hits.append(
                Hit(
                    id=uri,
                    title=text.strip().splitlines()[0][:100] if text.strip() else uri,
                    text=text,
                    url=uri if _is_web(uri) else None,
                    source=NAME,
                )
            )
    return hits[:k]


class McpSearch:
    """A search tool of an MCP server, reached over stdio (a command) or HTTP (a URL).

    The connection opens at the first search and stays open until `aclose`; one task
    owns it (the SDK's client must be entered and left in the same task), and searches
    from any task of the same event loop call through it.
    """

    name = NAME

    def __init__(
        self,
        server: str,
        tool: str | None = None,
        *,
        timeout: float = 20.0,
        key: str | None = None,
    ) -> None:
        if not server.strip():
            raise ConfigError("--search mcp needs --mcp-server: a command line or a URL")
        self.server = server.strip()
        if key is not None and not _is_web(self.server):
            raise ConfigError("--mcp-key-env is for an --mcp-server URL, not a command line")
        self.tool = tool
        self.timeout = timeout
        self._key = key  # not part of cache_identity: a new token replays the same answers
        self._refused: int | None = None  # the HTTP status of the last refused request
        self._lock = asyncio.Lock()
        self._client: Client | None = None
        self._call: ToolCall | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def cache_identity(self) -> dict[str, Any]:
        return {"server": self.server, "tool": self.tool or ""}

    async def search(self, query: str, *, k: int) -> list[Hit]:
        client, call = await self._connected()
        try:
            result = await client.call_tool(
                call.tool, call.arguments(query, k), read_timeout_seconds=self.timeout
            )
        except BackendError:
            raise
        except Exception as e:  # the SDK's own errors, timeouts, a server that died
            why = f"calling {call.tool!r} failed: {_describe(e)}{self._status_note()}"
            raise BackendError(NAME, why) from None
        return scrub_hits(hits_from_result(result, k))

    async def _target(self, stack: AsyncExitStack) -> Any:
        """What the SDK's `Client` connects to; an HTTP client with the key goes on `stack`."""
        try:
            from mcp import StdioServerParameters
        except ImportError as e:
            raise MissingExtraError(e.name or "mcp", "mcp") from None
        if not _is_web(self.server):
            argv = shlex.split(self.server)
            return StdioServerParameters(command=argv[0], args=argv[1:])
        import httpx2  # the SDK's HTTP client library
        from mcp.client.streamable_http import streamable_http_client

        async def note_refusal(response: httpx2.Response) -> None:
            # POSTs only: a GET event stream may be refused (405) as a matter of course.
            if response.status_code >= 400 and response.request.method == "POST":
                self._refused = response.status_code

        # The SDK's way to add headers: its transport over an HTTP client we make. We
        # also note a refusal's status, which the SDK's error leaves out. Reads wait as
        # long as the SDK's default (a server may hold an event stream open); each call's
        # own limit is `read_timeout_seconds` on the client.
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {self._key}"} if self._key else None,
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [note_refusal]},
        )
        await stack.enter_async_context(http)
        return streamable_http_client(self.server, http_client=http)

    async def _connected(self) -> tuple[Client, ToolCall]:
        async with self._lock:
            if self._client is None or self._call is None:
                ready: asyncio.Future[tuple[Client, ToolCall]] = (
                    asyncio.get_running_loop().create_future()
                )
                self._stop = asyncio.Event()
                self._owner = asyncio.create_task(self._own(ready))
                self._client, self._call = await ready
            return self._client, self._call

    async def _own(self, ready: asyncio.Future[tuple[Client, ToolCall]]) -> None:
        try:
            async with AsyncExitStack() as stack:
                target = await self._target(stack)  # first: it names a missing extra
                from mcp import Client

                client = await stack.enter_async_context(
                    Client(target, read_timeout_seconds=self.timeout)
                )
                listed = await client.list_tools()
                ready.set_result((client, plan_call(listed.tools, self.tool)))
                await self._stop.wait()
        except BaseException as e:  # handed to the waiting search, as a typed error
            if not ready.done():
                ready.set_exception(_connect_error(self.server, e, self._status_note()))
            elif not isinstance(e, asyncio.CancelledError):
                self._client = None  # the connection broke: the next search reconnects
            if isinstance(e, asyncio.CancelledError):
                raise

    def _status_note(self) -> str:
        """What the server's HTTP refusal says, which the SDK's error does not."""
        status, self._refused = self._refused, None
        if status is None:
            return ""
        if status in (401, 403):
            hint = "pass its token with --mcp-key-env" if self._key is None else "check the token"
            return f" (HTTP {status}: {hint})"
        return f" (HTTP {status})"

    async def aclose(self) -> None:
        self._stop.set()
        if self._owner is not None:
            await asyncio.gather(self._owner, return_exceptions=True)
            self._owner = None
        self._client = None


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in _leaves(inner)]
    return [e]


def _describe(e: BaseException) -> str:
    leaf = _leaves(e)[0]
    return f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__


def _connect_error(server: str, e: BaseException, note: str = "") -> BaseException:
    for leaf in _leaves(e):
        if isinstance(leaf, ConfigError | BackendError):
            return leaf
    return BackendError(NAME, f"could not reach the MCP server {server!r}: {_describe(e)}{note}")
