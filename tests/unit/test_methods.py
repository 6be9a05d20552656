"""The method table and the engine's narrow inputs: what each method declares, a new
method as one entry, and how the pipeline maps Settings onto EngineOptions."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from search_o1 import markers as mk
from search_o1.cli import cli
from search_o1.config import load_settings
from search_o1.engine import (
    METHODS,
    ChainLimits,
    Engine,
    EngineOptions,
    Method,
    Opening,
    get_method,
    register_method,
)
from search_o1.errors import ConfigError
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import engine_options
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY


@pytest.fixture
def table() -> Iterator[dict[str, Method]]:
    """The method table, restored after a test that registers its own."""
    saved = dict(METHODS)
    yield METHODS
    METHODS.clear()
    METHODS.update(saved)


def test_the_paper_methods_are_declared() -> None:
    assert list(METHODS) == ["direct", "rag", "rag-agent", "search-o1"]
    direct, rag, agent, s_o1 = (METHODS[n] for n in METHODS)
    assert not direct.needs_search and direct.answer == "none" and direct.stops == ()
    assert rag.retrieve_first and rag.needs_search and not rag.forceable
    assert agent.answer == "raw" and mk.END_URL in agent.stops and agent.forceable
    assert s_o1.answer == "reader" and s_o1.stops == (EQ,) and s_o1.forceable


def test_unknown_method_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known: direct, rag, rag-agent, search-o1"):
        get_method("nope")


def test_registering_checks_the_declaration(table: dict[str, Method]) -> None:
    with pytest.raises(ConfigError, match="already registered"):
        register_method(METHODS["direct"])
    with pytest.raises(ConfigError, match="needs search"):
        register_method(Method("x", "", lambda o: o.question, stops=(EQ,), answer="documents"))
    with pytest.raises(ConfigError, match="cannot answer"):
        register_method(Method("y", "", lambda o: o.question, stops=(EQ,), needs_search=True))


async def test_a_new_method_is_one_entry(table: dict[str, Method]) -> None:
    """A method that shows the documents themselves (no reader) with a terse opening."""

    def opening(o: Opening) -> str:
        return f"Search with {Q}...{EQ} at most {o.limits.max_searches} times.\n{o.question}"

    register_method(
        Method("terse", "terse", opening, stops=(EQ,), answer="documents", needs_search=True)
    )
    model = ScriptedLLM([f"{Q}amelie{EQ}", "\\boxed{Jeunet}"])
    search = MemorySearch({"amelie": [Hit("1", "Amélie", "Directed by Jeunet.")]})
    options = EngineOptions(limits=ChainLimits(max_searches=2))
    trace = await Engine(model, search, options=options).run("Who?", method="terse")
    assert model.prompts[0].messages[0].content == f"Search with {Q}...{EQ} at most 2 times.\nWho?"
    assert "Directed by Jeunet." in trace.output and trace.searches[0].reader is None
    assert trace.method == "terse" and trace.answer == "Jeunet"


async def test_a_method_that_needs_search_refuses_to_run_without_it() -> None:
    with pytest.raises(ConfigError, match="search-o1 method needs a search backend"):
        await Engine(ScriptedLLM([]), None).run("q?")


async def test_direct_never_searches_even_if_the_model_writes_a_query() -> None:
    # No stop strings: an unterminated query at the end is text, not a search request.
    model = ScriptedLLM([f"Let me look it up {Q}director"])
    trace = await Engine(model, None).run("q?", method="direct")
    assert not trace.searches and trace.finish_reason is not None


def test_the_cli_offers_the_methods_of_the_table() -> None:
    for command in ("ask", "eval"):
        out = CliRunner().invoke(cli, [command, "--help"]).output
        assert "direct|rag|rag-agent|search-o1" in out.replace(" ", ""), command


def test_settings_map_onto_engine_options() -> None:
    settings = load_settings(
        {
            "base_url": "http://x/v1",
            "max_searches": 3,
            "max_call_tokens": 99,
            "reader": False,
            "top_k": 4,
            "temperature": 0.1,
            "task": "math",
        },
        environ={},
    )
    options = engine_options(settings)
    # --max-call-tokens is per call; no total budget unless --max-total-tokens is given.
    assert options.limits == ChainLimits(max_searches=3, max_total_tokens=None, max_call_tokens=99)
    assert not options.reader.enabled and options.search.top_k == 4
    assert options.sampling.temperature == 0.1 and options.task == "math"
    assert options.force_search is False  # an HTTP model writes its own queries


def test_forced_search_is_decided_by_the_pipeline() -> None:
    embedded = load_settings({"backend": "embedded"}, environ={})
    assert engine_options(embedded).force_search is True
    told = load_settings({"backend": "embedded", "force_search": False}, environ={})
    assert engine_options(told).force_search is False
    http = load_settings({"base_url": "http://x/v1", "force_search": True}, environ={})
    assert engine_options(http).force_search is True


def test_options_are_validated_and_frozen() -> None:
    with pytest.raises(ConfigError, match=r"limits\.max_turns must be at least 1"):
        ChainLimits(max_turns=0)
    with pytest.raises(ConfigError, match="unknown task"):
        EngineOptions(task="poetry")  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ChainLimits().max_searches = 1  # type: ignore[misc]


async def test_per_call_cap_is_separate_from_the_question_budget() -> None:
    reply = "x" * 400  # 100 estimated tokens
    model = ScriptedLLM([reply, reply])
    limits = ChainLimits(max_total_tokens=1000, max_call_tokens=10, max_turns=1)
    trace = await Engine(model, None, options=EngineOptions(limits=limits)).run(
        "q?", method="direct"
    )
    assert trace.usage.completion_tokens == 10


def test_token_estimate_doctests() -> None:
    import doctest

    from search_o1 import tokens

    result = doctest.testmod(tokens)
    assert result.failed == 0 and result.attempted > 0


def test_a_configured_window_can_only_shrink_the_models() -> None:
    def run(model_window: int | None, configured: int | None) -> int:
        model = ScriptedLLM(["x" * 40_000], context=model_window)
        limits = ChainLimits(context_length=configured, max_turns=1)
        engine = Engine(model, None, options=EngineOptions(limits=limits))
        trace = asyncio.run(engine.run("q?", method="direct"))
        return trace.usage.completion_tokens + trace.usage.prompt_tokens

    assert run(2000, None) <= 2000 and run(2000, 500) <= 500
    assert run(500, 2000) <= 500  # a larger configured window does not widen the model's
    assert 500 < run(None, 2000) <= 2000
