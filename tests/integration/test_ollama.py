"""Ollama, recognised and spoken to natively (tests/servers/ollama_server.py).

Its `/v1/completions` applies the model's template and drops the thinking, so a raw
chain cannot be continued there: the client recognises Ollama (`/api/version`) and sends
our rendered prompt to `/api/generate` with `raw: true`; chat mode's first call goes to
`/api/chat` with `think: true`. `--base-url http://host:11434` (no /v1) just works.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.ask_support import CORPUS, run_cli
from tests.servers.ollama_server import MODEL, OllamaServer, ollama_server
from tests.servers.reasoning_server import thinks_on, two_hop_thinker

QUESTION = "Where was the designer of the Glimmer Bridge born?"
QUERIES = ["Glimmer Bridge designer", "Orla Venn birthplace"]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in CORPUS) + "\n", encoding="utf-8")
    return path


def ask(server: OllamaServer, url: str, corpus: Path, tmp_path: Path, *flags: str) -> Any:
    out = run_cli(
        *("ask", QUESTION, "--json", "--base-url", url, "--corpus", str(corpus)),
        *("--task", "multihop", "--chat-template", "qwen-think", "--cache", "off", *flags),
        tmp_path=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def generated(server: OllamaServer) -> list[dict[str, Any]]:
    return [b for p, b in server.requests if p == "/api/generate"]


@pytest.mark.parametrize("suffix", ["", "/v1"], ids=["root", "v1"])
def test_default_mode_continues_raw_on_api_generate(
    corpus: Path, tmp_path: Path, suffix: str
) -> None:
    with ollama_server(two_hop_thinker) as server:
        result = ask(server, server.root + suffix, corpus, tmp_path)
    assert result["answer"] == "Tessaly" and result["finish_reason"] == "answered"
    assert [s["query"] for s in result["searches"]] == QUERIES
    assert "/v1/completions" not in server.paths()
    calls = generated(server)
    assert len(calls) == 5  # three chain calls, two readers
    assert all(b["raw"] is True and b["think"] is False and b["model"] == MODEL for b in calls)
    assert all(b["options"]["stop"] for b in calls[:1])
    # Each chain call extends the previous prompt byte for byte (Ollama's prompt cache).
    chain = [b["prompt"] for b in calls if "**Current search query**" not in b["prompt"]]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(chain))
    assert result["trace"]["output"].startswith("First the designer.")


def test_chat_mode_thinks_on_api_chat_then_continues_raw(corpus: Path, tmp_path: Path) -> None:
    with ollama_server(two_hop_thinker) as server:
        result = ask(server, server.root, corpus, tmp_path, "--api-mode", "chat")
    assert result["answer"] == "Tessaly"
    assert [s["query"] for s in result["searches"]] == QUERIES
    chats = [b for p, b in server.requests if p == "/api/chat"]
    assert chats and chats[0]["think"] is True
    # The thinking came apart and was joined back into the chain.
    assert result["trace"]["output"].startswith("<think>\nFirst the designer.")
    continued = [b for b in generated(server) if "**Current search query**" not in b["prompt"]]
    assert len(continued) == 2 and all(b["raw"] for b in continued)
    for prompt in server.prompts:  # no prompt opened the thinking twice
        assert prompt.rsplit("<|im_start|>assistant\n", 1)[-1].count("<think>") <= 1


def test_stops_let_pass_in_the_thinking_still_search_on_ollama(
    corpus: Path, tmp_path: Path
) -> None:
    """Ollama's stop strings are taken to fire in the answer only (worst case); in chat
    mode the model thinks on past its query: the client ends the call at the marker."""
    with ollama_server(thinks_on(two_hop_thinker)) as server:
        result = ask(server, server.root, corpus, tmp_path, "--api-mode", "chat")
    assert result["answer"] == "Tessaly"
    assert [s["query"] for s in result["searches"]] == QUERIES


def test_chat_mode_works_with_a_model_that_does_not_think(corpus: Path, tmp_path: Path) -> None:
    """Ollama's /api/chat answers `think: true` for a model without thinking with a 400
    ("does not support thinking", server/routes.go): the client learns it once and
    asks without `think` from then on."""
    with ollama_server(two_hop_thinker, thinks=False) as server:
        result = ask(server, server.root, corpus, tmp_path, "--api-mode", "chat")
    assert result["answer"] == "Tessaly"
    assert [s["query"] for s in result["searches"]] == QUERIES
    native = [b for p, b in server.requests if p in ("/api/chat", "/api/generate")]
    assert native[0]["think"] is True  # refused once
    assert all("think" not in b for b in native[1:])
