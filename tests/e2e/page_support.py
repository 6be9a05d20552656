"""What the page tests share: Debian's Chromium driven by Playwright (one browser per
test module, a fresh page per test) and full-page screenshots."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# Every browser test module: skipped without the browser, and (its module fixture holds
# one browser) run on one test worker.
MARKS = [
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"no Chromium at {CHROMIUM} (install Debian's `chromium`, e.g. `make browser`); "
        "Playwright's own browsers cannot be downloaded here",
    ),
    pytest.mark.xdist_group("browser"),
]


@contextmanager
def chromium(*extra_args: str) -> Iterator[Any]:
    """Debian's Chromium, headless, with ARGS and `extra_args`."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=[*ARGS, *extra_args], headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def fresh_page(browser: Any, **context: Any) -> Iterator[Any]:
    """A page in a context of its own (`context`: Playwright's new_context options)."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.set_default_timeout(15_000)
    try:
        yield page
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with fresh_page(browser, viewport={"width": 1240, "height": 900}) as opened:
        yield opened


def screenshot(page: Any, path: Path) -> Path:
    page.screenshot(path=str(path), full_page=True)
    print(f"\nscreenshot: {path}")
    return path
