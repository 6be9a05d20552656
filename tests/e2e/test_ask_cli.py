"""`search-o1 ask` as a user runs it: a real subprocess, a real HTTP model server on
loopback scripted as a multi-hop reasoning model, and a JSONL corpus."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.servers.openai_server import FakeOpenAIServer, openai_server

from search_o1 import markers as mk

EXE = Path(sys.executable).with_name("search-o1")

CORPUS = [
    {
        "id": "b1",
        "title": "Glimmer Bridge",
        "text": "The Glimmer Bridge was designed by Orla Venn.",
    },
    {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly in 1931."},
    {"id": "x1", "title": "Tessaly", "text": "Tessaly is a river town known for its bridges."},
    {"id": "x2", "title": "Kelp", "text": "Kelp forests grow in cold coastal waters."},
]


def reasoning_model(body: dict[str, Any]) -> str:
    """A two-hop reasoner: designer -> birthplace, reading facts from result blocks."""
    prompt = body.get("prompt") or body["messages"][-1]["content"]
    if "**Current search query**" in prompt:  # Reason-in-Documents
        docs = prompt.split("**Search results**", 1)[1]
        first = re.search(r"\*\*Document 1\*\*: [^\n]*\n([^\n]+)", docs)
        return "Reading.\n**Final Information**\n\n" + (first.group(1) if first else "nothing")
    chain = prompt.rsplit("<|im_start|>assistant\n", 1)[-1]  # the chain, not the examples
    results = re.findall(
        re.escape(mk.BEGIN_RESULT) + r"\n(.*?)\n" + re.escape(mk.END_RESULT), chain, re.S
    )
    if not results:
        return f"First the designer. {mk.BEGIN_QUERY}Glimmer Bridge designer{mk.END_QUERY}"
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return f"Now where {name} was born. {mk.BEGIN_QUERY}{name} birthplace{mk.END_QUERY}"
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    return f"So the answer is \\boxed{{{place.group(1) if place else '?'}}}."


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


def run_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
    env.pop("SEARCH_O1_BACKEND", None)
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )


def test_ask_json_multi_hop(server: FakeOpenAIServer, corpus: Path, tmp_path: Path) -> None:
    out = run_cli(
        "ask",
        "Where was the designer of the Glimmer Bridge born?",
        "--json",
        "--base-url",
        server.url,
        "--model",
        "fake-model",
        "--reader-model",
        "fake-reader",
        "--chat-template",
        "chatml",
        "--corpus",
        str(corpus),
        "--task",
        "multihop",
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
