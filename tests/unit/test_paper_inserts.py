"""Under `--profile paper` every text the system inserts into a chain is the paper's
scripts' text byte for byte (given the same notice wording): the search-limit and
repeated-query notices, the refined facts, rag-agent's raw results, its pages and its
page-limit notice. The expected chains here are assembled as `run_search_o1.py` and
`run_rag_agent.py` assemble theirs; our profile keeps its own spacing.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from search_o1 import markers as mk
from search_o1.config import load_settings
from search_o1.engine import Engine
from search_o1.engine.options import EngineOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import engine_options
from search_o1.prompts.templates import NOTICES, load_prompts
from search_o1.search.memory import MemorySearch
from search_o1.types import Hit

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY
U, EU = mk.BEGIN_URL, mk.END_URL
R, ER = mk.BEGIN_RESULT, mk.END_RESULT
P, EP = mk.BEGIN_FULL_PAGE, mk.END_FULL_PAGE
HITS = {
    "tosca composer": [
        Hit(
            "1",
            "Tosca – opera",
            url="http://wiki.test/tosca",
            snippet="Tosca is an opera by Puccini",
            text="Tosca is an opera by Giacomo Puccini.",
            date="2024-05-01",
        ),
        Hit(
            "2",
            "Puccini",
            url="http://wiki.test/puccini",
            snippet="Born in Lucca",
            text="He was born in Lucca.",
        ),
    ],
    "puccini birthplace": [Hit("3", "Lucca", url="http://wiki.test/lucca", text="A city.")],
}
QUESTION = "Where was the composer of Tosca born?"
ANSWER = "So \\boxed{Lucca}."


def _options(profile: str, tmp_path: Path | None = None, **limits: int) -> EngineOptions:
    options = engine_options(load_settings({"profile": profile}))
    options = dataclasses.replace(
        options, limits=dataclasses.replace(options.limits, **limits), task="qa"
    )
    if tmp_path is not None:
        return dataclasses.replace(options, prompts=load_prompts(tmp_path))
    return options


async def _search_o1(profile: str, tmp_path: Path | None = None) -> str:
    chain = [
        f"First the composer.{Q}tosca composer{EQ}",
        f"Again.{Q}tosca composer{EQ}",
        f"Now the city.{Q}puccini birthplace{EQ}",
        f"Once more.{Q}lucca history{EQ}",
        ANSWER,
    ]
    reader = ["Notes.\n**Final Information**\n\nPuccini.", "**x**\n**Final Information**\nLucca."]
    model = ScriptedLLM(chain=chain, reader=reader)
    options = _options(profile, tmp_path, max_searches=2)
    trace = await Engine(model, MemorySearch(HITS), options=options).run(QUESTION)
    assert trace.answer == "Lucca"
    return trace.output


async def test_search_o1_inserts_the_papers_strings() -> None:
    repeat, limit = NOTICES["repeat"], NOTICES["limit"]
    expected = (
        f"First the composer.{Q}tosca composer{EQ}"
        f"\n\n{R}Puccini.{ER}\n\n"
        # The limit is checked first; under it, a repeat gets the notice.
        f"Again.{Q}tosca composer{EQ}"
        f"\n{R}\n{repeat}\n{ER}\n"
        f"Now the city.{Q}puccini birthplace{EQ}"
        f"\n\n{R}Lucca.{ER}\n\n"
        f"Once more.{Q}lucca history{EQ}"
        f"\n{R}\n{limit}\n{ER}\n"
        f"{ANSWER}"
    )
    assert await _search_o1("paper") == expected


async def test_notice_templates_go_in_as_rendered(tmp_path: Path) -> None:
    # A template holding a notice's wording (the paper's, say) is inserted verbatim.
    (tmp_path / "notice.limit.jinja").write_text("Limit {{ max_searches }}.", encoding="utf-8")
    (tmp_path / "notice.repeat.jinja").write_text("Seen: {{ query }}.", encoding="utf-8")
    output = await _search_o1("paper", tmp_path)
    assert f"{EQ}\n{R}\nSeen: tosca composer.\n{ER}\nNow" in output
    assert f"{EQ}\n{R}\nLimit 2.\n{ER}\nSo" in output


async def test_our_profile_keeps_its_spacing() -> None:
    output = await _search_o1("ours")
    assert f"lucca history{EQ}\n\n{R}\n{NOTICES['limit']}\n{ER}\n\nSo" in output


def _record(i: int, hit: Hit) -> dict[str, object]:
    """A raw result as the paper's rag-agent lists it: these keys, in this order."""
    return {
        "id": i,
        "title": hit.title,
        "url": hit.url,
        "site_name": "",
        "date": hit.date or "",
        "snippet": hit.snippet,
        "context": "",
    }


async def test_rag_agent_inserts_the_papers_strings() -> None:
    tosca, puccini = HITS["tosca composer"]
    chain = [
        f"Search.{Q}tosca composer{EQ}",
        f"Read both.{U}{tosca.url}, http://else.test/x{EU}",
        f"Read it again.{U}{tosca.url}{EU}",
        f"And this.{U}{puccini.url}{EU}",
        f"One more.{U}http://wiki.test/lucca{EU}",
        f"Again.{Q}tosca composer{EQ}",
        ANSWER,
    ]
    model = ScriptedLLM(chain=chain)
    options = _options("paper", max_url_fetches=3)
    trace = await Engine(model, MemorySearch(HITS), options=options).run(
        QUESTION, method="rag-agent"
    )
    results = json.dumps([_record(1, tosca), _record(2, puccini)], ensure_ascii=False, indent=2)
    # A page is its text (the first 8,000 characters); a URL never shown in results is
    # not read, and says why in its place; both count against the page limit.
    pages = {tosca.url: tosca.text, "http://else.test/x": NOTICES["unshown_page"]}
    page = {puccini.url: puccini.text}
    page_limit = f"\n{P}\n{NOTICES['page_limit']}\n{EP}\n"
    expected = (
        f"Search.{Q}tosca composer{EQ}"
        f"\n{R}\n{results}\n{ER}\n"
        f"Read both.{U}{tosca.url}, http://else.test/x{EU}"
        f"\n{P}\n{json.dumps(pages, ensure_ascii=False, indent=2)}\n{EP}\n"
        f"Read it again.{U}{tosca.url}{EU}"  # read before: nothing is inserted
        f"And this.{U}{puccini.url}{EU}"
        f"\n{P}\n{json.dumps(page, ensure_ascii=False, indent=2)}\n{EP}\n"
        f"{page_limit}"  # the limit is reached by this request: said at once
        f"One more.{U}http://wiki.test/lucca{EU}"
        f"{page_limit}"
        f"Again.{Q}tosca composer{EQ}"  # a repeat: nothing is inserted
        f"{ANSWER}"
    )
    assert trace.output == expected


async def test_modified_reasoning_steps_keep_their_line_breaks_when_inserted() -> None:
    # The paper's parse removes line breaks only after "**Final Information**"; its
    # fallback, the text after "**Modified Reasoning Steps**", goes in with them.
    chain = [f"First the composer.{Q}tosca composer{EQ}", ANSWER]
    reader = ["Notes.\n**Modified Reasoning Steps**\nStep 1: Puccini.\nStep 2: Lucca.\n```"]
    model = ScriptedLLM(chain=chain, reader=reader)
    trace = await Engine(model, MemorySearch(HITS), options=_options("paper")).run(QUESTION)
    expected = (
        f"First the composer.{Q}tosca composer{EQ}"
        f"\n\n{R}Step 1: Puccini.\nStep 2: Lucca.{ER}\n\n"
        f"{ANSWER}"
    )
    assert trace.output == expected


async def test_a_filler_query_is_searched_under_the_paper_profile_only() -> None:
    # The scripts search every non-blank query; ours refuses one made of filler words.
    chain = [f"Check.{Q}and the{EQ}", ANSWER]
    reader = ["Notes.\n**Final Information**\nPuccini."]
    hits = {"and the": HITS["tosca composer"]}
    outputs = {}
    for profile in ("paper", "ours"):
        model = ScriptedLLM(chain=chain, reader=reader)
        options = dataclasses.replace(_options(profile), force_search=False)
        outputs[profile] = (
            await Engine(model, MemorySearch(hits), options=options).run(QUESTION)
        ).output
    assert outputs["paper"] == f"Check.{Q}and the{EQ}\n\n{R}Puccini.{ER}\n\n{ANSWER}"
    assert "copied from the instructions" in outputs["ours"]
