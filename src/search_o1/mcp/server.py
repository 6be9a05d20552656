"""The MCP server: `ask`, `search` and `retrieve` over one Engine, on the official SDK.

The tools run on the event loop of the transport that serves them; a client's
cancellation cancels the tool's task, and with it the model request it awaits (the
SDK cancels a handler's scope when `notifications/cancelled` arrives, or when an HTTP
client closes the request's stream).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import Field

from search_o1.config import Settings
from search_o1.engine import Engine, method_names
from search_o1.errors import SearchO1Error
from search_o1.mcp.models import AskResult, HitOut, RetrieveResult, SearchResult, SourceOut
from search_o1.sources import (
    answer_sources,
    renumbered_facts,
    says_nothing_found,
    search_sources,
)
from search_o1.tasks import TASKS, TaskKind
from search_o1.types import (
    Event,
    FinishReason,
    SearchFinished,
    SearchRecord,
    SearchStarted,
    Trace,
)

__all__ = ["Admit", "ask_engine", "build_server", "run_stdio"]

# Waits for a run slot and holds it (serve shares its limit with /v1); raises
# SearchO1Error at once when the server is too busy.
Admit = Callable[[], AbstractAsyncContextManager[object]]
EngineSource = Engine | Callable[[], Engine]

INSTRUCTIONS = (
    "search-o1 answers questions with a reasoning model that searches while it thinks "
    "(Search-o1, with Reason-in-Documents). `ask` returns the answer with numbered "
    "sources and the searches it made; `search` returns the facts extracted from one "
    "search, with their sources; `retrieve` returns the raw hits of one search."
)
MAX_SEARCHES_CAP = 50
MAX_K = 100


def ask_engine(
    engine: Engine,
    *,
    max_searches: int | None = None,
    max_turns: int | None = None,
    max_total_tokens: int | None = None,
    top_k: int | None = None,
) -> Engine:
    """`engine`, or a light copy of it with the limits a caller asked for."""
    options = engine.options
    limits = options.limits
    changes: dict[str, Any] = {
        k: v
        for k, v in (
            ("max_searches", max_searches),
            ("max_turns", max_turns),
            ("max_total_tokens", max_total_tokens),
        )
        if v is not None
    }
    if not changes and top_k is None:
        return engine
    search = options.search
    if top_k is not None:
        search = dataclasses.replace(search, top_k=top_k)
    limits = dataclasses.replace(limits, **changes)
    return engine.with_options(dataclasses.replace(options, limits=limits, search=search))


def _searches_of(event: Event) -> bool:
    return isinstance(event, SearchStarted | SearchFinished)


class _Tools:
    """The tool bodies, over whichever engine `engine()` gives at call time."""

    def __init__(self, engine: Callable[[], Engine], admit: Admit | None) -> None:
        self._engine = engine
        self._admit = admit

    def engine(self) -> Engine:
        try:
            return self._engine()
        except SearchO1Error as e:
            raise ToolError(str(e)) from None

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._admit is None:
            yield
            return
        async with AsyncExitStack() as stack:
            # The refusal of a busy server comes from entering the slot, not from asking.
            try:
                await stack.enter_async_context(self._admit())
            except SearchO1Error as e:
                raise ToolError(str(e)) from None
            yield

    async def ask(
        self,
        ctx: Context,
        question: str,
        method: str,
        task: TaskKind | None,
        max_searches: int | None,
        max_turns: int | None,
        max_total_tokens: int | None,
    ) -> CallToolResult:
        if method not in method_names():
            raise ToolError(f"unknown method {method!r}; known: {', '.join(method_names())}")
        engine = ask_engine(
            self.engine(),
            max_searches=max_searches,
            max_turns=max_turns,
            max_total_tokens=max_total_tokens,
        )
        # The engine's events are synchronous; progress notifications are sent from a
        # task of their own, in order, while the chain runs.
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        done = 0

        async def forward() -> None:
            nonlocal done
            async with receive:
                async for event in receive:
                    if isinstance(event, SearchStarted):
                        message = f"searching: {event.query}"
                    else:
                        assert isinstance(event, SearchFinished)
                        record = event.record
                        message = f"{record.outcome}: {record.query} ({len(record.hits)} hits)"
                    done += 1
                    await ctx.report_progress(done, None, message)

        def on_event(event: Event) -> None:
            if _searches_of(event):
                send.send_nowait(event)

        outcome: Trace | SearchO1Error
        async with self.slot(), anyio.create_task_group() as tg:
            tg.start_soon(forward)
            try:
                outcome = await engine.run(question, task=task, method=method, on_event=on_event)
            except SearchO1Error as e:
                # Raised out of the task group it would come wrapped in an exception
                # group, which the SDK reports as an unexpected error without the reason.
                outcome = e
            finally:
                send.close()
        if isinstance(outcome, SearchO1Error):
            raise ToolError(str(outcome)) from None
        result = AskResult.of(outcome, answer_sources(outcome))
        content: list[ContentBlock] = [
            TextContent(type="text", text=result.model_dump_json(indent=2))
        ]
        failed = outcome.finish_reason is FinishReason.ERROR
        if failed:
            # A model or search server failed mid-chain: the protocol has such failures
            # reported as tool errors (isError), so that the calling agent sees the call
            # failed; the searches made so far still come along as structured content.
            said = f"the run failed: {outcome.error or 'no reason given'}"
            content.insert(0, TextContent(type="text", text=said))
        return CallToolResult(
            content=content,
            structured_content=result.model_dump(mode="json"),
            is_error=failed,
        )

    async def search(self, query: str, context: str, top_k: int | None) -> SearchResult:
        engine = ask_engine(self.engine(), top_k=top_k)
        backend = engine.search
        if backend is None:
            raise ToolError("this server has no search backend")
        try:
            async with self.slot():
                hits = tuple(await backend.search(query, k=engine.options.search.top_k))
                documents = tuple(await engine.documents.read(query, hits))
                reader = await engine.reader.refine(
                    context, query, documents, task=engine.options.task
                )
        except SearchO1Error as e:
            raise ToolError(str(e)) from None
        record = SearchRecord(query, "searched", hits, documents, reader)
        found = search_sources(record)
        return SearchResult(
            query=query,
            facts=renumbered_facts(record, found),
            found=reader.found and not says_nothing_found(reader.refined),
            sources=[SourceOut.of(s) for s in found],
        )

    async def retrieve(self, query: str, k: int) -> RetrieveResult:
        backend = self.engine().search
        if backend is None:
            raise ToolError("this server has no search backend")
        try:
            hits = await backend.search(query, k=k)
        except SearchO1Error as e:
            raise ToolError(str(e)) from None
        return RetrieveResult(query=query, hits=[HitOut.of(h) for h in hits])


def build_server(
    engine: EngineSource,
    *,
    admit: Admit | None = None,
    name: str = "search-o1",
    lifespan: Callable[[MCPServer[Any]], AbstractAsyncContextManager[Any]] | None = None,
) -> MCPServer[Any]:
    """The MCP server over `engine` (or over what a callable returns at each call).

    `admit`: a run slot per `ask`/`search` (serve passes its limiter's). `lifespan`:
    entered when the server starts serving (stdio opens the pipeline there).
    """
    get: Callable[[], Engine] = (lambda: engine) if isinstance(engine, Engine) else engine
    tools = _Tools(get, admit)
    # The SDK sets up the root logger (level and handler) when nothing has yet; the
    # logging of the process it runs in is not ours to change, so it is put back.
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    server: MCPServer[Any] = MCPServer(
        name, instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING"
    )
    root.setLevel(level)
    root.handlers[:] = handlers
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=True)

    async def ask(
        question: Annotated[str, Field(description="The question to answer.", min_length=1)],
        ctx: Context,
        method: Annotated[
            str, Field(description=f"How to answer: {', '.join(method_names())}.")
        ] = "search-o1",
        task: Annotated[
            TaskKind | None,
            Field(description=f"Task kind ({', '.join(TASKS)}); the server's by default."),
        ] = None,
        max_searches: Annotated[
            int | None, Field(description="Searches allowed.", ge=0, le=MAX_SEARCHES_CAP)
        ] = None,
        max_turns: Annotated[
            int | None, Field(description="Generation turns allowed.", ge=1, le=100)
        ] = None,
        max_total_tokens: Annotated[
            int | None, Field(description="New tokens for the whole chain.", ge=1)
        ] = None,
    ) -> Annotated[CallToolResult, AskResult]:
        """Answer a question, searching while reasoning; returns the answer, its numbered
        sources and the searches made. Progress is reported once as each search starts
        and once as it ends. A run that a failing model or search server ended is a tool
        error (its searches and the reason in the result)."""
        return await tools.ask(
            ctx, question, method, task, max_searches, max_turns, max_total_tokens
        )

    async def search(
        query: Annotated[str, Field(description="What to search for.", min_length=1)],
        context: Annotated[
            str,
            Field(
                description="Optional: the reasoning so far, so that the facts "
                "extracted are the ones it needs."
            ),
        ] = "",
        top_k: Annotated[
            int | None, Field(description="Documents to read.", ge=1, le=MAX_K)
        ] = None,
    ) -> SearchResult:
        """Search, read the documents and extract the facts that answer the query
        (Reason-in-Documents); returns the facts and the documents they came from."""
        return await tools.search(query, context, top_k)

    async def retrieve(
        query: Annotated[str, Field(description="What to search for.", min_length=1)],
        k: Annotated[int, Field(description="Hits to return.", ge=1, le=MAX_K)] = 5,
    ) -> RetrieveResult:
        """The raw hits of one search (title, URL or passage id, text or snippet, score)."""
        return await tools.retrieve(query, k)

    server.add_tool(ask, name="ask", annotations=read_only)
    server.add_tool(search, name="search", annotations=read_only)
    server.add_tool(retrieve, name="retrieve", annotations=read_only)
    return server


def run_stdio(settings: Settings) -> None:
    """Serve the pipeline of `settings` over stdio until the client hangs up.

    The pipeline is opened once the SDK has taken stdout over, so nothing it prints
    while starting (an embedded model server, say) can reach the protocol's stream.
    """
    from search_o1.pipeline import open_pipeline

    opened: list[Engine] = []

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        async with open_pipeline(settings) as engine:
            opened.append(engine)
            yield None

    def current() -> Engine:
        if not opened:
            raise SearchO1Error("the pipeline is not open")
        return opened[0]

    server = build_server(current, lifespan=lifespan)
    try:
        anyio.run(server.run_stdio_async)
    except BaseExceptionGroup as group:
        # A pipeline that fails to open fails the server's task group: one line, not a
        # traceback of the SDK's tasks.
        found = group.subgroup(SearchO1Error)
        if found is None:
            raise
        raise _first(found) from None


def _first(group: BaseExceptionGroup[SearchO1Error]) -> SearchO1Error:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first
