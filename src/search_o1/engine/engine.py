"""`Engine`: one model, one search backend and a reader, answering questions.

Every method of the table in `engine/methods.py` runs the one loop of `engine/loop.py`;
what differs between them (opening, stop strings, how a query is answered) is declared
there:

- search-o1: queries are answered with Reason-in-Documents output;
- rag-agent: queries get raw results (title, URL, snippet) and the model may ask for a
  page between the URL markers;
- rag: documents for the question are pasted before it once, then it reasons alone;
- direct: no retrieval at all.

The engine reads only its `EngineOptions` (limits, sampling, reader and search
options); mapping user settings onto them is the pipeline's job.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import TracebackType

from search_o1.documents import LocalDocuments
from search_o1.engine.answering import QueryAnswerer
from search_o1.engine.finish import finish
from search_o1.engine.loop import TurnDriver, run_chain
from search_o1.engine.marker_turns import MarkerTurns
from search_o1.engine.methods import Method, Opening, get_method, has_tools_mode
from search_o1.engine.options import EngineOptions
from search_o1.engine.state import ChainState, PhaseGate
from search_o1.engine.tool_turns import ToolTurns, tool_llm
from search_o1.errors import BackendError, ConfigError, ContextOverflowError
from search_o1.llm.base import LLM
from search_o1.prompts.templates import page_fields
from search_o1.queries import shown_queries
from search_o1.reader import Reader, format_documents
from search_o1.search.base import DocumentSource, Search
from search_o1.tasks import TASKS, TaskKind
from search_o1.types import (
    Completion,
    Document,
    EventSink,
    Finished,
    FinishReason,
    Message,
    Prompt,
    Step,
    Trace,
)

__all__ = ["Engine"]

CODE_QUERY_CHARS = 500  # RAG on code: the search is for this much of the problem


class Engine:
    """Runs questions through one model, one search backend and a reader.

    `options` holds everything the engine reads (limits, sampling, reader and search
    options); `documents` turns hits into documents (default: each hit's own text).
    One Engine serves many questions concurrently; each run's state is a `ChainState`.
    `async with Engine(...) as engine:` closes what it was given on exit (`aclose`); an
    engine from `open_pipeline` is closed by the pipeline instead.
    """

    def __init__(
        self,
        llm: LLM,
        search: Search | None,
        *,
        options: EngineOptions | None = None,
        reader_llm: LLM | None = None,
        documents: DocumentSource | None = None,
    ) -> None:
        self.llm = llm
        self.search = search
        self.options = options = options or EngineOptions()
        self.reader = Reader(
            reader_llm or llm,
            sampling=options.reader.sampling or options.sampling,
            max_tokens=options.reader.max_call_tokens or options.limits.call_budget(0),
            prompts=options.prompts,
            cite=options.reader.cite,
            paper=options.reader.paper,
        )
        self.documents = documents or LocalDocuments(options.search.max_doc_chars)
        self.answerer = QueryAnswerer(search, self.documents, self.reader, options)

    def with_options(self, options: EngineOptions) -> Engine:
        """An Engine over the same model, search and documents with other options."""
        return Engine(
            self.llm,
            self.search,
            options=options,
            reader_llm=self.reader.llm,
            documents=self.documents,
        )

    async def run(
        self,
        question: str,
        *,
        task: TaskKind | None = None,
        method: str | Method = "search-o1",
        on_event: EventSink | None = None,
        gate: PhaseGate | None = None,
    ) -> Trace:
        """Answer one question; never raises for backend failures (they end the trace).

        `gate` (from a scheduler) wraps every generation, search and reader call.
        """
        task = task or self.options.task
        spec = method if isinstance(method, Method) else get_method(method)
        self._validate(question, task, spec)
        start = time.perf_counter()
        state = ChainState(Trace(question, spec.name), Prompt(()), task, spec, on_event, gate)
        try:
            state.prompt = await self._opening(question, state)
            state.shown_queries = shown_queries(state.prompt)
            state.unreported_chars = sum(len(m.content) for m in state.prompt.messages)
            await run_chain(state, self._driver(spec), limits=self.options.limits, llm=self.llm)
        except ContextOverflowError as e:
            finish(state, FinishReason.CONTEXT_OVERFLOW, error=str(e))
        except BackendError as e:
            finish(state, FinishReason.ERROR, error=str(e))
        state.trace.latency_s = time.perf_counter() - start
        state.trace.prompt = state.prompt
        state.emit(Finished(state.trace))
        return state.trace

    def _driver(self, method: Method) -> TurnDriver:
        """How the method's turns ask for searches: function-tool calls or markers."""
        if self._tools_mode(method):
            return ToolTurns(tool_llm(self.llm), self.options, self.answerer)
        return MarkerTurns(self.llm, self.options, self.answerer)

    def _tools_mode(self, method: Method) -> bool:
        """Tools mode applies to methods that search mid-chain; the others run as in chat."""
        return self.options.tools and method.answer != "none" and not method.retrieve_first

    def _validate(self, question: str, task: str, method: Method) -> None:
        if not question.strip():
            raise ConfigError("the question is empty")
        if task not in TASKS:
            raise ConfigError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
        if self.options.tools and not has_tools_mode(method):
            raise ConfigError(f"the {method.name} method has no tools mode (--api-mode tools)")
        if self._tools_mode(method):
            tool_llm(self.llm)
        if method.needs_search and self.search is None:
            raise ConfigError(
                f"the {method.name} method needs a search backend, and none is configured"
            )

    async def _opening(self, question: str, state: ChainState) -> Prompt:
        """The method's opening message (rag: after searching for the question)."""
        documents: tuple[Document, ...] | None = None
        if state.method.retrieve_first:
            documents = await self._rag_documents(state, question)
        opening = Opening(
            state.task,
            question,
            self.options.limits,
            None if documents is None else self._documents_text(state.task, documents),
            self.options.prompts,
            page_fields(documents or ()),
        )
        write = state.method.opening
        if self._tools_mode(state.method) and state.method.tool_opening is not None:
            write = state.method.tool_opening
        return Prompt((Message("user", write(opening)),))

    def _documents_text(self, task: str, documents: Sequence[Document]) -> str:
        if not documents:
            return "(none found)"
        ours = lambda: format_documents(documents)  # noqa: E731
        return self.options.prompts.documents(task, page_fields(documents), ours)

    async def _rag_documents(self, state: ChainState, question: str) -> tuple[Document, ...]:
        # The paper's RAG script searches for a code problem's first 500 characters (a
        # whole statement is no query a search engine takes).
        query = question[:CODE_QUERY_CHARS] if state.task == "code" else question
        record = await self.answerer.run_search(state, query, mode="documents")
        state.trace.steps.append(Step(0, "", Completion("", "stop"), record))
        return record.documents

    # ------------------------------------------------------------------ lifetime

    async def aclose(self) -> None:
        """Close the model, the reader's model, the search backend and the document
        source, each once (for a caller that handed them to the engine to own)."""
        closed: list[object] = []
        for client in (self.llm, self.reader.llm, self.search, self.documents):
            if client is not None and not any(client is c for c in closed):
                closed.append(client)
                await client.aclose()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
