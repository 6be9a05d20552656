"""Answering one query of a chain: the refusals (blank, repeated, a placeholder, over the
limit), the search, reading the hits, Reason-in-Documents, and the block that goes in.

Both turn drivers (query markers and tool calls) answer their queries here, so every
query follows one rule whichever way the model asked.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Literal

from search_o1 import markers as mk
from search_o1 import queries
from search_o1.engine.options import EngineOptions
from search_o1.engine.pages import read_pages
from search_o1.engine.state import ChainState
from search_o1.errors import BackendError, ConfigError
from search_o1.prompts.templates import PageRecord, hit_fields, page_fields
from search_o1.reader import Reader, format_documents, format_hits
from search_o1.search.base import DocumentSource, Search
from search_o1.types import Document, Hit, SearchFinished, SearchRecord, SearchStarted

__all__ = ["Mode", "QueryAnswerer"]

# What a search's hits become: listed as they are, read into documents, or also refined.
Mode = Literal["raw", "documents", "reader"]


class QueryAnswerer:
    """Answers a chain's queries and page requests with one search backend, one
    document source and one reader, under one set of options."""

    def __init__(
        self,
        search: Search | None,
        documents: DocumentSource,
        reader: Reader,
        options: EngineOptions,
    ) -> None:
        self.search = search
        self.documents = documents
        self.reader = reader
        self.options = options

    async def answer(self, state: ChainState, query: str) -> SearchRecord:
        """Answer a query the model wrote: its block goes into the chain, its record back."""
        state.emit(SearchStarted(query))
        record = self.refusal(state, query)
        if record is None:
            state.searches += 1
            record = await self.run_search(state, query, mode=self.mode(state))
            if record.outcome == "searched":
                state.results[query] = record.inserted
        state.append(record.inserted)
        state.emit(SearchFinished(record))
        return record

    def refusal(self, state: ChainState, query: str) -> SearchRecord | None:
        """The record of a query that is not searched (blank, repeated, a placeholder,
        over the limit), or None to search it.

        Ours: a repeat gets its earlier result again, before the limit is checked. The
        paper's ("notice"): the limit first, then a notice for a repeat (rag-agent: no
        text at all for a repeat). Notices come from the prompt set.
        """
        paper = self.options.repeated_query == "notice"
        limit = self.options.limits.max_searches
        record = queries.refusal(
            query,
            context=f"{state.trace.question}\n{state.prompt.continuation}",
            shown=state.shown_queries,
            earlier={} if paper else state.results,
            searches_left=limit - state.searches,
            placeholders=self.options.refuse_placeholders,
        )
        prompts = self.options.prompts
        if record is None and query in state.results:  # the paper's repeat, after the limit
            text = prompts.notice("repeat", state.task, query=query)
            silent = state.method.answer == "raw"
            inserted = "" if silent else self._notice(text)
            record = SearchRecord(query, "repeated", inserted=inserted)
        elif record is not None and record.outcome in ("empty", "limit"):
            text = prompts.notice(record.outcome, state.task, query=query, max_searches=limit)
            # A blank query ends the paper's chain: its notice is ours, spaced as ours.
            block = self._notice(text) if record.outcome == "limit" else mk.result_block(text)
            record = dataclasses.replace(record, inserted=block)
        return record

    def _notice(self, text: str) -> str:
        """A notice's block: the paper's (the text as rendered) or ours."""
        return mk.paper_result_block(text) if self.options.paper_inserts else mk.result_block(text)

    def _raw_results(self, hits: tuple[Hit, ...], records: list[PageRecord]) -> str:
        """rag-agent's raw results: the paper's (the records as indented JSON) or ours."""
        if self.options.paper_inserts:
            return mk.paper_result_block(json.dumps(records, ensure_ascii=False, indent=2))
        return mk.result_block(format_hits(hits))

    def mode(self, state: ChainState) -> Mode:
        """What the chain's method makes of hits (documents when the reader is off)."""
        answer = state.method.answer
        if answer == "none" or (answer == "reader" and not self.options.reader.enabled):
            return "documents"
        return answer

    async def run_search(self, state: ChainState, query: str, *, mode: Mode) -> SearchRecord:
        """Search; then "raw": list the hits; "documents": read them; "reader": also refine."""
        start = time.perf_counter()
        if self.search is None:  # Engine checked the method; a method's bug lands here
            raise ConfigError(f"the {state.method.name} method searched without a backend")
        hits: tuple[Hit, ...] = ()
        documents: tuple[Document, ...] = ()
        reader = None
        try:
            async with state.phase("search"):
                hits = tuple(await self.search.search(query, k=self.options.search.top_k))
                if mode != "raw":
                    documents = tuple(await self.documents.read(query, hits))
            if mode == "raw":
                state.seen_hits.update({h.url or h.id: h for h in hits})
                found = hits
                block = self.options.prompts.results(
                    state.task,
                    query,
                    hit_fields(found),
                    lambda records: self._raw_results(found, records),
                )
            elif mode == "documents":
                read = documents
                text = self.options.prompts.documents(
                    state.task, page_fields(read), lambda: format_documents(read)
                )
                block = self._block(text, refined=False)
            else:
                async with state.phase("read"):
                    reader = await self.reader.refine(
                        state.prompt.continuation, query, documents, task=state.task
                    )
                state.trace.reader_usage += reader.usage
                block = self._block(reader.refined, refined=True)
        except BackendError as e:
            # Failures are data: recorded, and told to the model, which carries on. A
            # reader that overflows its context lands here too rather than ending the chain.
            note = f"The search failed ({e}). Continue without it or try another query."
            return SearchRecord(
                query,
                "failed",
                hits=hits,
                documents=documents,
                error=str(e),
                inserted=mk.result_block(mk.neutralise(note)),
                latency_s=time.perf_counter() - start,
            )
        return SearchRecord(
            query,
            "searched",
            hits=hits,
            documents=documents,
            reader=reader,
            inserted=block,
            latency_s=time.perf_counter() - start,
        )

    def _block(self, inserted: str, *, refined: bool) -> str:
        reader = self.options.reader
        if refined and reader.one_line:
            # The paper's shape: tight between the markers. The paper's parse has removed
            # line breaks where its script does (not from "Modified Reasoning Steps").
            facts = inserted if reader.paper else inserted.replace("\n", "")
            return mk.paper_facts_block(facts)
        return mk.result_block(inserted)

    async def read_url(self, state: ChainState, request: str) -> SearchRecord:
        """rag-agent: the model asked for pages it saw in earlier results (a,b: several)."""
        state.emit(SearchStarted(request))
        record = await read_pages(state, request, self.documents, self.options)
        state.append(record.inserted)
        state.emit(SearchFinished(record))
        return record
