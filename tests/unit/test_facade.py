"""The library's front door: `ask`/`aask`, `Pipeline` and `Engine` as context managers,
a scripted model whose reader replies are its own, methods from plugins, and the
public names of `search_o1`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.plugin_dist import METHOD_ENTRY_POINTS, MODULE, make_plugin

import search_o1
from search_o1 import (
    ConfigError,
    Engine,
    EngineOptions,
    FinishReason,
    MemorySearch,
    Pipeline,
    ReaderOptions,
    ScriptedLLM,
    aask,
    ask,
    load_settings,
)
from search_o1.engine import METHODS, get_method, method_names
from search_o1.markers import BEGIN_QUERY, END_QUERY

QUERY = f"I need the director. {BEGIN_QUERY}Amélie director{END_QUERY}"
ANSWER = r"So \boxed{Jean-Pierre Jeunet}."
FACTS = "**Final Information**\n\nAmélie was directed by Jean-Pierre Jeunet."


def corpus() -> MemorySearch:
    return MemorySearch({"Amélie director": [{"id": "a", "title": "Amélie", "text": "Jeunet."}]})


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("SEARCH_O1_")]:
        monkeypatch.delenv(name)


def test_the_public_names_are_these() -> None:
    # A change here is a change of the public API: make it on purpose.
    assert sorted(search_o1.__all__) == sorted(
        [
            *("LLM", "METHODS", "Answer", "BackendError", "Cache", "CacheError"),
            *("ChainLimits", "ChainState", "Completion", "CompletionRequest", "ConfigError"),
            *("ContextOverflowError", "Document", "DocumentSource", "Engine", "EngineOptions"),
            *("Event", "EventSink", "FetchError", "FinishReason", "Finished", "Hit"),
            *("InputFileError", "LLMFactory", "MemorySearch", "Message", "Method"),
            *("MissingExtraError", "Opening", "Pipeline", "Prompt", "QueueFull"),
            *("ReaderOptions", "ReaderResult", "ReplayMissError", "Sampling", "ScriptedLLM"),
            *("Search", "SearchFactory", "SearchFinished", "SearchO1Error", "SearchOptions"),
            *("SearchRecord", "SearchStarted", "Settings", "Source", "Step", "TextDelta"),
            "Trace",
            *("Usage", "aask", "ask", "build_llm", "build_search", "engine_options"),
            *("extract_answer", "extract_boxed", "extract_code", "get_method"),
            *("load_settings", "markers", "open_cache", "open_pipeline", "register_backend"),
            *("register_method", "unregister_backend"),
        ]
    )
    for name in search_o1.__all__:
        assert getattr(search_o1, name) is not None, name
    assert search_o1.markers.BEGIN_QUERY == BEGIN_QUERY


def test_ask_answers_with_ready_objects_and_keyword_settings() -> None:
    model = ScriptedLLM(chain=[QUERY, ANSWER], reader=[FACTS])
    answer = ask("Who directed Amélie?", llm=model, search=corpus(), max_searches=2)
    assert (answer.text, answer.queries) == ("Jean-Pierre Jeunet", ("Amélie director",))
    assert answer.finish_reason is FinishReason.ANSWERED and str(answer) == "Jean-Pierre Jeunet"
    assert answer.trace.searches[0].reader is not None
    assert "Jeunet" in answer.trace.searches[0].reader.refined
    assert [r.role for r in model.requests] == ["main", "reader", "main"]
    assert model.requests[0].prompt.continuation == ""  # a given model is not forced to search
    [source] = answer.sources  # the reader marked nothing: its search's one document
    assert (source.n, source.id, source.title, source.query) == (
        1,
        "a",
        "Amélie",
        "Amélie director",
    )


def test_ask_refuses_a_bad_setting_and_runs_no_model() -> None:
    model = ScriptedLLM(chain=[ANSWER])
    with pytest.raises(ConfigError, match="unknown setting 'max_searchez'"):
        ask("q?", llm=model, search=corpus(), max_searchez=2)
    assert model.requests == []


async def test_aask_is_the_twin_and_ask_refuses_a_running_loop() -> None:
    answer = await aask("q?", llm=ScriptedLLM(chain=[ANSWER]), method="direct")
    assert answer.text == "Jean-Pierre Jeunet" and answer.queries == ()
    with pytest.raises(ConfigError, match="use aask"):
        ask("q?", llm=ScriptedLLM(chain=[ANSWER]), method="direct")


def test_no_answer_reads_as_such() -> None:
    answer = ask("q?", llm=ScriptedLLM(chain=["I do not know."]), method="direct")
    assert answer.text is None and str(answer) == "(no answer: no_answer)"


async def test_a_reader_call_without_a_reader_script_is_an_error() -> None:
    # The trap this guards: one queue shared with the reader, which ate the answer.
    model = ScriptedLLM(chain=[QUERY, ANSWER])
    with pytest.raises(ConfigError, match=r"no reader script: pass reader=\[\.\.\.\]"):
        await Engine(model, corpus()).run("Who directed Amélie?")
    shared = ScriptedLLM([QUERY, ANSWER])  # one script for every call, as before
    trace = await Engine(shared, corpus()).run("Who directed Amélie?")
    assert trace.answer is None and trace.searches[0].reader is not None
    assert trace.searches[0].reader.raw == ANSWER  # the reader took the chain's turn


def test_a_scripted_model_takes_one_kind_of_script() -> None:
    with pytest.raises(ConfigError, match="not both"):
        ScriptedLLM([ANSWER], chain=[ANSWER])


class Closing(ScriptedLLM):
    """A scripted model that counts how often it was closed."""

    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


class ClosingSearch(MemorySearch):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_an_engine_in_async_with_closes_what_it_was_given_once() -> None:
    model, search = Closing(chain=[ANSWER]), ClosingSearch({})
    options = EngineOptions(reader=ReaderOptions(enabled=False))
    async with Engine(model, search, options=options) as engine:
        trace = await engine.run("q?", method="direct")
    assert trace.answer == "Jean-Pierre Jeunet"
    assert (model.closed, search.closed) == (1, 1)  # the reader shares the model: once


async def test_a_pipeline_leaves_given_objects_open() -> None:
    model, search = Closing(chain=[QUERY, ANSWER], reader=[FACTS]), ClosingSearch({})
    async with Pipeline(load_settings({}), llm=model, search=search) as engine:
        assert engine.llm is model and engine.search is search
        trace = await engine.run("q?")
    assert trace.finish_reason is FinishReason.ANSWERED
    assert (model.closed, search.closed) == (0, 0)  # the caller's, not the pipeline's


def test_ask_can_run_twice_in_one_process() -> None:
    for _ in range(2):
        answer = ask("q?", llm=ScriptedLLM(chain=[ANSWER]), method="direct")
        assert answer.text == "Jean-Pierre Jeunet"


@pytest.fixture
def method_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = make_plugin(tmp_path / "site", entry_points=METHOD_ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(root))
    yield root
    METHODS.pop("terse", None)
    sys.modules.pop(MODULE, None)


async def test_a_plugin_method_is_named_then_loaded_on_first_use(method_plugin: Path) -> None:
    assert "terse" in method_names() and "terse" not in METHODS
    model = ScriptedLLM(chain=[ANSWER])
    trace = await Engine(model, None).run("Who directed Amélie?", method="terse")
    assert trace.method == "terse" and trace.answer == "Jean-Pierre Jeunet"
    assert model.requests[0].prompt.messages[0].content.startswith("Answer in one word. ")
    assert get_method("terse") is METHODS["terse"]
    with pytest.raises(ConfigError, match=r"entry point 'misnamed' .* must name a Method"):
        get_method("misnamed")


def test_ask_gives_the_paper_baselines_their_tokens() -> None:
    # Longer than 8,192 tokens (the paper's "other" model row), shorter than 32,768: the
    # paper's direct script sends 32,768 whatever the model, so the box is reached.
    long = "Thinking it over. " * 2000 + ANSWER
    settings = {"profile": "paper", "paper_model": "other"}
    answer = ask("q?", llm=ScriptedLLM(chain=[long]), method="direct", **settings)
    assert answer.text == "Jean-Pierre Jeunet"
    cut = ask("q?", llm=ScriptedLLM(chain=[long]), method="direct", paper_model="other")
    assert cut.text is None  # ours: the model row's 8,192 tokens cut it
