"""`ask --api-mode tools --tools-api responses` as a user runs it: a real subprocess
against a loopback server speaking OpenAI's Responses API, over a JSONL corpus; and the
flag in `ask --help`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.tools_support import EXE, QUESTION, cli
from tests.servers.responses_server import responses_server
from tests.servers.tool_server import two_hop_tools


def test_ask_json_answers_over_the_responses_api(tmp_path: Path) -> None:
    with responses_server(two_hop_tools) as srv:
        out = cli(
            tmp_path, "ask", QUESTION, "--json", "--base-url", srv.url, "--tools-api", "responses"
        )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["answer"], result["finish_reason"]) == ("Tessaly", "answered")
    assert [s["query"] for s in result["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    assert len(srv.turns) == 3 and len(srv.reader_requests) == 2
    assert all(b["max_output_tokens"] > 0 and b["store"] is False for b in srv.turns)
    first = result["trace"]["messages"][1]
    assert first["reasoning"] == "I need the designer first."
    # The turn's output items are kept in the trace as they were sent back.
    assert [i["type"] for i in first["echo"]["output"]] == ["reasoning", "function_call"]
    assert srv.turns[1]["input"][1] == first["echo"]["output"][0]


def test_ask_streams_the_summary_of_a_responses_run(tmp_path: Path) -> None:
    with responses_server(two_hop_tools) as srv:
        out = cli(tmp_path, "ask", QUESTION, "--base-url", srv.url, "--tools-api", "responses")
    assert out.returncode == 0, out.stderr
    assert "search: Orla Venn birthplace" in out.stdout
    assert "Now where Orla Venn was born." in out.stdout  # the reasoning summary, live
    assert "answer: Tessaly" in out.stdout


def test_ask_help_names_the_flag() -> None:
    out = subprocess.run([str(EXE), "ask", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert "--tools-api [auto|chat|responses]" in out.stdout
