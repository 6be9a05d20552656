"""`ask` as a user runs it against model servers that fail: a connection reset midway
through a chat stream nobody watches (`--json`) is sent again; a web server that is not
an OpenAI API (`python3 -m http.server`) gets one line and exit 2, at once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.ask_support import run_cli
from tests.servers.openai_server import openai_server
from tests.servers.static_site import static_web_server

QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris, so \\boxed{Paris}."


def test_json_ask_resends_a_chat_stream_reset_midway(tmp_path: Path) -> None:
    reset_first = lambda n: "reset" if n == 0 else None  # noqa: E731
    with openai_server(lambda body: ANSWER, fault=reset_first) as server:
        out = run_cli(
            "ask",
            QUESTION,
            "--json",
            "--method",
            "direct",
            "--api-mode",
            "chat",
            "--base-url",
            server.url,
            "--chat-template",
            "chatml",
            tmp_path=tmp_path,
        )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["answer"] == "Paris" and result["finish_reason"] == "answered"
    first, again = server.completion_requests
    assert first["messages"] == again["messages"]  # the same request, from the start


def test_a_static_web_server_gets_one_line_and_exit_2(tmp_path: Path) -> None:
    with static_web_server(tmp_path) as url:
        out = run_cli(
            "ask",
            QUESTION,
            "--method",
            "direct",
            "--base-url",
            url,
            "--chat-template",
            "chatml",
            tmp_path=tmp_path,
        )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    error = out.stderr.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error:") and "<html" not in error[0].lower()
    assert "an HTML page titled 'Error response'" in error[0]
    assert "SimpleHTTP" in error[0] and "expected an OpenAI-compatible JSON API" in error[0]
