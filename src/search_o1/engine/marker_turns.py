"""Turns of a chain that asks for searches in its own text: a query between the query
markers (or, for rag-agent, page addresses between the URL markers) ends a generation on
the end marker, the system inserts the answer, and the model continues the same text.
"""

from __future__ import annotations

import dataclasses

from search_o1 import markers as mk
from search_o1.engine.answering import QueryAnswerer
from search_o1.engine.finish import next_call_tokens
from search_o1.engine.loop import Turn
from search_o1.engine.options import EngineOptions
from search_o1.engine.state import ChainState
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.queries import plausible_forced_query
from search_o1.types import Completion, SearchRecord, Step, Usage

__all__ = ["FORCED_QUERY_TOKENS", "MarkerTurns"]

# Tokens for a forced one-line query (the grammar allows 120 characters). The grammar
# lets the query end the way a model ends one (a line break or the end marker, both stop
# strings); without an ending it would run on to the token limit.
FORCED_QUERY_TOKENS = 48
_FORCED_QUERY_GRAMMAR = f'root ::= [^\\n<>|]{{3,120}} ("\\n" | "{mk.END_QUERY}")'


class MarkerTurns:
    """A `TurnDriver` for raw-text continuation with query markers."""

    def __init__(self, llm: LLM, options: EngineOptions, answerer: QueryAnswerer) -> None:
        self.llm = llm
        self.options = options
        self.answerer = answerer

    async def open(self, state: ChainState) -> bool:
        """A forced first search when the options ask for one; False if no tokens were
        left to write it (the chain is finished)."""
        if not self._forces_search(state):
            return True
        return await self._forced_query(state)

    async def turn(self, state: ChainState, index: int, max_tokens: int) -> Turn:
        completion = await self._generate(state, max_tokens)
        state.append(completion.text, generated=True)
        record = await self._handle_stop(state, completion)
        return Turn(completion.text, completion, () if record is None else (record,))

    async def _generate(self, state: ChainState, max_tokens: int) -> Completion:
        request = CompletionRequest(
            state.prompt,
            stop=list(state.method.stops),
            max_tokens=max_tokens,
            sampling=self.options.sampling,
        )
        async with state.phase("generate"):
            completion = await self.llm.complete(request, on_text=state.text_sink())
        state.count_usage(completion.prompt_tokens, completion.completion_tokens)
        return completion

    async def _handle_stop(self, state: ChainState, completion: Completion) -> SearchRecord | None:
        """Act on the stop string that ended a generation; None means the chain is done."""
        # A server that neither returns nor reports its stop string leaves a query open.
        unreported = completion.stop is None and completion.finish == "stop"
        if mk.END_QUERY in state.method.stops and unreported and mk.left_open(completion.text):
            completion = dataclasses.replace(completion, stop=mk.END_QUERY)
        if completion.stop in (mk.END_QUERY, mk.END_URL):
            state.reopen_thinking()
        if completion.stop == mk.END_QUERY:
            state.append(mk.END_QUERY)
            query = mk.last_between(completion.text, mk.BEGIN_QUERY, mk.END_QUERY) or ""
            return await self.answerer.answer(state, query)
        if completion.stop == mk.END_URL:
            state.append(mk.END_URL)
            url = mk.last_between(completion.text, mk.BEGIN_URL, mk.END_URL) or ""
            return await self.answerer.read_url(state, url)
        return None

    def _forces_search(self, state: ChainState) -> bool:
        allowed = self.options.limits.max_searches > 0  # --max-searches 0: no search at all
        return self.options.force_search and state.method.forceable and allowed

    async def _forced_query(self, state: ChainState) -> bool:
        """Open the chain with a one-line query (for models too small to write one)."""
        budget = await next_call_tokens(state, self.options.limits, self.llm)
        if budget is None:
            return False
        state.append(mk.BEGIN_QUERY)
        request = CompletionRequest(
            state.prompt,
            stop=[mk.END_QUERY, "\n"],
            max_tokens=min(FORCED_QUERY_TOKENS, budget),
            sampling=self.options.sampling,
            grammar=_FORCED_QUERY_GRAMMAR,
        )
        async with state.phase("generate"):
            completion = await self.llm.complete(request, on_text=state.text_sink())
        # Usage only: the query that goes in may not be the text the server counted.
        state.trace.usage += Usage(completion.prompt_tokens, completion.completion_tokens)
        written = " ".join(completion.text.split())
        question = state.trace.question
        # Not a plausible query (blank, a made-up statement, a placeholder, off topic):
        # search for the question itself. The model's own words stay in the step's
        # completion, so the trace shows what was replaced.
        ok = plausible_forced_query(written, question, state.shown_queries)
        query = written if ok else " ".join(question.split())
        state.append(query, generated=ok)
        state.append(mk.END_QUERY)
        record = await self.answerer.answer(state, query)
        text = mk.BEGIN_QUERY + query + mk.END_QUERY
        state.trace.steps.append(Step(0, text, completion, record))
        return True
