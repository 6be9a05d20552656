"""Search backends chosen by name on the command line: the built-in `memory` backend
(it used to crash outside the engine's error handling) and a third-party plugin found
through its entry point, both in a real `search-o1` subprocess against a loopback model."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.ask_support import EXE
from tests.plugin_dist import ECHO_ENTRY_POINTS, make_plugin
from tests.servers.openai_server import FakeOpenAIServer, openai_server
from tests.two_hop import respond_body as reasoning_model

QUESTION = "Where was the designer of the Glimmer Bridge born?"
HITS = {
    "Glimmer Bridge designer": [
        {
            "id": "b1",
            "title": "Glimmer Bridge",
            "text": "The Glimmer Bridge was designed by Orla Venn.",
        }
    ],
    "Orla Venn birthplace": [
        {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly in 1931."}
    ],
}


@pytest.fixture
def model() -> Iterator[FakeOpenAIServer]:
    with openai_server(reasoning_model, return_stop=False) as srv:
        yield srv


def _ask(model: FakeOpenAIServer, tmp_path: Path, *args: str, **env: str) -> dict[str, object]:
    argv = [
        str(EXE),
        "ask",
        QUESTION,
        "--json",
        "--base-url",
        model.url,
        "--chat-template",
        "chatml",
        "--task",
        "multihop",
        *args,
    ]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SEARCH_O1_")}
    out = subprocess.run(
        argv, capture_output=True, text=True, env={**environ, **env}, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_memory_backend_answers_from_a_hits_file(model: FakeOpenAIServer, tmp_path: Path) -> None:
    hits = tmp_path / "hits.json"
    hits.write_text(json.dumps(HITS), encoding="utf-8")
    result = _ask(model, tmp_path, "--search", "memory", "--corpus", str(hits))
    assert result["answer"] == "Tessaly" and result["finish_reason"] == "answered"
    searches = result["searches"]
    assert isinstance(searches, list)
    assert [s["hits"][0]["id"] for s in searches] == ["b1", "p1"]


def test_memory_backend_without_a_file_finds_nothing(
    model: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = _ask(model, tmp_path, "--search", "memory", "--max-searches", "1")
    searches = result["searches"]
    assert isinstance(searches, list) and searches
    assert searches[0]["query"] == "Glimmer Bridge designer" and searches[0]["hits"] == []
    assert result["finish_reason"] != "error"


def test_a_plugin_backend_is_chosen_by_name(model: FakeOpenAIServer, tmp_path: Path) -> None:
    site = make_plugin(tmp_path / "site", entry_points=ECHO_ENTRY_POINTS)
    result = _ask(model, tmp_path, "--search", "echo", "--max-searches", "1", PYTHONPATH=str(site))
    searches = result["searches"]
    assert isinstance(searches, list)
    assert searches[0]["hits"] == [{"id": "echo-1", "title": "Echo", "url": None}]
    assert searches[0]["documents"] == [{"id": "echo-1", "status": "ok"}]
