"""serve and ask where they used to leak or hang: markers in content, a prompt over the
context window, request bodies without a cap, /health showing the model server to
anyone, a port in use or a bad corpus found after "serving" was printed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from tests.serve_support import QUESTION, respond_text, scripted_engine
from tests.servers.openai_server import openai_server

from search_o1 import markers as mk
from search_o1._http import ssl_context
from search_o1.cli import cli
from search_o1.config import load_settings
from search_o1.engine import Engine
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.serve.app import create_app
from search_o1.serve.background import serve_in_thread
from search_o1.serve.chat_completions import without_markers

# One client and one TLS context for every request: a fresh httpx client loads the CA
# roots again (about 45 ms), even for plain http://.
http = httpx.Client(verify=ssl_context())


def teardown_module() -> None:
    http.close()  # its keep-alive connections, to servers long stopped


KEY = "sekret"
AUTH = {"Authorization": f"Bearer {KEY}"}
CHAT = "/v1/chat/completions"


def chat_body(question: str = QUESTION, **kw: Any) -> dict[str, Any]:
    return {"model": "search-o1", "messages": [{"role": "user", "content": question}], **kw}


def test_content_never_carries_our_markers() -> None:
    assert without_markers(f"So Lucca. {mk.BEGIN_QUERY}Lucca popul") == "So Lucca."
    assert without_markers(f"{mk.END_RESULT} It is {mk.END_QUERY}Lucca.") == "It is Lucca."
    assert without_markers(f"{mk.BEGIN_URL}http://x") == ""


def test_a_prompt_over_the_context_window_is_a_400_naming_both_sizes() -> None:
    llm = ScriptedLLM(lambda prompt: f"{mk.BEGIN_QUERY}x{mk.END_QUERY}", context=64)
    engine = Engine(llm, MemorySearch(lambda q: []))
    with serve_in_thread(create_app(engine)) as url:
        r = http.post(url + CHAT, json=chat_body("Why? " * 200), timeout=30)
        short = http.post(url + CHAT, json=chat_body("Why?", max_tokens=4), timeout=30)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "tokens" in error["message"] and "context window of 64" in error["message"]
    assert mk.BEGIN_QUERY not in short.text


def test_request_bodies_over_the_cap_get_413_unread() -> None:
    engine, _ = scripted_engine()
    app = create_app(engine, api_key=KEY, max_body_bytes=2000)
    big = json.dumps(chat_body("x" * 5000))

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap applies while reading
        for i in range(0, len(big), 500):
            yield big[i : i + 500].encode()

    as_json = {"Content-Type": "application/json"}
    with serve_in_thread(app) as url:
        declared = http.post(url + CHAT, content=big, headers={**AUTH, **as_json})
        streamed = http.post(url + CHAT, content=chunks(), headers={**AUTH, **as_json})
        unauthorised = http.post(url + CHAT, content=big, headers=as_json)
        fine = http.post(url + CHAT, json=chat_body(), headers=AUTH, timeout=30)
    assert declared.status_code == streamed.status_code == 413
    assert declared.json()["error"]["code"] == "request_too_large"
    assert unauthorised.status_code == 401
    assert fine.status_code == 200, fine.text


def test_health_shows_the_model_server_only_to_an_authorised_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(tmp_path / "indexes"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "1", "title": "T", "text": "Tosca is an opera."}) + "\n")

    def model(body: dict[str, Any]) -> str:
        return respond_text(body.get("prompt", ""), continuation="")

    with openai_server(model) as srv:
        values = {"base_url": srv.url, "chat_template": "chatml", "corpus": str(corpus)}
        settings = load_settings(values, environ={})
        with serve_in_thread(create_app(settings, api_key=KEY)) as url:
            anyone = http.get(url + "/health")
            owner = http.get(url + "/health", headers=AUTH)
    assert anyone.status_code == owner.status_code == 200
    assert srv.url not in anyone.text and "127.0.0.1" not in anyone.text
    assert anyone.json()["model"]["reachable"] == 1
    assert owner.json()["model"]["reachable"] == [srv.url]


def test_health_never_shows_a_password_in_a_model_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a serve key every loopback client sees the model servers; a base URL's
    # user:password@ was shown with them.
    monkeypatch.setenv("SEARCH_O1_INDEX_CACHE", str(tmp_path / "indexes"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "1", "title": "T", "text": "Tosca is an opera."}) + "\n")
    with openai_server(lambda body: "\\boxed{x}") as srv:
        base = srv.url.replace("http://", "http://user:sekret-pass@")
        values = {"base_url": base, "chat_template": "chatml", "corpus": str(corpus)}
        with serve_in_thread(create_app(load_settings(values, environ={}))) as url:
            health = http.get(url + "/health")
    assert health.status_code == 200 and "sekret" not in health.text
    assert health.json()["model"]["reachable"] == [srv.url]


def test_serve_binds_before_announcing_and_fails_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        busy = CliRunner().invoke(cli, ["serve", "--port", port, "--corpus", str(tmp_path)])
    assert busy.exit_code == 2
    assert busy.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
    missing = CliRunner().invoke(cli, ["serve", "--port", "0", "--corpus", "nope.jsonl"])
    assert missing.exit_code == 2 and "serving" not in missing.stderr
    assert "--corpus nope.jsonl: no such file" in missing.stderr


def test_a_pipeline_that_cannot_open_stops_serve_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    args = ["serve", "--port", "0", "--corpus", str(bad), "--base-url", "http://127.0.0.1:9/v1"]
    result = CliRunner().invoke(cli, [*args, "--model", "m"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [f"error: {bad}:1: invalid JSON (Expecting value)"]


def test_ask_json_prints_the_error_and_exits_2() -> None:
    args = ["ask", "Who?", "--json", "--base-url", "http://127.0.0.1:9/v1"]
    args += ["--model", "m", "--retries", "0", "--method", "direct"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    shown = json.loads(result.stdout)
    assert shown["finish_reason"] == "error" and "127.0.0.1:9" in shown["error"]
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")


def test_ask_says_in_one_line_when_the_question_is_over_the_window() -> None:
    with openai_server(lambda body: "\\boxed{x}", context_length=64) as srv:
        args = ["ask", "Why? " * 200, "--base-url", srv.url]
        args += ["--model", "fake-model", "--chat-template", "chatml", "--method", "direct"]
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "context window of 64" in lines[0]
