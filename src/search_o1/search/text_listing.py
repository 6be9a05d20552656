"""Search results written out as text for a model to read, read back as hits.

Many MCP search servers answer with one text block that lists their results rather than
with JSON: records of labelled lines ("Title: ...", "URL: ...", "Description: ...",
"Content: ..."; Brave's reference server and Tavily's write these), numbered items
followed by a "URL:" line (DuckDuckGo's), or markdown links ("1. [Title](https://...)"
with the snippet on the lines below). Read as one plain-text hit, such a block would be
one document holding every result, with no URL to cite or fetch; read here, it is one
hit per result.

Lines before the first result ("Detailed Results:", "Found 5 results:") are left out.
A block counts as a listing only when at least one of its results has a web URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from search_o1.types import Hit

__all__ = ["hits_from_listing"]

# "Label: value", the label possibly in bold or after a bullet.
_LABELLED = re.compile(
    r"^\s*(?:[-*•]\s+)?(?:\*\*)?([A-Za-z][A-Za-z _-]{0,24}?)(?:\*\*)?\s*:\s*(.*)$"
)
# "1. Title", "2) Title", "## Title": an item that starts a result.
_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|#{1,4})\s+(\S.*)$")
_BULLET = re.compile(r"^\s*[-*•]\s+(\S.*)$")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_SEPARATOR = re.compile(r"^\s*(?:-{3,}|={3,}|\*{3,}|_{3,})\s*$")
_WEB = re.compile(r"https?://\S+")

_TITLE = frozenset({"title", "name", "heading"})
_URL = frozenset({"url", "link", "source", "source url", "href", "uri"})
_SNIPPET = frozenset(
    {"description", "snippet", "summary", "content", "excerpt", "abstract", "highlights"}
)
_TEXT = frozenset({"raw content", "text", "body", "full text", "page content", "markdown"})
_DATE = frozenset({"date", "published", "published date", "publisheddate", "age"})
_KNOWN = _TITLE | _URL | _SNIPPET | _TEXT | _DATE


@dataclass
class _Record:
    title: str = ""
    url: str = ""
    snippet: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    date: str = ""


def _unbold(text: str) -> str:
    return text.strip().strip("*").strip()


def _web_url(value: str) -> str:
    link = _LINK.search(value)
    if link:
        return link.group(2)
    found = _WEB.search(value)
    return found.group(0).rstrip(".,;>)") if found else ""


def _a_field(label: str) -> bool:
    # "Favicon", "Request ID": a capitalised label of a word or three. A continued
    # sentence that holds a colon ("died in Brussels: in 1924") is not one.
    return label[:1].isupper() and len(label.split()) <= 3


def _records(text: str) -> list[_Record]:
    records: list[_Record] = []
    current: _Record | None = None
    into: list[str] | None = None  # the field continuation lines go to

    def start(title: str = "") -> _Record:
        record = _Record(title=title)
        records.append(record)
        return record

    for line in text.splitlines():
        if _SEPARATOR.match(line):
            current, into = None, None
            continue
        if not line.strip():
            into = None
            continue
        labelled = _LABELLED.match(line)
        label = labelled.group(1).strip().lower() if labelled else ""
        value = labelled.group(2).strip() if labelled else ""
        item = _ITEM.match(line) or (_BULLET.match(line) if _LINK.search(line) else None)
        if label in _TITLE:
            current, into = start(_unbold(value)), None
        elif label in _URL and _web_url(value):
            if current is None or current.url:
                current = start()
            current.url, into = _web_url(value), None
        elif current is not None and label in _SNIPPET:
            current.snippet.append(value)
            into = current.snippet
        elif current is not None and label in _TEXT:
            current.text.append(value)
            into = current.text
        elif current is not None and label in _DATE:
            current.date, into = value, None
        elif item is not None:
            body = item.group(1)
            link = _LINK.search(body)
            if link is None:
                current, into = start(_unbold(body)), None
            else:
                current = start(_unbold(link.group(1)))
                current.url = link.group(2)
                rest = body[link.end() :].strip(" -–—:|")
                current.snippet = [rest] if rest else []
                into = current.snippet
        elif labelled and not value and label not in _KNOWN:
            current, into = None, None  # a heading of its own ("Images:"): results end
        elif labelled and label not in _KNOWN and _a_field(labelled.group(1)):
            into = None  # a field not read ("ID:", "Favicon:", "Author:")
        elif current is not None and into is not None:
            into.append(line.strip())
        elif current is not None and not current.snippet and not labelled:
            current.snippet.append(line.strip())  # a bare line under an item: its snippet
            into = current.snippet
    return records


def hits_from_listing(text: str, source: str) -> list[Hit]:
    """The results a text block lists, as hits in its order ([] when it lists none)."""
    # A bare URL line is no result: a passage that ends "Source: https://..." stays text.
    # A heading ("## Results") is no result either.
    records = [r for r in _records(text) if r.snippet or r.text or (r.url and r.title)]
    if not any(r.url for r in records):
        return []
    hits: list[Hit] = []
    for n, record in enumerate(records):
        body = " ".join(record.text).strip()
        snippet = " ".join(record.snippet).strip()
        if not record.url:  # nothing to fetch: what it says is its text
            body, snippet = body or snippet, ""
        hits.append(
            Hit(
                id=record.url or f"item-{n}",
                title=record.title or record.url or (snippet or body)[:80],
                text=body,
                url=record.url or None,
                snippet=snippet or body[:300],
                date=record.date or None,
                source=source,
            )
        )
    return hits
