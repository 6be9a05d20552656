"""Bytes -> text, the one way: fetched pages and the files of a local corpus folder alike.

- Charset: a byte-order mark, the declared charset (HTTP header), `<meta charset>` for
  HTML, UTF-8, then detection (charset-normalizer, with the [web] extra; else cp1252, the
  web's usual other encoding). Files are decoded exactly as pages are.
- HTML: the main text, boilerplate (menus, footers, cookie banners) removed, by
  trafilatura when installed; otherwise, or when it finds no main text, the visible text
  from the standard library's parser, without scripts, styles and navigation chrome.
  Paragraphs come out separated by blank lines, which the corpus chunker follows.
- PDF: pypdf's text of each page; the title from its metadata.
- Plain text and Markdown: as decoded (Markdown's first `# ` heading is its title).

Pure functions: callers run them in a worker thread when they are on an event loop.
"""

from __future__ import annotations

import codecs
import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = [
    "EXTRACTOR_VERSION",
    "Extracted",
    "UnsupportedContent",
    "decode",
    "extract",
    "extract_text",
    "html_to_text",
    "plain_html_text",
]

# Part of every page's cache key: bump when extraction changes what a page's text says
# (not for whitespace: a bump makes every recorded page a replay miss).
EXTRACTOR_VERSION = "1"
MAX_PDF_PAGES = 50  # for web pages; a local file is read whole
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
# Content of these elements is never prose, or is page chrome.
_SKIP = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "head",
        "nav",
        "footer",
        "header",
        "aside",
        "form",
    }
)
# These end a paragraph, so blocks and list items do not run into each other.
_BLOCK = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "ul",
        "ol",
        "tr",
        "table",
        "section",
        "article",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "pre",
        "dd",
        "dt",
        "hr",
        "main",
    }
)
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLOCK_BREAK = re.compile(r"\n\s*\n")
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})


class UnsupportedContent(ValueError):
    """Bytes that are not HTML, PDF or text, or that cannot be read as such."""


@dataclass(frozen=True)
class Extracted:
    """A document's text and, when it has one, its own title ("" otherwise)."""

    title: str
    text: str


# ---- charset ---------------------------------------------------------------------------


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def _bom(body: bytes) -> str | None:
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return name
    return None


def decode(body: bytes, charset: str | None = None, *, html: bool = False) -> str:
    """Text from bytes: BOM, declared charset, <meta charset>, UTF-8, then detection.

    >>> decode("café".encode("cp1252"), "windows-1252"), decode(b"caf\\xc3\\xa9")
    ('café', 'café')
    """
    bom = _bom(body)
    if bom is not None:
        return body.decode(bom, errors="replace")
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
    except ImportError:  # the [web] extra brings it
        return body.decode("cp1252", errors="replace")
    best = from_bytes(body[:200_000]).best()
    encoding = best.encoding if best is not None else "cp1252"
    return body.decode(encoding, errors="replace")


def _looks_binary(body: bytes) -> bool:
    # NUL bytes do not occur in text in any single-byte or UTF-8 encoding.
    return _bom(body) is None and b"\x00" in body[:8192]


# ---- HTML ------------------------------------------------------------------------------


class _Visible(HTMLParser):
    """Visible text of an HTML page, its <title> and its first <h1>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self.first_h1 = ""
        self._skip = 0
        self._in_title = False
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_title = self._in_title or tag == "title"
        self._in_h1 = self._in_h1 or tag == "h1"
        if tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag == "h1":
            self._in_h1 = False
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)
            if self._in_h1 and not self.first_h1:
                self.first_h1 = data.strip()


def _paragraphs(text: str) -> str:
    """Spaces collapsed, one paragraph a line-group, paragraphs split by one blank line."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n\n".join(line for line in lines if line)


def _parse(html: str) -> _Visible:
    parser = _Visible()
    parser.feed(html)
    parser.close()
    return parser


def plain_html_text(html: str) -> str:
    """The visible text, without trafilatura (scripts, styles, nav, header, footer cut).

    Line breaks inside a block are the source's layout, not the text's: only block
    elements start a paragraph.

    >>> plain_html_text("<nav>Menu</nav><p>One &amp;\\n two.</p><p>Three</p><footer>c</footer>")
    'One & two.\\n\\nThree'
    """
    blocks = _BLOCK_BREAK.split("".join(_parse(html).parts))
    return "\n\n".join(b for b in (" ".join(block.split()) for block in blocks) if b)


def html_title(html: str) -> str:
    """The <title>, else the first <h1>, else ""."""
    parser = _parse(html)
    return _SPACES.sub(" ", parser.title).strip() or parser.first_h1


def html_to_text(html: str, url: str | None = None) -> str:
    """Main text via trafilatura (drops boilerplate); the plain extractor when it finds none."""
    try:
        import trafilatura
    except ImportError:
        return plain_html_text(html)
    text = trafilatura.extract(
        html, url=url, include_comments=False, include_tables=True, favor_recall=True
    )
    # trafilatura puts each paragraph on one line: blank lines make them paragraphs.
    return _paragraphs(text) if text and text.strip() else plain_html_text(html)


# ---- PDF -------------------------------------------------------------------------------


def pdf_extract(body: bytes, *, max_pages: int | None = None) -> Extracted:
    """Text of the first `max_pages` pages (all when None) and the metadata title."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        pages = [page.extract_text() or "" for page in reader.pages[:max_pages]]
        title = reader.metadata.title if reader.metadata else None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as e:
        raise UnsupportedContent(f"unreadable PDF ({type(e).__name__}: {e})") from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    return Extracted(str(title or "").strip(), text)


# ---- by kind ---------------------------------------------------------------------------


def _kind(content_type: str, body: bytes) -> str:
    ctype = content_type.split(";", 1)[0].strip().lower()
    head = body[:512].lstrip().lower()
    if ctype == "application/pdf" or body.startswith(b"%PDF-"):
        return "pdf"
    if ctype in ("text/html", "application/xhtml+xml") or head.startswith(
        (b"<!doctype html", b"<html")
    ):
        return "html"
    if ctype == "text/markdown":
        return "markdown"
    if ctype.startswith("text/") or ctype in ("application/json", "application/xml", ""):
        return "text"
    raise UnsupportedContent(f"unsupported content type {ctype}")


def _charset(content_type: str) -> str | None:
    m = re.search(r"charset\s*=\s*([^;\s]+)", content_type, re.I)
    return m.group(1) if m else None


def _markdown_title(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def extract(
    body: bytes, content_type: str, url: str | None = None, *, max_pdf_pages: int | None = None
) -> Extracted:
    """Title and readable text of `body`, per its type (sniffed when mislabelled).

    Raises UnsupportedContent for a type that is not text, a binary body, or a bad PDF.
    """
    kind = _kind(content_type, body)
    if kind == "pdf":
        return pdf_extract(body, max_pages=max_pdf_pages)
    if _looks_binary(body):
        raise UnsupportedContent("binary content, not text")
    text = decode(body, _charset(content_type), html=kind == "html")
    if kind == "html":
        return Extracted(html_title(text), html_to_text(text, url))
    if kind == "markdown":
        return Extracted(_markdown_title(text), text.strip())
    return Extracted("", text.strip())


def extract_text(body: bytes, content_type: str, url: str) -> str:
    """The readable text of a fetched page's body (PDFs: the first MAX_PDF_PAGES pages)."""
    return extract(body, content_type, url, max_pdf_pages=MAX_PDF_PAGES).text


def file_content_type(suffix: str) -> str:
    """The content type a local document file is read as, from its suffix."""
    suffix = suffix.lower()
    if suffix == ".pdf":
        return "application/pdf"
    if suffix in _HTML_SUFFIXES:
        return "text/html"
    if suffix in _MARKDOWN_SUFFIXES:
        return "text/markdown"
    return "text/plain"
