"""`search-o1 ask` answers with its sources: the two-hop question on a hidden corpus, a
loopback model server scripted as the reasoner (its reader cites `[n]` when asked)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.ask_support import model_flags, run_cli
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.two_hop import ANSWER, GOLD_IDS, QUESTION, respond_body, write_corpus

from search_o1.sources import CITE_INSTRUCTION

EXE = Path(sys.executable).with_name("search-o1")


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with openai_server(respond_body, return_stop=False) as srv:
        yield srv


def ask(model: FakeOpenAIServer, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    corpus = write_corpus(tmp_path)
    out = run_cli("ask", QUESTION, *model_flags(model.url, corpus), *flags, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    return out


def test_json_sources_name_the_passage_of_each_hop(model: FakeOpenAIServer, tmp_path: Path) -> None:
    result = json.loads(ask(model, tmp_path, "--json").stdout)
    assert result["answer"] == ANSWER
    assert [s["id"] for s in result["sources"]] == GOLD_IDS
    first, second = result["sources"]
    assert first == {
        "n": 1,
        "id": "b1",
        "title": "Glimmer Bridge",
        "url": None,
        "quote": "The Glimmer Bridge was designed by Orla Venn.",
        "query": "Glimmer Bridge designer",
    }
    assert (second["n"], second["quote"]) == (2, "Orla Venn was born in Tessaly in 1931.")


def test_the_answer_is_printed_with_its_sources(model: FakeOpenAIServer, tmp_path: Path) -> None:
    out = ask(model, tmp_path).stdout
    tail = out[out.index("answer: Tessaly") :]
    assert "sources:" in tail
    assert "[1] Glimmer Bridge · passage b1" in tail
    assert "[2] Orla Venn · passage p1" in tail
    assert "“Orla Venn was born in Tessaly in 1931.”" in tail


def test_paper_profile_sends_the_reader_prompt_unchanged_and_keeps_all_documents(
    model: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = json.loads(ask(model, tmp_path, "--json", "--profile", "paper").stdout)
    readers = [
        b["prompt"] for b in model.completion_requests if "**Current search query**" in b["prompt"]
    ]
    assert readers and not any(CITE_INSTRUCTION in r for r in readers)
    # Every document of both searches (the town of bridges matched the first query too).
    assert [s["id"] for s in result["sources"]] == ["b1", "x1", "p1"]
