"""One extraction for both ways text arrives: a file in a corpus folder and a fetched web
page (through the real fetcher and a loopback web server) give the same text, with the
charset detected and the page chrome removed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.servers.web import Reply, web_server

from search_o1.corpus.load import load_passages
from search_o1.fetch import FetchConfig, HostPolicy, PageFetcher
from search_o1.page_text import decode, extract, plain_html_text

ARTICLE = (
    "Tosca is an opera in three acts by Giacomo Puccini to an Italian libretto by Luigi "
    "Illica and Giuseppe Giacosa. It premiered at the Teatro Costanzi in Rome on 14 "
    "January 1900. The work, based on Victorien Sardou's French-language dramatic play, "
    "is a melodramatic piece set in Rome in June 1800."
)
SECOND = (
    "Café society in Paris took to the work at once; the soprano's aria «Vissi d'arte» "
    "became one of the best-known pieces of the repertoire, sung at recitals everywhere."
)
CHROME = ("Home | Operas | Composers | Log in", "Copyright 2024 Opera Wiki. All rights reserved.")


def _page(charset: str, *, meta: bool) -> bytes:
    head = f'<meta charset="{charset}">' if meta else ""
    html = (
        f"<!DOCTYPE html><html><head>{head}<title>Tosca</title></head><body>"
        f"<header><nav>{CHROME[0]}</nav></header><main><article><h1>Tosca</h1>"
        f"<p>{ARTICLE}</p><p>{SECOND}</p></article></main><footer>{CHROME[1]}</footer>"
        "</body></html>"
    )
    return html.encode(charset)


def _check(text: str) -> None:
    assert ARTICLE in text and SECOND in text  # é, «, » decoded right
    assert CHROME[0] not in text and CHROME[1] not in text


async def _fetched(body: bytes, content_type: str) -> str:
    with web_server({"/tosca": Reply(body=body, content_type=content_type)}) as srv:
        fetcher = PageFetcher(FetchConfig(), HostPolicy(allow_private=True))
        try:
            page = await fetcher.fetch(srv.url("/tosca"))
        finally:
            await fetcher.aclose()
    return page.text


def _from_folder(tmp_path: Path, body: bytes, name: str) -> str:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / name).write_bytes(body)
    passages = load_passages(folder)
    assert {p.title for p in passages} == {"Tosca"}
    return "\n\n".join(p.text for p in passages)


@pytest.mark.parametrize(
    ("charset", "meta", "content_type"),
    [
        ("utf-8", False, "text/html"),
        ("windows-1252", True, "text/html"),  # declared in the page only
        ("iso-8859-1", False, "text/html; charset=iso-8859-1"),  # declared by the server
    ],
)
async def test_a_file_and_a_page_give_the_same_text(
    tmp_path: Path, charset: str, meta: bool, content_type: str
) -> None:
    body = _page(charset, meta=meta)
    page_text = await _fetched(body, content_type)
    _check(page_text)
    if not meta and charset != "utf-8":
        # A file has no HTTP header: what the server declared, detection must find.
        body = _page(charset, meta=False)
    file_text = _from_folder(tmp_path, body, "tosca.html")
    _check(file_text)
    assert " ".join(file_text.split()) == " ".join(page_text.split())


def test_a_latin1_text_file_is_detected_not_refused(tmp_path: Path) -> None:
    body = (ARTICLE + "\n\n" + SECOND + "\n").encode("cp1252")
    text = _from_folder(tmp_path, body, "Tosca.txt")
    assert ARTICLE in text and SECOND in text
    assert decode(body) == body.decode("cp1252")


def test_without_trafilatura_the_plain_extractor_serves_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    html = "<html><nav>menu</nav><div>Short.</div><div>Two\n lines.</div></html>"
    assert plain_html_text(html) == "Short.\n\nTwo lines."
    monkeypatch.setitem(sys.modules, "trafilatura", None)  # as if the [web] extra is absent
    assert extract(html.encode(), "text/html").text == "Short.\n\nTwo lines."
    _check(_from_folder(tmp_path, _page("windows-1252", meta=True), "tosca.html"))
