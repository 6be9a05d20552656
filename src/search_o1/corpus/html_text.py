"""Plain text and a title from HTML with the standard library's parser (no heavy deps)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

# Content of these elements is never prose.
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "nav", "footer"})
# These end a line of text, so paragraphs and list items do not run into each other.
_BLOCK = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
        "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "dd", "dt", "hr", "main",
    }
)  # fmt: skip
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n\s*\n\s*")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self.first_h1 = ""
        self._skip_depth = 0
        self._in_title = False
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip_depth += 1
        elif tag == "h1":
            self._in_h1 = True
        if tag in _BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag == "h1":
            self._in_h1 = False
        if tag in _BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self._skip_depth == 0:
            self.parts.append(data)
            if self._in_h1:
                self.first_h1 = self.first_h1 or data.strip()


def _tidy(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document; blocks become paragraphs separated by blank lines.

    The title is the <title> element, else the first <h1>, else "".

    >>> html_to_text("<html><head><title>T</title><style>x{}</style></head>"
    ...              "<body><p>One &amp; two.</p><p>Three</p></body></html>")
    ('T', 'One & two.\\n\\nThree')
    """
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    title = _SPACES.sub(" ", parser.title).strip() or parser.first_h1
    return title, _tidy("".join(parser.parts))
