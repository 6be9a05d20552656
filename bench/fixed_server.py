"""A second, independent latency-simulating server: fixed costs, no batching, no cache.

    python -m bench.fixed_server --port 8201

Deliberately unlike sim_engine: stdlib threads, real (unscaled) sleeps, every request
costs `base + per_token x tokens` whatever else is running, and searches (POST /retrieve,
the FlashRAG retriever protocol) cost a fixed delay. Chain i searches crc32(question) % 4
times; one segment in six is long. It checks that the ordering between the schedules
does not depend on the main simulator's model of a GPU.
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BASE_S, PER_TOKEN_S, SEARCH_S = 0.02, 0.0005, 0.3
SHORT, LONG = 150, 1500
EQ, BQ = "<|end_search_query|>", "<|begin_search_query|>"


def reply_for(prompt: str) -> str:
    head, _, tail = prompt.partition("<|im_start|>assistant\n")
    if "**Final Information**" in head:
        return "Checked the pages. " * 20 + "\n**Final Information**\n\nThe fact is known."
    seed = zlib.crc32(head.encode())
    turn = tail.count(EQ)
    tokens = LONG if zlib.crc32(f"{seed}/{turn}".encode()) % 6 == 0 else SHORT
    text = "reason " * (tokens * 4 // 7)
    if turn < seed % 4:
        return f"{text}{BQ}fact {seed} {turn}{EQ}"
    return f"{text}so \\boxed{{{seed % 97}}}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one response per connection: no framing to get wrong
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _json(self, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._json({"data": [{"id": "fixed", "object": "model", "owned_by": "fixed"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.endswith("/retrieve"):
            time.sleep(SEARCH_S)
            query = body["queries"][0]
            docs = [
                {"document": {"id": f"{i}", "contents": f'"Page {i}"\n{query} is a fact.'}}
                for i in range(body.get("topk", 10))
            ]
            return self._json({"result": [docs]})
        text = reply_for(str(body.get("prompt", "")))
        if EQ in text and not body.get("include_stop_str_in_output"):
            text = text[: text.index(EQ)]
        time.sleep(BASE_S + PER_TOKEN_S * len(text) / 4)
        choice = {"index": 0, "text": text, "finish_reason": "stop", "stop_reason": None}
        if body.get("stream"):
            return self._stream(choice)
        self._json({"choices": [choice]})

    def _stream(self, choice: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # all questions may connect at once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8201)
    port = parser.parse_args().port
    Server(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
