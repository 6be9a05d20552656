"""THE loop for one question: generate -> query? -> search -> read -> insert -> continue.

One `Engine` serves many questions concurrently; all per-question state lives in a
`_Chain`. Every method of the table in `methods.py` runs this loop; what differs
between them (opening, stop strings, how a query is answered) is declared there:

- search-o1: queries are answered with Reason-in-Documents output;
- rag-agent: queries get raw results (title, URL, snippet) and the model may ask for a
  page between the URL markers;
- rag: documents for the question are pasted before it once, then it reasons alone;
- direct: no retrieval at all.

The engine reads only its `EngineOptions` (limits, sampling, reader and search
options); mapping user settings onto them is the pipeline's job.

How one query is answered (refusals, search, reading, Reason-in-Documents) lives in
`engine_search`, tools mode's chain in `engine_tools`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Literal

from search_o1 import markers as mk
from search_o1.answer import extract_answer
from search_o1.config import TASKS, TaskKind
from search_o1.engine_options import EngineOptions
from search_o1.engine_search import answer_query, read_url, run_search
from search_o1.engine_tools import run_tools_chain, tool_llm
from search_o1.errors import BackendError, ConfigError, ContextOverflowError
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.methods import Method, Opening, get_method, has_tools_mode
from search_o1.prompts.templates import page_fields
from search_o1.queries import plausible_forced_query, shown_queries
from search_o1.reader import Reader, format_documents
from search_o1.search.base import DocumentSource, Search
from search_o1.search.local import LocalDocuments
from search_o1.tokens import estimate_tokens
from search_o1.types import (
    Completion,
    Document,
    Event,
    EventSink,
    Finished,
    FinishReason,
    Hit,
    Message,
    Prompt,
    SearchRecord,
    Step,
    TextDelta,
    TextSink,
    Trace,
    Usage,
)

# A scheduler's hook around each model call, search and reader call of one run: the
# "rounds" schedule holds a chain at a barrier there; resource limits hold a slot.
Phase = Literal["generate", "search", "read"]
PhaseGate = Callable[[Phase], AbstractAsyncContextManager[None]]
# Tokens for a forced one-line query (the grammar allows 120 characters).
FORCED_QUERY_TOKENS = 48
_FORCED_QUERY_GRAMMAR = "root ::= [^\\n<>|]{3,120}"


@dataclass
class _Chain:
    """Everything one question's run owns while it runs."""

    trace: Trace
    prompt: Prompt
    task: str
    method: Method
    on_event: EventSink | None
    gate: PhaseGate | None = None
    searches: int = 0
    url_fetches: int = 0
    results: dict[str, str] = field(default_factory=dict)  # query -> inserted block
    seen_hits: dict[str, Hit] = field(default_factory=dict)  # url or id -> hit (rag-agent)
    known_tokens: int = 0  # tokens of the prompt as of the last server report
    unreported_chars: int = 0  # text appended since then
    capped_by_context: bool = False  # the last call's max_tokens was cut to fit the window
    shown_queries: frozenset[str] = frozenset()  # example queries in the instruction

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def text_sink(self) -> TextSink | None:
        """Generated text for a listener; None when no one listens, so that a model
        stream cut off midway can be resent (nothing shown has to be taken back)."""
        if self.on_event is None:
            return None
        return lambda text: self.emit(TextDelta(text))

    def append(self, text: str, *, generated: bool = False) -> None:
        self.prompt = self.prompt.extend(text)
        self.unreported_chars += len(text)
        if not generated and text:
            self.emit(TextDelta(text, inserted=True))

    def reopen_thinking(self) -> None:
        """Before a result goes in: a query written after `</think>` gets it inside the
        thinking (see markers.reopen_thinking); the trace's steps keep the model's text."""
        text = mk.reopen_thinking(self.prompt.continuation)
        if text != self.prompt.continuation:
            self.prompt = dataclasses.replace(self.prompt, continuation=text)

    def phase(self, name: Phase) -> AbstractAsyncContextManager[None]:
        return self.gate(name) if self.gate is not None else contextlib.nullcontext()

    def tokens_estimate(self) -> int:
        return self.known_tokens + estimate_tokens(self.unreported_chars) + 1


class Engine:
    """Runs questions through one model, one search backend and a reader.

    `options` holds everything the engine reads (limits, sampling, reader and search
    options); `documents` turns hits into documents (default: each hit's own text).
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
        limits = options.limits
        self.reader = Reader(
            reader_llm or llm,
            sampling=options.reader.sampling or options.sampling,
            max_tokens=options.reader.max_tokens or limits.call_budget(0),
            prompts=options.prompts,
        )
        self.documents = documents or LocalDocuments(options.search.max_doc_chars)

    def with_options(self, options: EngineOptions) -> Engine:
        """An Engine over the same model, search and documents with other options."""
        return Engine(
            self.llm, self.search, options=options, reader_llm=self.reader.llm,
            documents=self.documents,
        )  # fmt: skip

    # ------------------------------------------------------------------ the loop

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
        chain = _Chain(Trace(question, spec.name), Prompt(()), task, spec, on_event, gate)
        try:
            chain.prompt = await self._opening(question, chain)
            chain.shown_queries = shown_queries(chain.prompt)
            chain.unreported_chars = sum(len(m.content) for m in chain.prompt.messages)
            await self._loop(chain)
        except ContextOverflowError as e:
            self._finish(chain, FinishReason.CONTEXT_OVERFLOW, error=str(e))
        except BackendError as e:
            self._finish(chain, FinishReason.ERROR, error=str(e))
        chain.trace.latency_s = time.perf_counter() - start
        chain.trace.prompt = chain.prompt
        chain.emit(Finished(chain.trace))
        return chain.trace

    async def _loop(self, chain: _Chain) -> None:
        if self._tools_mode(chain.method):
            await run_tools_chain(self, chain)
            return
        if self._force_search(chain) and not await self._forced_query(chain):
            return
        for turn in range(len(chain.trace.steps), self.options.limits.max_turns):
            budget = await self._token_budget(chain)
            if budget is None:
                return
            completion = await self._generate(chain, budget)
            chain.append(completion.text, generated=True)
            record = await self._handle_stop(chain, completion)
            chain.trace.steps.append(Step(turn, completion.text, completion, record))
            if record is None:
                self._finish_generation(chain, completion)
                return
        self._finish(chain, FinishReason.MAX_TURNS)

    async def _generate(self, chain: _Chain, max_tokens: int) -> Completion:
        async with chain.phase("generate"):
            completion = await self.llm.complete(
                CompletionRequest(
                    chain.prompt,
                    stop=list(chain.method.stops),
                    max_tokens=max_tokens,
                    sampling=self.options.sampling,
                ),
                on_text=chain.text_sink(),
            )
        chain.trace.usage += Usage(completion.prompt_tokens, completion.completion_tokens)
        if completion.prompt_tokens:
            chain.known_tokens = completion.prompt_tokens + completion.completion_tokens
            chain.unreported_chars = 0
        return completion

    async def _handle_stop(self, chain: _Chain, completion: Completion) -> SearchRecord | None:
        """Act on the stop string that ended a generation; None means the chain is done."""
        stops = chain.method.stops
        # A server that neither returns nor reports its stop string leaves a query open.
        unreported = completion.stop is None and completion.finish == "stop"
        if mk.END_QUERY in stops and unreported and mk.left_open(completion.text):
            completion = dataclasses.replace(completion, stop=mk.END_QUERY)
        if completion.stop in (mk.END_QUERY, mk.END_URL):
            chain.reopen_thinking()
        if completion.stop == mk.END_QUERY:
            chain.append(mk.END_QUERY)
            query = mk.last_between(completion.text, mk.BEGIN_QUERY, mk.END_QUERY) or ""
            return await answer_query(self, chain, query)
        if completion.stop == mk.END_URL:
            chain.append(mk.END_URL)
            url = mk.last_between(completion.text, mk.BEGIN_URL, mk.END_URL) or ""
            return await read_url(self, chain, url)
        return None

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
            tool_llm(self)
        if method.needs_search and self.search is None:
            raise ConfigError(
                f"the {method.name} method needs a search backend, and none is configured"
            )

    # ------------------------------------------------------------------ finishing

    async def _token_budget(self, chain: _Chain) -> int | None:
        """Tokens the next call may generate; None (and the chain finished) if none."""
        limits = self.options.limits
        budget = limits.call_budget(chain.trace.usage.completion_tokens)
        if budget <= 0:
            self._finish(chain, FinishReason.MAX_TOKENS)
            return None
        # The model caches its own window; a configured one may only make it smaller.
        context = await self.llm.context_length()
        if limits.context_length is not None:
            context = min(context or limits.context_length, limits.context_length)
        chain.capped_by_context = False
        if context is not None:
            room = context - chain.tokens_estimate()
            if room <= 0:
                # Before any generation the question itself is too long: say by how much.
                why = None
                if not chain.trace.usage.completion_tokens:
                    used = f"about {chain.tokens_estimate()} tokens"
                    why = f"the prompt is {used}, over the model's context window of {context}"
                self._finish(chain, FinishReason.CONTEXT_OVERFLOW, error=why)
                return None
            chain.capped_by_context = room < budget
            budget = min(budget, room)
        return budget

    def _finish_generation(self, chain: _Chain, completion: Completion) -> None:
        if completion.finish != "length":
            reason = FinishReason.ANSWERED
        elif chain.capped_by_context:
            reason = FinishReason.CONTEXT_OVERFLOW  # cut by the window, not by the budget
        else:
            reason = FinishReason.MAX_TOKENS
        self._finish(chain, reason)

    def _finish(self, chain: _Chain, reason: FinishReason, *, error: str | None = None) -> None:
        trace = chain.trace
        # Only the model's own words count: a retrieved page with a \boxed{} in it must not
        # become the answer.
        trace.answer = extract_answer("".join(st.text for st in trace.steps), chain.task)
        if reason is FinishReason.ANSWERED and trace.answer is None:
            reason = FinishReason.NO_ANSWER
        trace.finish_reason = reason
        trace.error = error

    # ------------------------------------------------------------------ opening

    async def _opening(self, question: str, chain: _Chain) -> Prompt:
        """The method's opening message (rag: after searching for the question)."""
        documents: tuple[Document, ...] | None = None
        if chain.method.retrieve_first:
            documents = await self._rag_documents(chain, question)
        opening = Opening(
            chain.task, question, self.options.limits,
            None if documents is None else _documents_text(documents),
            self.options.prompts, page_fields(documents or ()),
        )  # fmt: skip
        write = chain.method.opening
        if self._tools_mode(chain.method) and chain.method.tool_opening is not None:
            write = chain.method.tool_opening
        return Prompt((Message("user", write(opening)),))

    async def _rag_documents(self, chain: _Chain, question: str) -> tuple[Document, ...]:
        record = await run_search(self, chain, question, mode="documents")
        chain.trace.steps.append(Step(0, "", Completion("", "stop"), record))
        return record.documents

    def _force_search(self, chain: _Chain) -> bool:
        allowed = self.options.limits.max_searches > 0  # --max-searches 0: no search at all
        return self.options.force_search and chain.method.forceable and allowed

    async def _forced_query(self, chain: _Chain) -> bool:
        """Open the chain with a one-line query (for models too small to write one).

        False when the token budget left nothing to generate (the chain is finished).
        """
        budget = await self._token_budget(chain)
        if budget is None:
            return False
        chain.append(mk.BEGIN_QUERY)
        async with chain.phase("generate"):
            completion = await self.llm.complete(
                CompletionRequest(
                    chain.prompt,
                    stop=[mk.END_QUERY, "\n"],
                    max_tokens=min(FORCED_QUERY_TOKENS, budget),
                    sampling=self.options.sampling,
                    grammar=_FORCED_QUERY_GRAMMAR,
                ),
                on_text=chain.text_sink(),
            )
        chain.trace.usage += Usage(completion.prompt_tokens, completion.completion_tokens)
        written = " ".join(completion.text.split())
        question = chain.trace.question
        # Not a plausible query (blank, a made-up statement, a placeholder, off topic):
        # search for the question itself. The model's own words stay in the step's
        # completion, so the trace shows what was replaced.
        ok = plausible_forced_query(written, question, chain.shown_queries)
        query = written if ok else " ".join(question.split())
        chain.append(query, generated=ok)
        chain.append(mk.END_QUERY)
        record = await answer_query(self, chain, query)
        text = mk.BEGIN_QUERY + query + mk.END_QUERY
        chain.trace.steps.append(Step(0, text, completion, record))
        return True


def _documents_text(documents: Sequence[Document]) -> str:
    return format_documents(documents) if documents else "(none found)"
