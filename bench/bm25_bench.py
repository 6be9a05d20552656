"""BM25 index build time and query latency on a corpus.

    .venv/bin/python bench/bm25_bench.py [CORPUS] [--queries N] [--reps N]

CORPUS is a JSONL file or folder (default: ../shared/data/corpus/wiki18_subset.jsonl) or
"demo". Queries are NQ test questions from ../shared/data when present, else passage
titles. Nothing is cached: the index is built in memory and saved to a temporary folder.
The build is timed beside raw bm25s (its tokenize + index, same stemmer and stopwords).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import bm25s
import Stemmer

from search_o1.corpus.demo import demo_passages
from search_o1.corpus.load import load_passages
from search_o1.corpus.passage import Passage
from search_o1.search.bm25 import BM25Search

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEFAULT_CORPUS = SHARED / "corpus" / "wiki18_subset.jsonl"
NQ = SHARED / "qa" / "nq_test_1000.jsonl"


def _queries(passages: list[Passage], n: int) -> list[str]:
    if NQ.exists():
        rows = [json.loads(line) for line in NQ.read_text().splitlines()]
        return [row["question"] for row in rows[:n]]
    rng = random.Random(0)
    return [p.title or p.text[:60] for p in rng.sample(passages, min(n, len(passages)))]


def _timed(label: str, started: float) -> float:
    elapsed = time.perf_counter() - started
    print(f"{label:<24}{elapsed:8.2f} s")
    return elapsed


def _latency(label: str, samples_s: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples_s)
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    mean, p50 = statistics.mean(ms), ms[len(ms) // 2]
    print(f"{label:<24}mean {mean:.2f} ms  p50 {p50:.2f} ms  p95 {p95:.2f} ms")


async def _search_latencies(index: BM25Search, queries: list[str], k: int) -> list[float]:
    out = []
    for q in queries:
        started = time.perf_counter()
        await index.search(q, k=k)
        out.append(time.perf_counter() - started)
    return out


def _raw_bm25s_build(texts: list[str]) -> None:
    """bm25s's own pipeline with the same stemmer and stopwords, for comparison."""
    tokens = bm25s.tokenize(
        texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False
    )
    bm25s.BM25().index(tokens, show_progress=False)


def _build_times(passages: list[Passage], reps: int) -> tuple[float, float]:
    """Best-of-`reps` build seconds, ours and raw bm25s, interleaved (load hits both)."""
    texts = [f"{p.title}\n{p.text}" for p in passages]
    ours, raw = [], []
    for _ in range(reps):
        started = time.perf_counter()
        BM25Search.build(passages)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        _raw_bm25s_build(texts)
        raw.append(time.perf_counter() - started)
    return min(ours), min(raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(DEFAULT_CORPUS))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--reps", type=int, default=5, help="Builds of each kind (best kept).")
    args = parser.parse_args()

    started = time.perf_counter()
    demo = args.corpus == "demo"
    passages = list(demo_passages()) if demo else load_passages(args.corpus)
    _timed(f"read {len(passages):,} passages", started)
    ours_s, raw_s = _build_times(passages, args.reps)
    print(f"{'build index (best)':<24}{ours_s:8.2f} s")
    print(f"{'raw bm25s build (best)':<24}{raw_s:8.2f} s   ours/raw {ours_s / raw_s:.2f}x")
    index = BM25Search.build(passages, source=args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        index.save(Path(tmp) / "idx")
        _timed("save", started)
        started = time.perf_counter()
        index = BM25Search.load(Path(tmp) / "idx")
        _timed("load", started)

    queries = _queries(passages, args.queries)
    index.query(queries[0], args.k)  # warm-up: first call pays for lazy setup
    sync = []
    for q in queries:
        started = time.perf_counter()
        index.query(q, args.k)
        sync.append(time.perf_counter() - started)
    _latency(f"query x{len(queries)} (k={args.k})", sync)
    _latency("search (async, cut)", asyncio.run(_search_latencies(index, queries, args.k)))


if __name__ == "__main__":
    main()
