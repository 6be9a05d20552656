"""Dense and hybrid retrieval: recall, embedding throughput and query latency.

    .venv/bin/python -m bench.dense_bench recall [--corpus closed|own] [--sets hotpotqa,...]
    .venv/bin/python -m bench.dense_bench throughput [--n 512]
    .venv/bin/python -m bench.dense_bench latency [--queries 200]
    .venv/bin/python -m bench.dense_bench ann
    .venv/bin/python -m bench.dense_bench retrieve

recall: recall@k of the gold (supporting) titles, each question queried as it is, for our
bm25, dense and fused (`--search bm25,dense`) beside raw bm25s and plain
sentence-transformers + FAISS on the same passages and the same model. `--corpus closed`
searches ../shared/data/corpus/multihop_closed.jsonl (9,576 paragraphs) for every set;
`own` searches each set's own paragraphs. Our dense vectors are cached like any corpus
(SEARCH_O1_INDEX_CACHE), the plain pipeline embeds afresh on every run.

throughput: passages per second embedding the first N wiki-18 passages, ours vs. plain.
latency: one query at a time through `DenseSearch.search` (encode + FAISS + cut) over the
closed corpus (9,576 passages; embedded once, then cached), or `--corpus hotpotqa`.
retrieve: recall on the HotpotQA paragraphs through `/retrieve`'s code path, for
`--search bm25`, `dense` and `bm25,dense` built from settings as `serve` builds them.
ann: IVF and HNSW against flat on the closed corpus (or `--corpus hotpotqa`): how much of
the exact top 10 each nprobe / efSearch finds, and the FAISS time per query.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from search_o1.corpus.embed import SentenceEncoder, default_model_dir
from search_o1.corpus.load import load_passages
from search_o1.corpus.passage import Passage
from search_o1.search.bm25 import BM25Search
from search_o1.search.dense import DenseSearch, passage_text
from search_o1.search.fusion import FusedSearch

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CLOSED = SHARED / "corpus" / "multihop_closed.jsonl"
WIKI = SHARED / "corpus" / "wiki18_subset.jsonl"
OWN_DIR = Path(tempfile.gettempdir()) / "search-o1-bench"  # same bytes -> same cache key
SETS = {
    "hotpotqa": "multihop/hotpotqa_dev_distractor_200.jsonl",
    "musique": "multihop/musique_ans_dev_200.jsonl",
    "2wiki": "multihop/2wiki_dev_164.jsonl",
}


@dataclass(frozen=True)
class Question:
    text: str
    gold: frozenset[str]
    paragraphs: tuple[tuple[str, str], ...]  # (title, text) of the question's own context


def _question(name: str, row: dict[str, Any]) -> Question:
    if name == "musique":
        paras = tuple((p["title"], p["paragraph_text"]) for p in row["paragraphs"])
        gold = frozenset(p["title"] for p in row["paragraphs"] if p["is_supporting"])
    else:
        paras = tuple((title, " ".join(sents)) for title, sents in row["context"])
        gold = frozenset(title for title, _ in row["supporting_facts"])
    return Question(row["question"], gold, paras)


def questions(name: str) -> list[Question]:
    lines = (SHARED / SETS[name]).read_text(encoding="utf-8").splitlines()
    return [_question(name, json.loads(line)) for line in lines if line.strip()]


def own_corpus(name: str, qs: Sequence[Question]) -> Path:
    """The set's paragraphs, deduplicated, as a JSONL file (stable bytes, so cached once)."""
    seen: dict[tuple[str, str], None] = {}
    for q in qs:
        seen.update(dict.fromkeys(q.paragraphs))
    OWN_DIR.mkdir(parents=True, exist_ok=True)
    path = OWN_DIR / f"{name}_paragraphs.jsonl"
    rows = (json.dumps({"id": str(i), "title": t, "text": x}) for i, (t, x) in enumerate(seen))
    data = "\n".join(rows) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != data:
        path.write_text(data, encoding="utf-8")
    return path


def recall(ranked_titles: Sequence[Sequence[str]], qs: Sequence[Question], k: int) -> float:
    found = [
        len(q.gold & set(titles[:k])) / len(q.gold)
        for titles, q in zip(ranked_titles, qs, strict=True)
    ]
    return sum(found) / len(found)


# ---- the plain pipelines ----


Searcher = Callable[[Sequence[str], int], list[list[str]]]


def raw_bm25s(passages: Sequence[Passage]) -> Searcher:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    texts = [passage_text(p) for p in passages]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False))

    def search(queries: Sequence[str], k: int) -> list[list[str]]:
        tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=stemmer, show_progress=False)
        ids, _ = retriever.retrieve(tokens, k=k, show_progress=False)
        return [[passages[i].title for i in row] for row in ids]

    return search


def plain_dense(passages: Sequence[Passage]) -> Searcher:
    import faiss
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_dir()), device="cpu")
    vectors = model.encode([passage_text(p) for p in passages], normalize_embeddings=True)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)

    def search(queries: Sequence[str], k: int) -> list[list[str]]:
        _, ids = index.search(model.encode(list(queries), normalize_embeddings=True), k)
        return [[passages[i].title for i in row] for row in ids]

    return search


# ---- ours ----


def ours(corpus: Path, encoder: SentenceEncoder, queries: Sequence[str], k: int) -> dict[str, Any]:
    bm25 = BM25Search.open(corpus)
    dense = DenseSearch.open(corpus, encoder)

    async def fused() -> list[list[str]]:
        search = FusedSearch([bm25, dense])
        return [[h.title for h in await search.search(q, k=k)] for q in queries]

    return {
        "bm25": [[p.title for p, _ in bm25.query(q, k)] for q in queries],
        "dense": [[p.title for p, _ in hits] for hits in dense.query_many(queries, k)],
        "fused": asyncio.run(fused()),
    }


def run_recall(args: argparse.Namespace) -> None:
    encoder = SentenceEncoder.open()
    sets = {name: questions(name) for name in args.sets.split(",")}
    by_corpus: dict[Path, list[str]] = {}
    for name, qs in sets.items():
        corpus = CLOSED if args.corpus == "closed" else own_corpus(name, qs)
        by_corpus.setdefault(corpus, []).append(name)
    print(f"{'set':<10}{'passages':>9}  bm25  bm25s  dense  plain  fused  (recall@{args.k})")
    for corpus, names in by_corpus.items():  # each corpus embedded once per pipeline
        passages = load_passages(corpus)
        plain, raw = plain_dense(passages), raw_bm25s(passages)
        for name in names:
            qs = sets[name]
            texts = [q.text for q in qs]
            got = {
                key: recall(v, qs, args.k)
                for key, v in ours(corpus, encoder, texts, args.k).items()
            }
            raw_r, plain_r = (
                recall(raw(texts, args.k), qs, args.k),
                recall(plain(texts, args.k), qs, args.k),
            )
            print(
                f"{name:<10}{len(passages):>9}  {got['bm25']:.3f} {raw_r:.3f}  {got['dense']:.3f}"
                f"  {plain_r:.3f}  {got['fused']:.3f}",
                flush=True,
            )


def run_retrieve(args: argparse.Namespace) -> None:
    """Recall through what `serve`'s /retrieve runs: the backend `--search` builds, asked
    by `retrieve()` with the protocol's request, on the HotpotQA paragraphs."""
    from search_o1.config import Settings
    from search_o1.pipeline import build_search
    from search_o1.serve.retrieve import RetrieveRequest, retrieve

    qs = questions("hotpotqa")
    corpus = own_corpus("hotpotqa", qs)
    for search in ("bm25", "dense", "bm25,dense"):
        backend = build_search(Settings(search=search.split(","), corpus=str(corpus)))
        request = RetrieveRequest([q.text for q in qs], topk=args.k)
        answer = asyncio.run(retrieve(backend, request))
        titles = [[d["contents"].partition("\n")[0] for d in docs] for docs in answer["result"]]
        print(f"/retrieve --search {search:<11} recall@{args.k} {recall(titles, qs, args.k):.3f}")


# ---- throughput and latency ----


def _best_of(reps: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def run_throughput(args: argparse.Namespace) -> None:
    from sentence_transformers import SentenceTransformer

    texts = [passage_text(p) for p in load_passages(WIKI)[: args.n]]
    encoder = SentenceEncoder.open()
    plain = SentenceTransformer(str(default_model_dir()), device="cpu")
    plain_s = ours_s = float("inf")
    for _ in range(args.reps):  # interleaved, so a burst of load elsewhere hits both
        plain_s = min(plain_s, _best_of(1, lambda: plain.encode(texts, normalize_embeddings=True)))
        ours_s = min(ours_s, _best_of(1, lambda: encoder.encode_passages(texts)))
    n = len(texts)
    print(f"plain sentence-transformers  {n / plain_s:6.1f} passages/s")
    print(f"ours (encode_passages)       {n / ours_s:6.1f} passages/s  ({plain_s / ours_s:.2f}x)")


def _latency_corpus(name: str) -> Path:
    return own_corpus("hotpotqa", questions("hotpotqa")) if name == "hotpotqa" else CLOSED


def run_latency(args: argparse.Namespace) -> None:
    dense = DenseSearch.open(_latency_corpus(args.corpus), SentenceEncoder.open())
    queries = [q.text for name in SETS for q in questions(name)][: args.queries]

    async def timed() -> list[float]:
        await dense.search(queries[0], k=10)  # warm-up
        out = []
        for q in queries:
            started = time.perf_counter()
            await dense.search(q, k=10)
            out.append((time.perf_counter() - started) * 1000)
        return out

    ms = sorted(asyncio.run(timed()))
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    print(
        f"dense search over {len(dense):,} passages, {len(ms)} queries: "
        f"mean {statistics.mean(ms):.1f} ms  p50 {ms[len(ms) // 2]:.1f} ms  p95 {p95:.1f} ms"
    )


def _agreement(index: Any, flat_ids: Any, vectors: Any, k: int) -> tuple[float, float]:
    """(overlap@k with the exact top k, ms per query) for an approximate index."""
    started = time.perf_counter()
    _, ids = index.search(vectors, k)
    ms = (time.perf_counter() - started) * 1000 / len(vectors)
    overlap = [len(set(a) & set(b)) / k for a, b in zip(ids, flat_ids, strict=True)]
    return sum(overlap) / len(overlap), ms


def run_ann(args: argparse.Namespace) -> None:
    """What nprobe and efSearch trade, on the closed corpus's cached vectors."""
    from search_o1.corpus.vectors import tune

    encoder = SentenceEncoder.open()
    corpus = _latency_corpus(args.corpus)
    flat = DenseSearch.open(corpus, encoder)
    queries = encoder.encode_queries([q.text for name in SETS for q in questions(name)])
    _, exact = flat.index.search(queries, 10)
    for kind, knob, values in (
        ("ivf", "nprobe", (1, 4, 16, 32, 64)),
        ("hnsw", "ef_search", (16, 32, 64, 128, 256)),
    ):
        index = DenseSearch.open(corpus, encoder, kind=kind).index  # type: ignore[arg-type]
        for value in values:
            tune(index, **{knob: value})
            overlap, ms = _agreement(index, exact, queries, 10)
            print(
                f"{kind:<5}{knob}={value:<4} overlap@10 with flat {overlap:.3f}  {ms:.3f} ms/query"
            )
    _, ms = _agreement(flat.index, exact, queries, 10)
    print(f"flat exact: {ms:.3f} ms/query over {len(flat):,} vectors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("recall")
    rec.add_argument("--corpus", choices=["closed", "own"], default="closed")
    rec.add_argument("--sets", default="hotpotqa,musique,2wiki")
    rec.add_argument("-k", type=int, default=10)
    thr = sub.add_parser("throughput")
    thr.add_argument("--n", type=int, default=512)
    thr.add_argument("--reps", type=int, default=2)
    lat = sub.add_parser("latency")
    lat.add_argument("--queries", type=int, default=200)
    lat.add_argument("--corpus", choices=["closed", "hotpotqa"], default="closed")
    sub.add_parser("ann").add_argument("--corpus", choices=["closed", "hotpotqa"], default="closed")
    sub.add_parser("retrieve").add_argument("-k", type=int, default=10)
    args = parser.parse_args()
    runs = {"recall": run_recall, "throughput": run_throughput, "latency": run_latency}
    {**runs, "ann": run_ann, "retrieve": run_retrieve}[args.what](args)


if __name__ == "__main__":
    main()
