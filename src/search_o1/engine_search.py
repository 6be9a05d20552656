"""Answering one query of a chain: the refusals (blank, repeated, a placeholder, over the
limit), the search, reading the hits, Reason-in-Documents, and the block that goes in.

Apart from engine.py so that the loop reads as one loop; tools mode (engine_tools) answers
its calls with the same functions, so both paths keep one rule for every query.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Literal

from search_o1 import markers as mk
from search_o1.agent_pages import read_pages
from search_o1.errors import BackendError, ConfigError
from search_o1.queries import not_searched
from search_o1.reader import format_documents, format_hits
from search_o1.types import Document, Hit, SearchFinished, SearchRecord, SearchStarted

if TYPE_CHECKING:
    from search_o1.engine import Engine, _Chain

# What a search's hits become: listed as they are, read into documents, or also refined.
Mode = Literal["raw", "documents", "reader"]


async def answer_query(engine: Engine, chain: _Chain, query: str) -> SearchRecord:
    """Answer a query the model wrote: its block goes into the chain, its record back."""
    chain.emit(SearchStarted(query))
    record = refusal(engine, chain, query)
    if record is None:
        chain.searches += 1
        record = await run_search(engine, chain, query, mode=answer_mode(engine, chain))
        if record.outcome == "searched":
            chain.results[query] = record.inserted
    chain.append(record.inserted)
    chain.emit(SearchFinished(record))
    return record


def refusal(engine: Engine, chain: _Chain, query: str) -> SearchRecord | None:
    """The record of a query that is not searched (blank, repeated, a placeholder,
    over the limit), or None to search it.

    Ours: a repeat gets its earlier result again, before the limit is checked. The
    paper's ("notice"): the limit first, then a notice for a repeat (rag-agent: no
    text at all for a repeat). Notices come from the prompt set.
    """
    paper = engine.options.repeated_query == "notice"
    limit = engine.options.limits.max_searches
    record = not_searched(
        query, context=f"{chain.trace.question}\n{chain.prompt.continuation}",
        shown=chain.shown_queries, earlier={} if paper else chain.results,
        searches_left=limit - chain.searches,
    )  # fmt: skip
    if record is None and query in chain.results:  # the paper's repeat, after the limit
        text = engine.options.prompts.notice("repeat", chain.task, query=query)
        silent = chain.method.answer == "raw"
        record = SearchRecord(query, "repeated", inserted="" if silent else mk.result_block(text))
    elif record is not None and record.outcome in ("empty", "limit"):
        text = engine.options.prompts.notice(
            record.outcome, chain.task, query=query, max_searches=limit
        )
        record = dataclasses.replace(record, inserted=mk.result_block(text))
    return record


def answer_mode(engine: Engine, chain: _Chain) -> Mode:
    answer = chain.method.answer
    if answer == "none" or (answer == "reader" and not engine.options.reader.enabled):
        return "documents"
    return answer


async def run_search(engine: Engine, chain: _Chain, query: str, *, mode: Mode) -> SearchRecord:
    """Search; then "raw": list the hits; "documents": read them; "reader": also refine."""
    start = time.perf_counter()
    if engine.search is None:  # Engine checked the method; a method's bug lands here
        raise ConfigError(f"the {chain.method.name} method searched without a backend")
    hits: tuple[Hit, ...] = ()
    documents: tuple[Document, ...] = ()
    reader = None
    try:
        async with chain.phase("search"):
            hits = tuple(await engine.search.search(query, k=engine.options.search.top_k))
            if mode != "raw":
                documents = tuple(await engine.documents.read(query, hits))
        if mode == "raw":
            chain.seen_hits.update({h.url or h.id: h for h in hits})
            inserted = format_hits(hits)
        elif mode == "documents":
            inserted = format_documents(documents)
        else:
            async with chain.phase("read"):
                reader = await engine.reader.refine(
                    chain.prompt.continuation, query, documents, task=chain.task
                )
            chain.trace.reader_usage += reader.usage
            inserted = reader.refined
    except BackendError as e:
        # Failures are data: recorded, and told to the model, which carries on. A reader
        # that overflows its context lands here too rather than ending the chain.
        note = f"The search failed ({e}). Continue without it or try another query."
        return SearchRecord(query, "failed", hits=hits, documents=documents, error=str(e),
                            inserted=mk.result_block(mk.neutralise(note)),
                            latency_s=time.perf_counter() - start)  # fmt: skip
    block = mk.result_block(inserted)
    if reader is not None and engine.options.reader.one_line:
        # The paper's shape: the facts on one line, tight between the markers.
        block = f"\n\n{mk.BEGIN_RESULT}{inserted.replace(chr(10), '')}{mk.END_RESULT}\n\n"
    return SearchRecord(query, "searched", hits=hits, documents=documents, reader=reader,
                        inserted=block,
                        latency_s=time.perf_counter() - start)  # fmt: skip


async def read_url(engine: Engine, chain: _Chain, request: str) -> SearchRecord:
    """rag-agent: the model asked for pages it saw in earlier results (a,b: several)."""
    chain.emit(SearchStarted(request))
    record = await read_pages(chain, request, engine.documents, engine.options)
    chain.append(record.inserted)
    chain.emit(SearchFinished(record))
    return record
