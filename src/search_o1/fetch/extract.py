"""Bytes of a fetched page -> its main text: HTML (trafilatura, else a plain extractor),
PDF (pypdf), plain text; with charset detection. Pure functions, run in a worker thread.
"""

from __future__ import annotations

import codecs
import io
import re
from html.parser import HTMLParser

__all__ = ["EXTRACTOR_VERSION", "UnsupportedContent", "decode", "extract_text", "html_to_text"]

# Part of every page's cache key: bump when extraction changes what a page's text is.
EXTRACTOR_VERSION = "1"
MAX_PDF_PAGES = 50
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
_SKIP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "nav",
        "footer",
        "header",
        "aside",
        "form",
        "head",
    }
)
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "blockquote",
        "pre",
        "table",
        "ul",
        "ol",
    }
)


class UnsupportedContent(Exception):
    """Bytes that are not HTML, PDF or text, or that cannot be read as such."""


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def decode(body: bytes, charset: str | None = None, *, html: bool = False) -> str:
    """Text from bytes: declared charset, BOM, <meta charset>, UTF-8, then detection."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(name, errors="replace")
    declared = _codec(charset)
    if declared is None and html:
        m = _META_CHARSET.search(body[:4096])
        declared = _codec(m.group(1).decode("ascii", "ignore")) if m else None
    if declared is not None:
        return body.decode(declared, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # the [web] extra brings it; latin-1-ish is the web's usual other
        return body.decode("cp1252", errors="replace")
    best = from_bytes(body[:200_000]).best()
    encoding = best.encoding if best is not None else "cp1252"
    return body.decode(encoding, errors="replace")


class _PlainText(HTMLParser):
    """Visible text of an HTML page, without scripts, styles and navigation chrome."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS and self._skip:
            self._skip -= 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def plain_html_text(html: str) -> str:
    parser = _PlainText()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def html_to_text(html: str, url: str | None = None) -> str:
    """Main text via trafilatura (drops boilerplate); the plain extractor when it finds none."""
    try:
        import trafilatura
    except ImportError:
        return plain_html_text(html)
    text = trafilatura.extract(
        html, url=url, include_comments=False, include_tables=True, favor_recall=True
    )
    return text.strip() if text and text.strip() else plain_html_text(html)


def pdf_to_text(body: bytes) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages[:MAX_PDF_PAGES]]
    except (PyPdfError, ValueError, KeyError, TypeError) as e:
        raise UnsupportedContent(f"unreadable PDF ({type(e).__name__})") from None
    return "\n".join(p.strip() for p in pages if p.strip())


def _kind(content_type: str, url: str, body: bytes) -> str:
    ctype = content_type.split(";", 1)[0].strip().lower()
    head = body[:512].lstrip().lower()
    if ctype == "application/pdf" or body.startswith(b"%PDF-"):
        return "pdf"
    if ctype in ("text/html", "application/xhtml+xml") or head.startswith(
        (b"<!doctype html", b"<html")
    ):
        return "html"
    if ctype.startswith("text/") or ctype in ("application/json", "application/xml", ""):
        return "text"
    raise UnsupportedContent(f"unsupported content type {ctype}")


def _charset(content_type: str) -> str | None:
    m = re.search(r"charset\s*=\s*([^;\s]+)", content_type, re.I)
    return m.group(1) if m else None


def extract_text(body: bytes, content_type: str, url: str) -> str:
    """The readable text of a response body, per its type (sniffed when mislabelled)."""
    kind = _kind(content_type, url, body)
    if kind == "pdf":
        return pdf_to_text(body)
    text = decode(body, _charset(content_type), html=kind == "html")
    if kind == "html":
        return html_to_text(text, url)
    return text.strip()
