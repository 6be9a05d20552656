"""What the client does when a server misbehaves: one line per fault, with the time taken.

    python -m bench.faults

Each fault is served by a loopback test server (tests/servers) on purpose. The script
also runs against an older tree of the package (old `complete` signature, no
`stall_timeout_s`), for a before/after comparison:

    PYTHONPATH=/path/to/old/src python -m bench.faults

Waits that would not end by themselves are stopped by the script at a stated cap.
"""

from __future__ import annotations

import asyncio
import functools
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.servers.openai_server import openai_server
from tests.servers.web import Reply, web_server

import search_o1
from search_o1.llm.openai import OpenAILLM
from search_o1.search.serper import SerperSearch
from search_o1.types import Message, Prompt, Sampling

NEW = hasattr(search_o1, "CompletionRequest")
ANSWER = "Paris is the capital of France, so \\boxed{Paris}."
PROMPT = Prompt((Message("user", "Capital of France?"),))


async def complete(llm: Any, on_text: Callable[[str], None] | None = None) -> Any:
    if NEW:
        request = search_o1.CompletionRequest(PROMPT, max_tokens=100, sampling=Sampling())
        return await llm.complete(request, on_text=on_text)
    return await llm.complete(PROMPT, stop=[], max_tokens=100, sampling=Sampling(), on_text=on_text)


async def timed(work: Awaitable[Any], cap: float) -> str:
    started = time.monotonic()
    try:
        outcome = f"returned {await asyncio.wait_for(work, cap)!r}"[:160]
    except TimeoutError:
        outcome = f"still waiting at {cap:g} s (stopped by the script)"
    except Exception as e:  # the point is to show whatever it raised
        outcome = f"{type(e).__name__}: {str(e)[:220]!r} ({len(str(e))} chars)"
    return f"{time.monotonic() - started:.1f}s  {outcome}"


async def fault(kind: str, *, first_only: bool = False, cap: float = 30, **kw: Any) -> str:
    def which(n: int) -> str | None:
        return kind if n == 0 or not first_only else None

    with openai_server(lambda b: ANSWER, fault=which, stall_s=kw.pop("stall_s", 1.0)) as s:
        llm = OpenAILLM(s.url, chat_template="chatml", **kw)
        result = await timed(complete(llm, lambda _: None), cap)
        await llm.aclose()
        return f"{result}  [completion requests: {len(s.completion_requests)}]"


class _Quiet(SimpleHTTPRequestHandler):
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

    def log_message(self, format: str, *args: Any) -> None:
        return None


async def static_server() -> str:
    """`python3 -m http.server` as the model server."""
    handler = functools.partial(_Quiet, directory=tempfile.mkdtemp())
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    llm = OpenAILLM(f"http://127.0.0.1:{httpd.server_address[1]}/v1", chat_template="chatml")
    result = await timed(complete(llm), 60)
    await llm.aclose()
    httpd.shutdown()
    return result


async def search(reply: Reply, cap: float) -> str:
    with web_server({"/search": reply}) as site:
        backend = SerperSearch(endpoint=site.url("/search"), api_key="k")
        result = await timed(backend.search("q", k=3), cap)
        await backend.aclose()
        return result


async def main() -> None:
    stall = {"stall_timeout_s": 2.0} if NEW else {}
    hit = {"organic": [{"title": "t", "link": "http://x.test/", "snippet": "s"}]}
    big = {"organic": [], "pad": "x" * 50_000_000}
    rows = {
        "HTML 200, every request": fault("html200"),
        "JSON 200 without choices, every request": fault("empty_choices"),
        "stream cut (no finish_reason, no [DONE]), every request": fault("truncate"),
        "connection reset mid-stream, first request, text shown": fault("reset", first_only=True),
        "stream stalls after half the text": fault("stall", stall_s=40, cap=20, **stall),
        "python3 -m http.server as --base-url": static_server(),
        "search API drips 1 byte/s (defaults)": search(Reply(body=hit, drip_s=1.0), 45),
        "search API answers 50 MB": search(Reply(body=big), 60),
    }
    for name, work in rows.items():
        print(f"{name}: {await work}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
