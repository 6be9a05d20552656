"""`ask` as a user runs it against chat-only reasoning servers: the same searches and
answer as against raw completions, with the thinking in `reasoning_content` or in
`reasoning` (loopback servers in the vLLM wire format of each era)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.ask_support import CORPUS, run_cli
from tests.servers.reasoning_server import (
    DEEPSEEK,
    SGLANG,
    VLLM,
    VLLM_010,
    Flavour,
    Model,
    reasoning_server,
    thinks_on,
    two_hop_thinker,
)

QUESTION = "Where was the designer of the Glimmer Bridge born?"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in CORPUS) + "\n", encoding="utf-8")
    return path


def ask(
    flavour: Flavour,
    corpus: Path,
    tmp_path: Path,
    model: Model = two_hop_thinker,
    *flags: str,
    **changes: Any,
) -> dict[str, Any]:
    with reasoning_server(flavour, model, **changes) as server:
        out = run_cli(
            *("ask", QUESTION, "--json", "--base-url", server.url, "--corpus", str(corpus)),
            *("--task", "multihop", "--chat-template", "qwen-think", "--cache", "off"),
            *flags,
            tmp_path=tmp_path,
        )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def continuations(result: dict[str, Any]) -> list[str | None]:
    return [step["completion"]["continuation"] for step in result["trace"]["steps"]]


def test_chat_only_reasoning_servers_search_like_raw_completions(
    corpus: Path, tmp_path: Path
) -> None:
    raw = ask(VLLM, corpus, tmp_path)
    assert raw["answer"] == "Tessaly" and raw["finish_reason"] == "answered"
    assert [s["query"] for s in raw["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    assert continuations(raw) == ["raw", "raw", "raw"]
    for flavour in (VLLM_010, VLLM):  # reasoning_content, then reasoning
        chat = ask(flavour, corpus, tmp_path, completions=False)
        assert chat["answer"] == raw["answer"]
        assert chat["searches"] == raw["searches"]
        assert continuations(chat) == [None, "continue_final", "continue_final"]
        assert chat["trace"]["output"].startswith("<think>\nFirst the designer.")


# Servers that let the end marker pass while the model thinks on to max_tokens.
STOPS_PASS = [
    pytest.param(VLLM, {"stops": "none"}, (), id="raw-streamed"),
    pytest.param(VLLM, {"stops": "none", "streams": False}, (), id="raw-whole"),
    pytest.param(
        VLLM_010, {"stops": "none", "completions": False}, ("--api-mode", "chat"), id="chat"
    ),
    pytest.param(DEEPSEEK, {}, (), id="deepseek-content-only"),
    pytest.param(DEEPSEEK, {"streams": False}, (), id="deepseek-whole"),
]


@pytest.mark.parametrize(("flavour", "changes", "flags"), STOPS_PASS)
def test_stops_let_pass_in_the_thinking_still_search(
    corpus: Path, tmp_path: Path, flavour: Flavour, changes: dict[str, Any], flags: tuple[str, ...]
) -> None:
    result = ask(flavour, corpus, tmp_path, thinks_on(two_hop_thinker), *flags, **changes)
    assert result["answer"] == "Tessaly" and result["finish_reason"] == "answered"
    assert [s["query"] for s in result["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    steps = result["trace"]["steps"]
    assert [s["completion"]["client_stop"] for s in steps] == [True, True, False]


@pytest.mark.parametrize(
    ("flavour", "flags"),
    [
        pytest.param(VLLM, ("--chat-template", "server"), id="vllm"),
        pytest.param(SGLANG, ("--chat-template", "qwen3"), id="sglang"),
    ],
)
def test_qwen3s_template_in_chat_mode_searches_like_the_others(
    corpus: Path, tmp_path: Path, flavour: Flavour, flags: tuple[str, ...]
) -> None:
    """Qwen3's template closes the thinking before a continued message (vLLM) or opens
    none (SGLang): the chain still continues inside its thinking."""
    result = ask(
        flavour, corpus, tmp_path, two_hop_thinker, "--api-mode", "chat", *flags, template="qwen3"
    )
    assert result["answer"] == "Tessaly" and result["finish_reason"] == "answered"
    assert [s["query"] for s in result["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
