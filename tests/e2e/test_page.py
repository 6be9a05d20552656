"""The page in a real headless Chromium (Debian's, driven by Playwright).

Serve mode: type a question, watch a search card and the answer appear. View mode: an
evaluation run's items are listed, filterable, and clicking one shows its trace.
Screenshots land in the test's temp dir; their paths are printed (pytest -s shows them).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.e2e.page_support import MARKS, browser, page, screenshot
from tests.serve_support import ANSWER, FACTS, QUERY, QUESTION, scripted_engine, write_run_dir

from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread
from search_o1.serve.view import create_view_app

__all__ = ["browser", "page"]  # the fixtures this module's tests use

pytestmark = MARKS


def test_ask_shows_the_search_card_and_the_answer(page: Any, tmp_path: Path) -> None:
    # A short hold per model call, so the page really renders a stream in pieces.
    engine, _ = scripted_engine(hold_s=0.15)
    with serve_in_thread(create_app(engine)) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=serve]")
        page.fill("#question", QUESTION)
        page.click("#ask-button")
        card = page.wait_for_selector(".card.search .hits li")
        assert card is not None
        page.wait_for_selector("#answer:not([hidden])")
        page.wait_for_selector(".stat:has-text('finish')")
        assert page.inner_text("#answer-text") == ANSWER
        assert page.inner_text(".card.search .query") == QUERY
        link = page.get_attribute(".card.search .hits a", "href")
        assert link == "https://en.wikipedia.org/wiki/Tosca"
        assert FACTS in page.inner_text(".card.search .facts-text")
        # The thought text shows the reasoning, not the raw marker blocks.
        thoughts = page.inner_text(".timeline")
        assert "I need the composer of Tosca first." in thoughts and "<|" not in thoughts
        assert page.is_visible(".health.ok")
        shot = screenshot(page, tmp_path / "serve-page.png")
    assert shot.stat().st_size > 10_000


def test_view_lists_items_filters_and_opens_a_trace(page: Any, tmp_path: Path) -> None:
    run_dir = write_run_dir(tmp_path / "fixture-run")
    with serve_in_thread(create_view_app(run_dir)) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=view]")
        assert page.locator(".item").count() == 2
        assert page.inner_text("#item-count") == "2 of 2 items"
        assert "em 50.0%" in page.inner_text("#run-summary")
        page.select_option("#filter-finish", "max_tokens")
        assert page.locator(".item").count() == 1
        assert "Sistine" in page.inner_text(".item")
        page.select_option("#filter-finish", "")
        page.select_option("#filter-score", "right")
        assert page.locator(".item").count() == 1
        page.select_option("#filter-score", "")
        page.fill("#filter-text", "tosca")
        assert page.locator(".item").count() == 1
        page.click(".item")
        page.wait_for_selector("#item-detail .card.search")
        detail = page.inner_text("#item-detail")
        assert QUESTION in detail and FACTS in detail
        assert page.inner_text("#item-detail .query") == QUERY
        assert page.inner_text("#item-detail .answer-text") == ANSWER
        assert page.url.endswith("#item=0")
        screenshot(page, tmp_path / "view-page.png")


def test_stop_button_cancels_the_run_on_the_server(page: Any) -> None:
    engine, llm = scripted_engine(hold_s=30)
    app = create_app(engine)
    with serve_in_thread(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=serve]")
        page.fill("#question", QUESTION)
        page.press("#question", "Enter")
        page.wait_for_selector("#stop-button:not([hidden])")
        stats = app.state.serve.limiter.stats
        deadline = time.monotonic() + 5
        while llm.started == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        page.click("#stop-button")
        page.wait_for_selector("#error:has-text('Stopped.')")
        while stats.cancelled == 0 and time.monotonic() < deadline + 5:
            time.sleep(0.02)
        assert stats.cancelled == 1 and llm.cancelled == 1 and stats.running == 0
        assert page.is_enabled("#ask-button")
