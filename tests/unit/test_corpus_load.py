"""Reading corpus sources: JSONL variants, bad lines, folders of documents, chunking."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest
from tests.servers.web import make_pdf

import search_o1.corpus.passage as passage_module
import search_o1.page_text as page_text_module
from search_o1.corpus.load import iter_passages, load_passages
from search_o1.corpus.passage import MAX_WORDS, Passage, chunk_text
from search_o1.errors import InputFileError


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_doctests() -> None:
    assert doctest.testmod(passage_module).failed == 0
    assert doctest.testmod(page_text_module).failed == 0


# ---- JSONL ----


def test_jsonl_flashrag_contents_title_is_unquoted(tmp_path: Path) -> None:
    row = {"id": "7", "contents": '"Tosca"\nTosca is an opera by Giacomo Puccini.'}
    path = write_lines(tmp_path / "c.jsonl", [json.dumps(row)])
    assert load_passages(path) == [Passage("7", "Tosca", "Tosca is an opera by Giacomo Puccini.")]


def test_jsonl_title_text_and_text_only_with_default_ids(tmp_path: Path) -> None:
    lines = [
        json.dumps({"title": "A", "text": "alpha text"}),
        "",  # blank lines are skipped but still counted
        json.dumps({"text": "just text", "id": 42}),
        json.dumps({"contents": "no newline means no title"}),
    ]
    got = load_passages(write_lines(tmp_path / "c.jsonl", lines))
    assert got == [
        Passage("1", "A", "alpha text"),
        Passage("42", "", "just text"),
        Passage("4", "", "no newline means no title"),
    ]


def test_jsonl_one_bad_line_names_it(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", ['{"text": "ok"}', '{"text": "ok"}', "{oops"])
    with pytest.raises(InputFileError) as info:
        load_passages(path)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: invalid JSON")


def test_jsonl_many_bad_lines_are_all_counted_and_five_named(tmp_path: Path) -> None:
    lines = ['{"text": "ok"}', "[1, 2]", '{"title": "no text"}', "nope"] + ["{"] * 5
    path = write_lines(tmp_path / "c.jsonl", lines)
    with pytest.raises(InputFileError) as info:
        load_passages(path)
    message = str(info.value)
    assert "8 bad lines" in message
    assert "line 2: not a JSON object" in message
    assert "line 3: no string 'contents' or 'text' field" in message
    assert "line 4: invalid JSON" in message
    assert "and 3 more" in message
    assert "\n" not in message


def test_jsonl_non_utf8_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "fine"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(InputFileError, match=r":2: not UTF-8"):
        load_passages(path)


@pytest.mark.parametrize("depth", [900, 5000])  # past the scrub's recursion; the parser's
def test_jsonl_nested_too_deeply_is_a_bad_line(tmp_path: Path, depth: int) -> None:
    deep = '{"text": ' + "[" * depth + "]" * depth + "}"
    path = write_lines(tmp_path / "c.jsonl", ['{"text": "ok"}', deep])
    with pytest.raises(InputFileError, match=r":2: invalid JSON \(nested too deeply\)"):
        load_passages(path)


def test_missing_path_and_empty_corpus(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file or folder"):
        iter_passages(tmp_path / "absent.jsonl")
    empty = write_lines(tmp_path / "empty.jsonl", [""])
    with pytest.raises(InputFileError, match="no passages"):
        load_passages(empty)


# ---- folders ----


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("Plain notes about Tosca.\n\nSecond paragraph.")
    (root / "guide.md").write_text("Intro line\n\n# The Guide\n\nPuccini wrote operas.")
    (root / "sub" / "page.html").write_text(
        "<html><head><title>Opera Page</title><script>var x = 'tosca';</script></head>"
        "<body><h1>Heading</h1><p>Rome &amp; Lucca.</p><p>Second.</p></body></html>"
    )
    (root / "paper.pdf").write_bytes(make_pdf("Hello PDF world"))
    (root / ".hidden.txt").write_text("never read")
    (root / "data.csv").write_text("a,b")
    return root


def test_folder_reads_every_kind_with_titles_and_ids(docs: Path) -> None:
    got = {p.id: p for p in load_passages(docs)}
    assert sorted(got) == ["guide.md#0", "notes.txt#0", "paper.pdf#0", "sub/page.html#0"]
    assert got["notes.txt#0"].title == "notes"
    assert got["guide.md#0"].title == "The Guide"
    page = got["sub/page.html#0"]
    assert page.title == "Opera Page"
    assert "Rome & Lucca." in page.text and "Second." in page.text and "var x" not in page.text
    assert got["paper.pdf#0"].title == "paper"
    assert "Hello PDF world" in got["paper.pdf#0"].text


def test_pdf_metadata_title_wins(tmp_path: Path) -> None:
    (tmp_path / "x.pdf").write_bytes(make_pdf("Body text", title="Real Title"))
    assert load_passages(tmp_path)[0].title == "Real Title"


def test_a_single_document_file_is_a_source(docs: Path) -> None:
    assert [p.id for p in load_passages(docs / "notes.txt")] == ["notes.txt#0"]


def test_folder_reports_binary_and_broken_pdf_files_together(docs: Path) -> None:
    (docs / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(InputFileError) as info:
        load_passages(docs)
    message = str(info.value)
    assert "2 unreadable files" in message
    assert "image.txt: binary content, not text" in message
    assert "broken.pdf: unreadable PDF" in message


# ---- chunking ----


def test_chunks_stay_within_bounds_and_follow_paragraphs() -> None:
    paragraph = " ".join(f"Sentence number {i} has exactly seven words." for i in range(10))
    text = "\n\n".join([paragraph] * 12)  # 70 words a paragraph, 840 in all
    chunks = chunk_text(text)
    sizes = [len(c.split()) for c in chunks]
    assert all(s <= MAX_WORDS for s in sizes)
    assert all(s >= 100 for s in sizes[:-1])
    assert sum(sizes) == 840
    # every chunk ends on a sentence boundary
    assert all(c.endswith(".") for c in chunks)


def test_an_overlong_sentence_is_cut_by_words() -> None:
    chunks = chunk_text(" ".join(["word"] * 450))
    assert [len(c.split()) for c in chunks] == [200, 200, 50]


def test_long_document_in_folder_becomes_several_passages(tmp_path: Path) -> None:
    body = "\n\n".join(" ".join(["Alpha beta gamma delta."] * 30) for _ in range(5))
    (tmp_path / "long.txt").write_text(body)
    passages = load_passages(tmp_path)
    assert [p.id for p in passages] == [f"long.txt#{i}" for i in range(len(passages))]
    assert len(passages) >= 3
    assert all(p.title == "long" for p in passages)


def test_jsonl_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "first"}\n{"text": "second"}\n')
    assert [p.text for p in load_passages(path)] == ["first", "second"]
