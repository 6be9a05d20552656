"""The paper's rules as engine options: repeats and the limit, pages, reader limits, prompts."""

from __future__ import annotations

from pathlib import Path

from search_o1 import markers as mk
from search_o1.config import load_settings
from search_o1.engine import ChainLimits, Engine, EngineOptions, ReaderOptions, SearchOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import engine_options
from search_o1.prompts.templates import NOTICES, load_prompts
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit, Sampling

Q, EQ, U, EU = mk.BEGIN_QUERY, mk.END_QUERY, mk.BEGIN_URL, mk.END_URL


def search() -> MemorySearch:
    return MemorySearch(
        {
            "alpha facts": [
                Hit("1", "A page", url="http://a.test/1", snippet="about a", text="A" * 50)
            ],
            "beta facts": [
                Hit("2", "B page", url="http://b.test/2", snippet="about b", text="B" * 50)
            ],
        }
    )


def facts(text: str) -> str:
    return f"**Final Information**\n\n{text}"


async def test_ours_reuses_a_repeat_before_checking_the_limit() -> None:
    model = ScriptedLLM(
        [f"{Q}alpha facts{EQ}", facts("fact a"), f"{Q}alpha facts{EQ}", "\\boxed{x}"]
    )
    options = EngineOptions(limits=ChainLimits(max_searches=1))
    trace = await Engine(model, search(), options=options).run("Q?")
    assert [s.outcome for s in trace.searches] == ["searched", "repeated"]
    assert trace.searches[1].inserted == trace.searches[0].inserted


async def test_the_paper_checks_the_limit_first_and_answers_a_repeat_with_a_notice() -> None:
    replies = [
        f"{Q}alpha facts{EQ}",
        facts("fact a"),
        f"{Q}alpha facts{EQ}",
        f"{Q}beta facts{EQ}",
        "\\boxed{x}",
    ]
    options = EngineOptions(limits=ChainLimits(max_searches=1), repeated_query="notice")
    trace = await Engine(ScriptedLLM(replies), search(), options=options).run("Q?")
    # The repeat comes after the limit was reached: the paper says "limit", not "repeat".
    assert [s.outcome for s in trace.searches] == ["searched", "limit", "limit"]
    options = EngineOptions(limits=ChainLimits(max_searches=5), repeated_query="notice")
    trace = await Engine(ScriptedLLM(replies), search(), options=options).run("Q?")
    assert [s.outcome for s in trace.searches] == ["searched", "repeated", "searched"]
    assert NOTICES["repeat"] in trace.searches[1].inserted
    assert "fact a" not in trace.searches[1].inserted


async def test_rag_agent_under_the_paper_inserts_nothing_for_a_repeat() -> None:
    replies = [f"{Q}alpha facts{EQ}", f"{Q}alpha facts{EQ}", "\\boxed{x}"]
    options = EngineOptions(repeated_query="notice")
    trace = await Engine(ScriptedLLM(replies), search(), options=options).run(
        "Q?", method="rag-agent"
    )
    assert [s.outcome for s in trace.searches] == ["searched", "repeated"]
    assert trace.searches[1].inserted == ""
    assert trace.output.count(mk.BEGIN_RESULT) == 1


async def test_rag_agent_reads_several_urls_as_page_heads() -> None:
    replies = [
        f"{Q}alpha facts{EQ}",
        f"{Q}beta facts{EQ}",
        f"{U}http://a.test/1, http://b.test/2{EU}",
        "\\boxed{x}",
    ]
    options = EngineOptions(search=SearchOptions(page_chars=20))
    trace = await Engine(ScriptedLLM(replies), search(), options=options).run(
        "Q?", method="rag-agent"
    )
    pages = trace.searches[2]
    assert pages.outcome == "searched" and len(pages.documents) == 2
    assert [d.text for d in pages.documents] == ["A" * 20, "B" * 20]
    assert pages.inserted.count(mk.BEGIN_FULL_PAGE) == 2


async def test_the_reader_gets_the_per_call_limit_and_a_cut_output_is_marked() -> None:
    long_analysis = "thinking " * 200  # cut long before any Final Information
    model = ScriptedLLM([f"{Q}alpha facts{EQ}", long_analysis, "\\boxed{x}"])
    options = EngineOptions(limits=ChainLimits(max_call_tokens=100))
    trace = await Engine(model, search(), options=options).run("Q?")
    reader_request = model.requests[1]
    assert reader_request.max_tokens == 100  # the main model's per-call limit
    assert model.requests[0].max_tokens == 100
    reader = trace.searches[0].reader
    assert reader is not None and reader.truncated and not reader.found
    model = ScriptedLLM([f"{Q}alpha facts{EQ}", facts("ok"), "\\boxed{x}"])
    options = EngineOptions(
        limits=ChainLimits(max_call_tokens=100), reader=ReaderOptions(max_call_tokens=7)
    )
    trace = await Engine(model, search(), options=options).run("Q?")
    assert model.requests[1].max_tokens == 7
    assert trace.searches[0].reader is not None and not trace.searches[0].reader.truncated


async def test_the_reader_limit_fits_the_reader_window() -> None:
    model = ScriptedLLM([f"{Q}alpha facts{EQ}", facts("ok"), "\\boxed{x}"], context=2000)
    await Engine(model, search(), options=EngineOptions()).run("Q?")
    assert 0 < model.requests[1].max_tokens < 2000


async def test_template_prompts_reach_the_model(tmp_path: Path) -> None:
    (tmp_path / "search_o1.jinja").write_text("INSTRUCTION max={{ max_searches }}\n")
    (tmp_path / "task.jinja").write_text("QUESTION {{ question }}\n")
    (tmp_path / "reader.jinja").write_text("READ {{ query }}: {{ pages[0].title }}")
    (tmp_path / "notice.limit.jinja").write_text("NO MORE than {{ max_searches }}")
    options = EngineOptions(limits=ChainLimits(max_searches=1), prompts=load_prompts(tmp_path))
    model = ScriptedLLM([f"{Q}alpha facts{EQ}", facts("ok"), f"{Q}beta facts{EQ}", "\\boxed{x}"])
    trace = await Engine(model, search(), options=options).run("Why?")
    assert model.requests[0].prompt.messages[0].content == "INSTRUCTION max=1\nQUESTION Why?\n"
    assert model.requests[1].prompt.messages[0].content == "READ alpha facts: A page"
    assert "NO MORE than 1" in trace.searches[1].inserted


async def test_paper_reader_sampling_and_one_line_facts() -> None:
    model = ScriptedLLM([f"{Q}alpha facts{EQ}", facts("line one\nline two"), "\\boxed{x}"])
    fixed = Sampling(0.7, 0.8, 20, 1.05)
    options = EngineOptions(
        sampling=Sampling(temperature=0.1, repetition_penalty=1.0),
        reader=ReaderOptions(sampling=fixed, one_line=True),
    )
    trace = await Engine(model, search(), options=options).run("Q?")
    assert model.requests[1].sampling == fixed and model.requests[0].sampling.temperature == 0.1
    block = f"\n\n{mk.BEGIN_RESULT}line oneline two{mk.END_RESULT}\n\n"
    assert trace.searches[0].inserted == block


def test_the_paper_profile_sets_the_reader() -> None:
    paper = engine_options(load_settings({"profile": "paper", "temperature": 0.2}, environ={}))
    assert paper.reader.one_line and paper.reader.sampling == Sampling(0.7, 0.8, 20, 1.05)
    assert paper.sampling.temperature == 0.2
    ours = engine_options(load_settings({}, environ={}))
    assert not ours.reader.one_line and ours.reader.sampling is None
