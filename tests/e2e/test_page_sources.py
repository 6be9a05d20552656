"""The answer's sources on the page, in a real headless Chromium: the two-hop question
asked in serve mode lists both hops' passages under the answer; in view mode an item's
sources are links (web pages) or passage ids, with their supporting sentences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.page_support import MARKS, browser, page, screenshot
from tests.serve_support import write_run_dir
from tests.two_hop import ANSWER, QUESTION, two_hop_engine

from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread
from search_o1.serve.view import create_view_app

__all__ = ["browser", "page"]  # the fixtures this module's tests use

pytestmark = MARKS


def test_serve_page_lists_both_hops_as_sources(page: Any, tmp_path: Path) -> None:
    with serve_in_thread(create_app(two_hop_engine())) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=serve]")
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        page.wait_for_selector("#sources:not([hidden]) li.source")
        assert page.inner_text("#answer-text") == ANSWER
        items = page.query_selector_all("#sources li.source")
        assert [i.get_attribute("data-id") for i in items] == ["b1", "p1"]
        assert [i.get_attribute("value") for i in items] == ["1", "2"]
        second = items[1].inner_text()
        assert "Orla Venn" in second and "Orla Venn was born in Tessaly in 1931." in second
        screenshot(page, tmp_path / "serve-sources.png")


def test_view_shows_an_items_sources_as_links(page: Any, tmp_path: Path) -> None:
    run = write_run_dir(tmp_path / "run")
    results = run / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    records[0]["sources"] = [
        {
            "n": 1,
            "id": "w1",
            "title": "Tosca",
            "url": "https://en.wikipedia.org/wiki/Tosca",
            "quote": "Tosca is an opera by Giacomo Puccini.",
            "query": "composer of Tosca",
        },
        {
            "n": 2,
            "id": "w2",
            "title": "Giacomo Puccini",
            "url": None,
            "quote": "",
            "query": "composer of Tosca",
        },
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    with serve_in_thread(create_view_app(run)) as url:
        page.goto(url + "/#item=0")
        page.wait_for_selector("body[data-ready=view]")
        page.wait_for_selector(".item-detail li.source")
        link = page.query_selector(".item-detail li.source a")
        assert link is not None
        assert link.get_attribute("href") == "https://en.wikipedia.org/wiki/Tosca"
        assert link.inner_text() == "Tosca"
        passage = page.query_selector_all(".item-detail li.source")[1].inner_text()
        assert "Giacomo Puccini" in passage and "w2" in passage
        screenshot(page, tmp_path / "view-sources.png")
