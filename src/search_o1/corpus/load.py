"""Reading corpus sources into passages: JSONL files and folders of documents.

JSONL (one JSON object a line, UTF-8): FlashRAG's `contents` ("Title\\ntext"), or
`title` + `text`, or `text` alone; `id` is optional (default: the line number).
Folders: .txt, .md, .html and .pdf files, found recursively (hidden ones skipped), each
cut into passages of 100-200 words titled by the document's title or file name. Files
become text exactly as fetched web pages do (`search_o1.page_text`: charset detection,
boilerplate removal for HTML).

Bad input fails as a whole, before anything is built: every malformed JSONL line, or every
file that is binary or not a readable PDF, is collected and reported in one error.
Lone surrogates (a JSON escape such as \\ud800, which UTF-8 cannot hold) become U+FFFD
as the text is read, counted in `Passage.replaced`; left in, they would end the index's
save, or a model request, far from their cause.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from search_o1.corpus.passage import Passage, chunk_text
from search_o1.errors import InputFileError
from search_o1.page_text import UnsupportedContent, extract, file_content_type
from search_o1.text_safety import scrub_count, scrub_data

__all__ = [
    "DOCUMENT_SUFFIXES",
    "document_files",
    "iter_passages",
    "load_passages",
    "read_document",
    "read_folder",
    "read_jsonl",
]

DOCUMENT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".html", ".htm", ".pdf"})
# How many problems an error message names; the rest are counted.
_SHOWN = 5


def _problems(problems: list[str], noun: str) -> str:
    shown = "; ".join(problems[:_SHOWN])
    more = f"; and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    return f"{len(problems)} {noun}{'s' if len(problems) > 1 else ''}: {shown}{more}"


# ---- JSONL ----


def _split_contents(contents: str) -> tuple[str, str]:
    """FlashRAG's "Title\\ntext": the first line is the title, often wrapped in quotes."""
    title, sep, text = contents.partition("\n")
    if not sep:
        return "", contents.strip()
    title = title.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, text.strip()


def _record_fields(obj: Any) -> tuple[str, str]:
    """(title, text) of one JSONL record; ValueError says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    title, text = obj.get("title", ""), obj.get("text")
    if text is None and isinstance(obj.get("contents"), str):
        return _split_contents(obj["contents"])
    if not isinstance(text, str):
        raise ValueError("no string 'contents' or 'text' field")
    if not isinstance(title, str):
        raise ValueError("'title' is not a string")
    return title.strip(), text.strip()


def _parse_line(raw: bytes, lineno: int) -> Passage | None:
    """One JSONL line as a passage (None for a blank line); ValueError when malformed."""
    try:
        # utf-8-sig: editors on Windows start files with a byte-order mark.
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
        obj, replaced = scrub_data(obj)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON ({e.msg})") from None
    except RecursionError:  # nested past what parsing (or scrubbing) can follow
        raise ValueError("invalid JSON (nested too deeply)") from None
    title, text = _record_fields(obj)
    raw_id = obj.get("id")
    ident = str(raw_id) if isinstance(raw_id, str | int) else str(lineno)
    return Passage(ident, title, text, replaced) if (title or text) else None


def read_jsonl(path: Path) -> Iterator[Passage]:
    """The passages of a JSONL file; raises InputFileError naming every malformed line."""
    problems: list[str] = []
    first_bad: int | None = None
    try:
        f = path.open("rb")
    except OSError as e:
        raise InputFileError(str(path), f"cannot read ({e.strerror})") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            try:
                passage = _parse_line(raw, lineno)
            except ValueError as e:
                problems.append(f"line {lineno}: {e}")
                first_bad = first_bad or lineno
                continue
            if passage is not None:
                yield passage
    if problems:
        line = first_bad if len(problems) == 1 else None
        message = problems[0].partition(": ")[2] if line else _problems(problems, "bad line")
        raise InputFileError(str(path), message, line=line)


# ---- documents ----


def _document_text(path: Path) -> tuple[str, str]:
    """(title, text) of one document file; ValueError when it cannot be read as text."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot read ({e.strerror})") from None
    try:
        # A file URI must be absolute; the user may have named the file relatively.
        doc = extract(data, file_content_type(path.suffix), path.absolute().as_uri())
    except UnsupportedContent as e:
        raise ValueError(f"{path}: {e}") from None
    return doc.title, doc.text


def read_document(path: Path, ident: str) -> list[Passage]:
    """One document cut into passages with ids `ident#0`, `ident#1`, ...

    The title is the document's own (<title>, first `# ` heading, PDF metadata), else the
    file name without its suffix. Raises ValueError for a file that cannot be read.
    """
    title, text = _document_text(path)
    title, in_title = scrub_count(title or path.stem)
    passages = []
    for i, chunk in enumerate(chunk_text(text)):
        chunk, replaced = scrub_count(chunk)
        # The title's count goes with the first passage only: it is one title.
        passages.append(
            Passage(f"{ident}#{i}", title, chunk, replaced + (in_title if i == 0 else 0))
        )
    return passages


def document_files(root: Path) -> list[Path]:
    """Document files under `root`, sorted for stable ids; hidden files and folders skipped."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.suffix.lower() in DOCUMENT_SUFFIXES and path.is_file():
            found.append(path)
    return sorted(found)


def read_folder(root: Path) -> Iterator[Passage]:
    """The passages of every document under `root`; one error lists every unreadable file."""
    problems: list[str] = []
    for path in document_files(root):
        try:
            passages = read_document(path, path.relative_to(root).as_posix())
        except ValueError as e:
            problems.append(str(e))
            continue
        yield from passages
    if problems:
        raise InputFileError(str(root), _problems(problems, "unreadable file"))


# ---- any source ----


def iter_passages(source: str | Path) -> Iterator[Passage]:
    """Passages from a JSONL file, a single document file or a folder of documents."""
    path = Path(source).expanduser()
    if not path.exists():
        raise InputFileError(str(path), "no such file or folder")
    if path.is_dir():
        return read_folder(path)
    if path.suffix.lower() in DOCUMENT_SUFFIXES:
        try:
            return iter(read_document(path, path.name))
        except ValueError as e:
            raise InputFileError(str(path), str(e).removeprefix(f"{path}: ")) from None
    return read_jsonl(path)


def load_passages(source: str | Path) -> list[Passage]:
    """All passages of `source` (see `iter_passages`); raises InputFileError when none."""
    passages = list(iter_passages(source))
    if not passages:
        raise InputFileError(str(source), "no passages found (empty corpus)")
    return passages
