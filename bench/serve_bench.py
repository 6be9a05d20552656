"""The server's overhead per request: `search-o1 serve` vs. calling the engine directly.

Both sides run the same scripted model and in-memory search (one search, one reader
call, an answer), so the difference is what HTTP, JSON/SSE and the run machinery add.
The server runs in a child process (uvicorn, as `serve` runs it) so client and server do
not share a GIL; requests go one at a time over a keep-alive connection.

    python bench/serve_bench.py [-n 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Where was the composer of Tosca born?"


def _engine():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT))
    from tests.serve_support import scripted_engine

    return scripted_engine()[0]


def child(port: int) -> None:
    """The server side: the serve app over the scripted engine, as uvicorn runs it."""
    import uvicorn

    from search_o1.serve.app import create_app

    app = create_app(_engine(), max_concurrency=4, max_queue=16)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _summary(name: str, samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    out = {
        "mean_ms": statistics.fmean(ms),
        "p50_ms": ms[len(ms) // 2],
        "p95_ms": ms[int(len(ms) * 0.95) - 1],
    }
    mean, p50, p95 = out["mean_ms"], out["p50_ms"], out["p95_ms"]
    print(f"{name:<22} mean {mean:7.3f} ms   p50 {p50:7.3f}   p95 {p95:7.3f}")
    return out


def _timed(n: int, call: Callable[[], object]) -> list[float]:
    for _ in range(10):  # warm-up: imports, connection, first-request paths
        call()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


async def _direct(n: int) -> list[float]:
    engine = _engine()
    for _ in range(10):
        await engine.run(QUESTION)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        trace = await engine.run(QUESTION)
        samples.append(time.perf_counter() - start)
        assert trace.answer == "Lucca"
    return samples


def _wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the server process exited early")
        try:
            if httpx.get(url + "/health").status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the server did not come up")


def _measure(url: str, n: int) -> dict[str, dict[str, float]]:
    """The same question n times: the engine directly, then the server plain and streamed."""
    body = {"model": "search-o1", "messages": [{"role": "user", "content": QUESTION}]}
    with httpx.Client(base_url=url, timeout=30) as http:

        def plain() -> None:
            r = http.post("/v1/chat/completions", json=body)
            assert r.json()["choices"][0]["message"]["content"] == "Lucca"

        def streamed() -> None:
            with http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as r:
                lines = [line for line in r.iter_lines() if line]
            assert lines[-1] == "data: [DONE]"

        print(f"{n} sequential requests, scripted model, one search per question")
        return {
            "direct": _summary("engine.run (direct)", asyncio.run(_direct(n))),
            "non_streaming": _summary("serve, non-streaming", _timed(n, plain)),
            "streaming": _summary("serve, streaming", _timed(n, streamed)),
        }


def _report(n: int, means: dict[str, dict[str, float]]) -> None:
    direct = means["direct"]["mean_ms"]
    overhead = {
        "non_streaming_ms": means["non_streaming"]["mean_ms"] - direct,
        "streaming_ms": means["streaming"]["mean_ms"] - direct,
    }
    print(
        f"overhead per request (mean): non-streaming {overhead['non_streaming_ms']:.3f} ms, "
        f"streaming {overhead['streaming_ms']:.3f} ms"
    )
    print(json.dumps({"n": n, **means, "overhead": overhead}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="requests per mode")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(port)], cwd=ROOT)
    try:
        _wait_up(url, proc)
        means = _measure(url, args.n)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    _report(args.n, means)


if __name__ == "__main__":
    main()
