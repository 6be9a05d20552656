"""Queries not worth searching: a forced first query that is no query (it falls back to
the question, within the limits), and placeholders copied from our own instructions."""

from __future__ import annotations

import doctest

from search_o1 import markers as mk
from search_o1 import queries
from search_o1.engine import FORCED_QUERY_TOKENS, ChainLimits, Engine, EngineOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.types import FinishReason, Hit

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY
TOSCA = "Which country is the birthplace of the composer of the opera Tosca?"


def forced(**limits: int) -> EngineOptions:
    return EngineOptions(limits=ChainLimits(**limits), force_search=True)


def everything(query: str) -> list[Hit]:
    return [Hit("p", "Puccini", f"Giacomo Puccini, born in Lucca, Italy ({query}).")]


def test_doctests() -> None:
    result = doctest.testmod(queries)
    assert result.failed == 0 and result.attempted > 0


# ---------------------------------------------------------------- 13.11 forced search


async def test_forced_search_is_skipped_when_no_search_is_allowed() -> None:
    model = ScriptedLLM(["\\boxed{Italy}"])
    search = MemorySearch(everything)
    trace = await Engine(model, search, options=forced(max_searches=0)).run(TOSCA)
    assert search.queries == [] and not trace.searches
    assert model.prompts[0].continuation == ""  # the chain did not open with a query marker
    assert trace.answer == "Italy"


async def test_forced_query_obeys_the_token_budget() -> None:
    model = ScriptedLLM(["Tosca composer birthplace", "x" * 400])
    search = MemorySearch(everything)
    options = forced(max_total_tokens=5)
    trace = await Engine(model, search, options=options).run(TOSCA)
    assert model.requests[0].max_tokens == 5 < FORCED_QUERY_TOKENS
    assert trace.usage.completion_tokens <= 5
    assert trace.finish_reason is FinishReason.MAX_TOKENS


async def test_forced_query_with_no_budget_left_generates_nothing() -> None:
    # The instruction alone fills the window: nothing is generated, not even a query.
    model = ScriptedLLM(["Tosca composer birthplace"], context=50)
    trace = await Engine(model, MemorySearch(everything), options=forced()).run(TOSCA)
    assert model.requests == [] and trace.finish_reason is FinishReason.CONTEXT_OVERFLOW


async def test_a_made_up_statement_falls_back_to_the_question() -> None:
    model = ScriptedLLM(["Tosca was written by Verdi in 1890.", "\\boxed{Italy}"])
    search = MemorySearch(everything)
    trace = await Engine(model, search, options=forced(), reader_llm=ScriptedLLM([])).run(TOSCA)
    assert search.queries == [TOSCA]
    first = trace.steps[0]
    assert first.text == f"{Q}{TOSCA}{EQ}"
    assert first.completion.text == "Tosca was written by Verdi in 1890."  # kept on record
    assert trace.output.startswith(f"{Q}{TOSCA}{EQ}")


async def test_an_off_topic_or_overlong_forced_query_falls_back_to_the_question() -> None:
    for written in ("Eiffel Tower height", "Tosca " + "opera composer birthplace " * 6):
        model = ScriptedLLM([written, "\\boxed{Italy}"])
        search = MemorySearch(everything)
        await Engine(model, search, options=forced(), reader_llm=ScriptedLLM([])).run(TOSCA)
        assert search.queries == [TOSCA], written


async def test_a_plausible_forced_query_is_searched_as_written() -> None:
    model = ScriptedLLM(["  Tosca composer   birthplace", "\\boxed{Italy}"])
    search = MemorySearch(everything)
    await Engine(model, search, options=forced(), reader_llm=ScriptedLLM([])).run(TOSCA)
    assert search.queries == ["Tosca composer birthplace"]


# ---------------------------------------------------------------- 13.12 placeholders


async def test_placeholder_queries_are_not_searched_and_the_model_is_told() -> None:
    model = ScriptedLLM(
        [
            f"{Q}your query{EQ}",
            f"{Q} and {EQ}",
            # The worked example of the qa instruction, unrelated to this question.
            f"{Q}Eiffel Tower structural design engineer{EQ}",
            f"{Q}Puccini birthplace{EQ}",
            "\\boxed{Italy}",
        ]
    )
    search = MemorySearch(everything)
    options = EngineOptions(limits=ChainLimits(max_searches=1))
    trace = await Engine(model, search, options=options, reader_llm=ScriptedLLM([])).run(TOSCA)
    outcomes = [s.outcome for s in trace.searches]
    assert outcomes == ["placeholder", "placeholder", "placeholder", "searched"]
    assert search.queries == ["Puccini birthplace"]  # placeholders used up no search
    assert 'The query "your query" was copied from the instructions' in trace.output
    assert trace.searches[0].inserted.startswith(f"\n\n{mk.BEGIN_RESULT}")
    assert trace.answer == "Italy"


async def test_an_example_query_that_is_the_question_is_searched() -> None:
    model = ScriptedLLM([f"{Q}Eiffel Tower structural design engineer{EQ}", "\\boxed{Koechlin}"])
    search = MemorySearch(everything)
    engine = Engine(model, search, reader_llm=ScriptedLLM([]))
    trace = await engine.run("Who designed the structure of the Eiffel Tower?")
    assert [s.outcome for s in trace.searches] == ["searched"]
    assert search.queries == ["Eiffel Tower structural design engineer"]
