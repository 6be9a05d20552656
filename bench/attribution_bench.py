"""Attribution: do an answer's sources name the paragraphs its facts came from?

HotpotQA (dev, distractor: `../shared/data/multihop/hotpotqa_dev_distractor_200.jsonl`)
marks each question's gold supporting paragraphs (`supporting_facts`, by title). Each
question runs through the real engine over BM25 on the closed multi-hop corpus
(`corpus/multihop_closed.jsonl`, 9,576 paragraphs), with a scripted model:

- the reasoner searches for the question, then for the bridge it read about (the first
  title the facts name) together with the question, then stops;
- the reader is lexical: from each document it takes the sentence sharing most words
  with the query, keeps the documents whose sentence shares at least two, and writes
  them as facts, marking each with its document number when the prompt asks for marks
  (as our profile's prompt does).

The answer's sources (`search_o1.sources.answer_sources`) are then compared with the
gold paragraphs: recall, the share of a question's gold paragraphs among its sources;
precision, the share of its sources that are gold (both averaged over questions that
have sources). Three rows: marks (ours), no marks (the paper profile's prompt: every
document of each search counts), and what the searches retrieved at all (the ceiling of
recall). The model is scripted, so the figures measure the provenance path (reader marks
mapped back to passages), not a model's judgement.

    python -m bench.attribution_bench [--limit 200] [--top-k 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from search_o1 import markers as mk
from search_o1.engine import ChainLimits, Engine, EngineOptions, ReaderOptions, SearchOptions
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.bm25 import BM25Search
from search_o1.sources import CITE_INSTRUCTION, answer_sources
from search_o1.types import Prompt, Trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HOTPOT = DATA / "multihop" / "hotpotqa_dev_distractor_200.jsonl"
CORPUS = DATA / "corpus" / "multihop_closed.jsonl"
OUT = Path(__file__).resolve().parent / "out"

_WORD = re.compile(r"[^\W_]+")
_STOPWORDS = (
    "the a an and or of in on at to for by with from as is was were are be been it its "
    "that this which who whom whose what when where how his her their there he she they "
    "not no but also into than then has had have did does do"
)
_STOP = frozenset(_STOPWORDS.split())
_DOC = re.compile(r"\*\*Document (\d+)\*\*: ([^\n]*)\n(.*?)(?=\n\n\*\*Document \d+\*\*|\Z)", re.S)
_FACT_TITLE = re.compile(r"According to (.+?), ")
MIN_SHARED = 2
MAX_FACTS = 3


def words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 2}


def lexical_reader(prompt: str) -> str:
    """Facts: the best sentence of each document that shares words with the query."""
    query = prompt.split("**Current search query**", 1)[1].strip().split("\n", 1)[0]
    docs_part = prompt.split("**Search results**", 1)[1]
    wanted = words(query)
    scored = []
    for number, title, body in _DOC.findall(docs_part):
        title = re.sub(r" \(http[^)]*\)$", "", title).strip()
        best = max(re.split(r"(?<=[.!?])\s+", body.strip()), key=lambda s: len(wanted & words(s)))
        shared = len(wanted & words(best))
        if shared >= MIN_SHARED:
            scored.append((shared, int(number), title, best.strip()))
    if not scored:
        return "Nothing matches.\n**Final Information**\n\nNo helpful information found."
    scored.sort(key=lambda s: (-s[0], s[1]))
    marks = CITE_INSTRUCTION in prompt
    facts = [
        f"According to {title}, {sentence}" + (f" [{n}]" if marks else "")
        for _, n, title, sentence in scored[:MAX_FACTS]
    ]
    return "Reading.\n**Final Information**\n\n" + "\n".join(facts)


def reasoner(prompt: Prompt) -> str:
    """Two searches: the question, then the first bridge title the facts name."""
    text = prompt.messages[-1].content
    if "**Current search query**" in text:
        return lexical_reader(text)
    question = text.rpartition("Question:")[2].strip().split("\n", 1)[0]
    results = re.findall(
        re.escape(mk.BEGIN_RESULT) + r"(.*?)" + re.escape(mk.END_RESULT), prompt.continuation, re.S
    )
    if not results:
        return f"Let me look this up. {mk.BEGIN_QUERY}{question}{mk.END_QUERY}"
    if len(results) == 1:
        bridge = _FACT_TITLE.search(results[0])
        if bridge:
            query = f"{bridge.group(1)} {question}"
            return f"Next, the bridge. {mk.BEGIN_QUERY}{query}{mk.END_QUERY}"
    return "That is what I found. \\boxed{unknown}"


@dataclass
class Scores:
    recall: list[float]
    precision: list[float]
    sources: int = 0
    with_quote: int = 0

    def row(self) -> dict[str, Any]:
        def mean(xs: list[float]) -> float:
            return round(sum(xs) / len(xs), 4) if xs else 0.0

        return {
            "recall": mean(self.recall),
            "precision": mean(self.precision),
            "questions": len(self.recall),
            "sources_per_question": round(self.sources / max(1, len(self.recall)), 2),
            "sources_with_quote": round(self.with_quote / max(1, self.sources), 4),
        }


def gold_titles(row: dict[str, Any]) -> set[str]:
    return {title for title, _ in row["supporting_facts"]}


def score(trace: Trace, gold: set[str], scores: Scores) -> None:
    sources = answer_sources(trace)
    titles = {s.title for s in sources}
    if not titles:
        return
    scores.recall.append(len(gold & titles) / len(gold))
    scores.precision.append(len(gold & titles) / len(titles))
    scores.sources += len(sources)
    scores.with_quote += sum(1 for s in sources if s.quote)


def retrieved(trace: Trace, gold: set[str], scores: Scores) -> None:
    titles = {h.title for r in trace.searches for h in r.hits}
    if titles:
        scores.recall.append(len(gold & titles) / len(gold))
        scores.precision.append(len(gold & titles) / len(titles))
        scores.sources += len(titles)


async def run(rows: list[dict[str, Any]], search: BM25Search, top_k: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    ceiling = Scores([], [])
    for label, cite in (("marks (ours)", True), ("no marks (paper profile)", False)):
        options = EngineOptions(
            task="multihop",
            limits=ChainLimits(max_searches=2, max_turns=4),
            reader=ReaderOptions(cite=cite),
            search=SearchOptions(top_k=top_k),
        )
        engine = Engine(ScriptedLLM(reasoner), search, options=options)
        scores = Scores([], [])
        start = time.perf_counter()
        for row in rows:
            trace = await engine.run(row["question"])
            score(trace, gold_titles(row), scores)
            if cite:
                retrieved(trace, gold_titles(row), ceiling)
        results[label] = {**scores.row(), "wall_s": round(time.perf_counter() - start, 2)}
    results["retrieved (all hits)"] = ceiling.row()
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=5)
    args = ap.parse_args()
    if not HOTPOT.exists() or not CORPUS.exists():
        sys.exit(f"benchmark data not found under {DATA}")
    rows = [json.loads(line) for line in HOTPOT.read_text("utf-8").splitlines()][: args.limit]
    search = BM25Search.open(CORPUS)
    results = asyncio.run(run(rows, search, args.top_k))
    OUT.mkdir(exist_ok=True)
    report = {"dataset": HOTPOT.name, "items": len(rows), "top_k": args.top_k, **results}
    (OUT / "attribution.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"HotpotQA dev distractor, {len(rows)} questions, top-{args.top_k}, BM25 closed corpus")
    print(f"{'':28}{'recall':>8}{'precision':>11}{'sources/q':>11}{'quoted':>8}")
    for label, r in results.items():
        print(
            f"{label:28}{r['recall']:>8.3f}{r['precision']:>11.3f}"
            f"{r['sources_per_question']:>11}{r['sources_with_quote']:>8.2f}"
        )


if __name__ == "__main__":
    main()
