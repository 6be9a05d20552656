"""Web layer benchmark: page fetch throughput against local pages, and cache overhead.

    python bench/web_bench.py [--pages 200] [--concurrency 16] [--lookups 20000]

Fetching: a local threaded HTTP server serves article pages (~25 KB of HTML with
boilerplate); we time (a) download only, through the guarded client, (b) download plus
main-text extraction (trafilatura), (c) the document step (fetch + extract + cache
write + snippet window). The server runs in this process, so on a small machine it
competes with the client for the CPU: the numbers are a floor, not a ceiling.

Cache: microseconds per lookup (hit, miss), per store, on a file with a few thousand
entries, for search results (10 hits) and page texts (~20 KB).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx

from search_o1.cache import Cache
from search_o1.fetch import FetchConfig, HostPolicy, PageFetcher, WebDocuments
from search_o1.fetch.fetcher import FetchError
from search_o1.types import Hit

PARAGRAPH = (
    "The committee met on {n} occasions to review the restoration of the old opera house, "
    "whose balconies were rebuilt with traditional lime plaster and oak beams. "
)


def _page(n: int) -> bytes:
    body = "".join(f"<p>{PARAGRAPH.format(n=i) * 3}</p>" for i in range(40))
    nav = "<nav>" + " | ".join(f"<a href='/s{i}'>Section {i}</a>" for i in range(30)) + "</nav>"
    html = (
        f"<!doctype html><html><head><title>Page {n}</title><script>var t={n};</script>"
        f"</head><body>{nav}<article><h1>Report {n}</h1>{body}"
        f"<p>Fact {n}: the premiere took place in Rome.</p></article>"
        "<footer>Copyright. Cookie settings. Subscribe.</footer></body></html>"
    )
    return html.encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # else each keep-alive reply waits ~40 ms for a delayed ACK
    pages: ClassVar[dict[str, bytes]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        body = self.pages.get(self.path, b"")
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(n_pages: int) -> tuple[ThreadingHTTPServer, str]:
    _Handler.pages = {f"/p{i}": _page(i) for i in range(n_pages)}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


async def _download_only(fetcher: PageFetcher, urls: list[str]) -> float:
    async def one(url: str) -> None:
        await fetcher._download_with_deadline(httpx.URL(url))

    start = time.perf_counter()
    await asyncio.gather(*(one(u) for u in urls))
    return time.perf_counter() - start


async def _fetch_all(fetcher: PageFetcher, urls: list[str]) -> tuple[float, int]:
    async def one(url: str) -> bool:
        try:
            await fetcher.fetch(url)
        except FetchError:
            return False
        return True

    start = time.perf_counter()
    ok = await asyncio.gather(*(one(u) for u in urls))
    return time.perf_counter() - start, sum(ok)


async def bench_fetch(n_pages: int, concurrency: int) -> dict[str, Any]:
    httpd, base = _serve(n_pages)
    urls = [f"{base}/p{i}" for i in range(n_pages)]
    config = FetchConfig(max_concurrency=concurrency, per_host=concurrency)
    policy = HostPolicy(allow_private=True)
    out: dict[str, Any] = {"pages": n_pages, "page_kb": round(len(_page(0)) / 1024, 1)}
    try:
        fetcher = PageFetcher(config, policy)
        await _fetch_all(fetcher, urls[:4])  # warm-up: imports, first connections
        t = await _download_only(fetcher, urls)
        out["download_pages_per_s"] = round(n_pages / t, 1)
        t, ok = await _fetch_all(fetcher, urls)
        out["fetch_extract_pages_per_s"] = round(n_pages / t, 1)
        out["fetch_ok"] = ok
        await fetcher.aclose()
        with tempfile.TemporaryDirectory() as tmp:
            cache = Cache(Path(tmp) / "c.sqlite")
            docs = WebDocuments(PageFetcher(config, policy), cache=lambda: cache)
            hits = [
                Hit(id=u, title="t", url=u, snippet="premiere took place in Rome") for u in urls
            ]
            start = time.perf_counter()
            await docs.read("where was the premiere", hits)
            out["documents_pages_per_s"] = round(n_pages / (time.perf_counter() - start), 1)
            start = time.perf_counter()
            await docs.read("where was the premiere", hits)  # now every page is cached
            out["documents_cached_pages_per_s"] = round(n_pages / (time.perf_counter() - start), 1)
            await docs.aclose()
            cache.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    return out


def _time_us(fn: Any, n: int) -> float:
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for i in range(n):
            fn(i)
        samples.append((time.perf_counter() - start) / n * 1e6)
    return round(statistics.median(samples), 1)


def bench_cache(lookups: int) -> dict[str, Any]:
    hits = [
        {
            "id": f"https://e.org/{i}",
            "title": f"Title {i}",
            "url": f"https://e.org/{i}",
            "snippet": "A snippet of about two hundred characters. " * 5,
            "text": "",
            "score": None,
            "date": None,
            "source": "serper",
        }
        for i in range(10)
    ]
    page = {"text": (PARAGRAPH * 120)[:20_000], "final_url": "u", "content_type": "text/html"}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(Path(tmp) / "c.sqlite")
        n = min(lookups, 5000)

        def meta(i: int) -> dict[str, Any]:
            return {"backend": "serper", "endpoint": "https://x/search", "k": 10, "query": f"q{i}"}

        out["put_search_us"] = _time_us(lambda i: cache.put("search", meta(i), "q", hits), n // 5)
        for i in range(n):
            cache.put("search", meta(i), "q", hits)
        out["get_search_hit_us"] = _time_us(lambda i: cache.get("search", meta(i % n), "q"), n)
        out["get_miss_us"] = _time_us(lambda i: cache.get("search", meta(n + i), "q"), n)
        pmeta = [{"url": f"https://e.org/{i}", "extractor": "1"} for i in range(n // 5)]
        out["put_page_us"] = _time_us(lambda i: cache.put("page", pmeta[i], "u", page), n // 5)
        out["get_page_hit_us"] = _time_us(lambda i: cache.get("page", pmeta[i], "u"), n // 5)
        replay = Cache(Path(tmp) / "c.sqlite", "replay")
        out["replay_get_search_hit_us"] = _time_us(
            lambda i: replay.get("search", meta(i % n), "q"), n
        )
        out["entries"] = sum(cache.stats().entries.values())
        out["file_mb"] = round((Path(tmp) / "c.sqlite").stat().st_size / 1e6, 2)
        cache.close()
        replay.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--lookups", type=int, default=20_000)
    args = ap.parse_args()
    result = {
        "fetch": asyncio.run(bench_fetch(args.pages, args.concurrency)),
        "cache": bench_cache(args.lookups),
        "python": sys.version.split()[0],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
