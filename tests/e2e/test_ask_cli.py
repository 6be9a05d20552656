"""`search-o1 ask` as a user runs it: a real subprocess, a real HTTP model server on
loopback scripted as a multi-hop reasoning model, and a JSONL corpus."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.ask_support import CORPUS, model_flags, run_cli
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.two_hop import respond_body as reasoning_model


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in CORPUS) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with openai_server(
        reasoning_model, return_stop=False, models=["fake-model", "fake-reader"]
    ) as srv:
        yield srv


def test_ask_json_multi_hop(server: FakeOpenAIServer, corpus: Path, tmp_path: Path) -> None:
    out = run_cli(
        "ask",
        "Where was the designer of the Glimmer Bridge born?",
        "--json",
        *model_flags(server.url, corpus),
        "--reader-model",
        "fake-reader",
        tmp_path=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["answer"] == "Tessaly"
    assert result["finish_reason"] == "answered"
    assert [s["query"] for s in result["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    assert result["searches"][0]["hits"][0]["id"] == "b1"
    assert result["searches"][1]["hits"][0]["id"] == "p1"
    models = [b["model"] for b in server.completion_requests]
    assert models.count("fake-reader") == 2 and "fake-model" in models
    assert result["usage"]["completion_tokens"] > 0


def test_ask_streams_and_writes_trace(
    server: FakeOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    trace_file = tmp_path / "out" / "trace.json"
    out = run_cli(
        "ask",
        "Where was the designer of the Glimmer Bridge born?",
        "--base-url",
        server.url,
        "--chat-template",
        "chatml",
        "--corpus",
        str(corpus),
        "--trace-out",
        str(trace_file),
        tmp_path=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "search: Glimmer Bridge designer" in out.stdout
    assert "answer: Tessaly" in out.stdout
    trace = json.loads(trace_file.read_text())
    assert trace["finish_reason"] == "answered"
    assert trace["steps"][0]["search"]["reader"]["refined"].startswith("The Glimmer Bridge")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["ask", "   ", "--base-url", "http://127.0.0.1:9/v1"], "question is empty"),
        (["ask", "q", "--backend", "nope"], "unknown llm backend"),
        (["ask", "q", "--search", "nope", "--base-url", "http://127.0.0.1:9/v1"], "unknown search"),
        (["ask", "q", "--task", "poetry"], "poetry"),
        (
            ["ask", "q", "--base-url", "http://127.0.0.1:9/v1", "--corpus", "/nonexistent.jsonl"],
            "nonexistent",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    out = run_cli(*args, tmp_path=tmp_path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_unreachable_server_names_the_url(corpus: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = run_cli(
        "ask",
        "q",
        "--base-url",
        url,
        "--model",
        "m",
        "--chat-template",
        "chatml",
        "--corpus",
        str(corpus),
        "--json",
        "--retries",  # one retry still goes through the retry path; four wait ~6 s
        "1",
        tmp_path=tmp_path,
    )
    assert out.returncode == 2
    assert url.rsplit("/v1", 1)[0] in out.stderr
    assert "Traceback" not in out.stderr
    shown = json.loads(out.stdout)  # --json still prints its object, saying why
    assert shown["finish_reason"] == "error" and url.rsplit("/v1", 1)[0] in shown["error"]


def test_malformed_corpus_lines_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "text": "ok"}\nnot json\n{"id": "3", "text": "ok"}\n{oops\n')
    out = run_cli(
        "ask", "q", "--base-url", "http://127.0.0.1:9/v1", "--corpus", str(bad), tmp_path=tmp_path
    )
    assert out.returncode == 2
    assert "2" in out.stderr and "4" in out.stderr and "Traceback" not in out.stderr


def _notes(tmp_path: Path) -> None:
    """The corpus as a folder of Markdown documents, one per row, titled by its heading."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for row in CORPUS:
        (notes / f"{row['id']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n")


@pytest.mark.parametrize("corpus_arg", ["notes", "./notes"])
def test_ask_reads_a_folder_named_relatively(
    server: FakeOpenAIServer, tmp_path: Path, corpus_arg: str
) -> None:
    # A relative folder used to fail: "relative path can't be expressed as a file URI".
    _notes(tmp_path)
    args = ["--base-url", server.url, "--chat-template", "chatml", "--task", "multihop"]
    question = "Where was the designer of the Glimmer Bridge born?"
    out = run_cli("ask", question, "--json", *args, "--corpus", corpus_arg, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["answer"] == "Tessaly"
    assert result["searches"][0]["hits"][0]["id"] == "b1.md#0"


def test_ask_reads_a_document_named_relatively(server: FakeOpenAIServer, tmp_path: Path) -> None:
    _notes(tmp_path)
    args = ["--base-url", server.url, "--chat-template", "chatml", "--json"]
    question = "Who designed the Glimmer Bridge?"
    out = run_cli("ask", question, *args, "--corpus", "notes/b1.md", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    hits = json.loads(out.stdout)["searches"][0]["hits"]
    assert [h["title"] for h in hits] == ["Glimmer Bridge"]


def test_ask_says_no_answer_for_the_placeholder(tmp_path: Path) -> None:
    # It used to print "answer: YOUR_ANSWER" and "finish: answered".
    with openai_server(lambda body: r"So: \boxed{YOUR_ANSWER}", return_stop=False) as srv:
        args = ["--base-url", srv.url, "--chat-template", "chatml", "--method", "direct"]
        out = run_cli("ask", "Where was Giacomo Puccini born?", *args, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "answer: (none)" in out.stdout and "YOUR_ANSWER" not in out.stdout.split("───")[-1]
    assert "finish: no_answer" in out.stdout


def test_cache_stats_after_a_corpus_run_says_local_searches_are_not_cached(
    server: FakeOpenAIServer, corpus: Path, tmp_path: Path
) -> None:
    args = ["--base-url", server.url, "--chat-template", "chatml", "--corpus", str(corpus)]
    asked = run_cli(
        "ask", "Where was the designer of the Glimmer Bridge born?", *args, tmp_path=tmp_path
    )
    assert asked.returncode == 0, asked.stderr
    stats = run_cli("cache", "stats", tmp_path=tmp_path)
    assert stats.returncode == 2
    assert stats.stderr == (
        "error: no cache at .search-o1/cache.sqlite; only web searches and fetched pages are"
        " cached; local corpus searches (bm25, dense, memory) are not\n"
    )
