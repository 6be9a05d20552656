"""`ask` against the barest OpenAI-style servers: only POST /v1/completions (or only
/v1/chat/completions), ignoring `stream` and `stop`, reporting no usage, and answering
every other path with an HTML 404.

Servers like this exist (thin wrappers, research stubs); the client must still drive the
chain correctly from the completions alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.ask_support import CORPUS, run_cli
from tests.two_hop import respond_body as reasoning_model

from search_o1 import markers as mk


class _Handler(BaseHTTPRequestHandler):
    path_served = "/v1/completions"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

    def log_message(self, *args: Any) -> None:
        return None

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(404, b"<html>not here</html>", "text/html")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != self.path_served:
            self._send(404, b"<html>not here</html>", "text/html")
            return
        # Ignores stop and stream: the whole scripted text, with anything after the
        # query's end marker too.
        text = reasoning_model(_as_completion(body)) + " (and the model would go on here)"
        if "messages" in body:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}}
        else:
            choice = {"index": 0, "text": text}
        reply = {"choices": [{**choice, "finish_reason": "stop"}]}
        self._send(200, json.dumps(reply).encode(), "application/json")


class _ChatOnly(_Handler):
    path_served = "/v1/chat/completions"


def _as_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A chat request seen as the scripted model's raw prompt: the chain so far is the
    final assistant message, if any (the reader's request is one user message)."""
    if "messages" not in body:
        return body
    last = body["messages"][-1]
    if "**Current search query**" in last["content"]:
        return {"prompt": last["content"]}
    chain = last["content"] if last["role"] == "assistant" else ""
    return {"prompt": "<|im_start|>assistant\n" + chain}


@pytest.fixture(params=[_Handler, _ChatOnly], ids=["completions-only", "chat-only"])
def minimal_server(request: pytest.FixtureRequest) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), request.param)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_ask_drives_a_minimal_server(minimal_server: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in CORPUS) + "\n", encoding="utf-8")
    out = run_cli(
        "ask",
        "Where was the designer of the Glimmer Bridge born?",
        "--json",
        "--base-url",
        minimal_server,
        "--model",
        "any",
        "--corpus",
        str(corpus),
        tmp_path=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert [s["query"] for s in result["searches"]] == [
        "Glimmer Bridge designer",
        "Orla Venn birthplace",
    ]
    assert result["answer"] == "Tessaly"
    # Text the server sent past the query's end marker never entered the chain.
    assert f"{mk.END_QUERY} (and the model" not in result["trace"]["output"]
