"""`serve` streams the searches of a tools-mode run as it does for marker runs: the
whole stack (settings with `api_mode = "tools"`, real OpenAILLM, bm25 over a corpus)
against a loopback tool-call server, read with the official `openai` client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from tests.servers.tool_server import VLLM, tool_server, two_hop_tools

from search_o1.config import load_settings
from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread

QUESTION = "Where was the designer of the Glimmer Bridge born?"
ROWS = [
    {
        "id": "b1",
        "title": "Glimmer Bridge",
        "text": "The Glimmer Bridge was designed by Orla Venn.",
    },
    {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly in 1931."},
]


def test_serve_streams_tool_mode_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(tmp_path / "indexes"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    with tool_server(VLLM, two_hop_tools) as srv:
        settings = load_settings(
            {"base_url": srv.url, "corpus": str(corpus), "api_mode": "tools", "task": "multihop"},
            environ={},
        )
        with serve_in_thread(create_app(settings)) as url:
            client = openai.OpenAI(
                base_url=url + "/v1", api_key="unused", max_retries=0, timeout=20
            )
            messages: list[Any] = [{"role": "user", "content": QUESTION}]
            chunks = list(
                client.chat.completions.create(model="search-o1", messages=messages, stream=True)
            )
    order: list[str] = []
    reasoning, content = "", ""
    for chunk in chunks:
        ext = (chunk.model_extra or {}).get("search_o1")
        if ext is not None:
            order.append(f"{ext['type']}:{ext.get('query', '')}")
        if chunk.choices:
            delta = chunk.choices[0].delta
            reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
            content += delta.content or ""
    assert order[:4] == [
        "search_started:Glimmer Bridge designer",
        "search:Glimmer Bridge designer",
        "search_started:Orla Venn birthplace",
        "search:Orla Venn birthplace",
    ]
    assert content == "Tessaly"
    assert "Now where Orla Venn was born." in reasoning
    searched = [
        c for c in chunks if ((c.model_extra or {}).get("search_o1") or {}).get("type") == "search"
    ]
    assert (
        searched[1].model_extra["search_o1"]["refined"] == "Orla Venn was born in Tessaly in 1931."
    )
    assert len(srv.reader_requests) == 2 and all("tools" in b for b in srv.tool_requests)
