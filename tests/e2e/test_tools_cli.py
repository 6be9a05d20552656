"""`ask --api-mode tools` and `eval --api-mode tools` as a user runs them: real
subprocesses against loopback servers speaking the tool-call wire format (a plain chat
server and a DeepSeek-style reasoning one), over a JSONL corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.tools_support import QUESTION, cli
from tests.servers.tool_server import DEEPSEEK, PLAIN, Flavour, tool_server, two_hop_tools


@pytest.mark.parametrize("flavour", [PLAIN, DEEPSEEK], ids=lambda f: f.name)
def test_ask_json_answers_through_tool_calls(flavour: Flavour, tmp_path: Path) -> None:
    with tool_server(flavour, two_hop_tools) as srv:
        out = cli(tmp_path, "ask", QUESTION, "--json", "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["answer"], result["finish_reason"]) == ("Tessaly", "answered")
    assert [s["query"] for s in result["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    assert [s["hits"][0]["id"] for s in result["searches"]] == ["b1", "p1"]
    assert len(srv.reader_requests) == 2
    roles = [m["role"] for m in result["trace"]["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    if flavour is DEEPSEEK:
        assert result["trace"]["messages"][1]["echo"] == {
            "reasoning_content": "I need the designer first."
        }


def test_ask_streams_the_searches_of_a_tools_run(tmp_path: Path) -> None:
    with tool_server(DEEPSEEK, two_hop_tools) as srv:
        out = cli(tmp_path, "ask", QUESTION, "--base-url", srv.url)
    assert out.returncode == 0, out.stderr
    assert "search: Glimmer Bridge designer" in out.stdout
    assert "search: Orla Venn birthplace" in out.stdout
    assert "Now where Orla Venn was born." in out.stdout  # the reasoning, live
    assert "answer: Tessaly" in out.stdout


def test_eval_runs_in_tools_mode(tmp_path: Path) -> None:
    data = tmp_path / "hop.jsonl"
    rows = [{"id": "g1", "question": QUESTION, "golden_answers": ["Tessaly"]}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with tool_server(PLAIN, two_hop_tools) as srv:
        out = cli(
            tmp_path,
            "eval",
            "--dataset",
            str(data),
            "--out",
            "run",
            "--base-url",
            srv.url,
            "--no-progress",
        )
    assert out.returncode == 0, out.stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["em"] == 1.0
    [record] = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").open()]
    assert record["searches"] == ["Glimmer Bridge designer", "Orla Venn birthplace"]
