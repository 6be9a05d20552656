"""Wall time and peak memory of `search-o1 eval` on a 500-item set with a scripted model.

Runs the real CLI in-process (`search-o1 eval ...`), with the model replaced by a
ScriptedLLM registered as an LLM backend, so everything else is the real path: dataset
loading, the engine (search, Reason-in-Documents, insertion), the scheduler, scoring,
results.jsonl, metrics and summary. The scripted model searches once per question, then
answers right for 2 of 3 questions.

    python bench/eval_bench.py --dataset hotpotqa --method search-o1 \
        --data-dir ../shared/data --corpus ../shared/data/corpus/multihop_closed.jsonl
    python bench/eval_bench.py --dataset math500 --method direct --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from search_o1 import markers as mk
from search_o1.cli import cli
from search_o1.eval.datasets import load_dataset
from search_o1.llm.scripted import ScriptedLLM
from search_o1.registry import register
from search_o1.types import Prompt

ANSWERS: dict[str, str] = {}
DELAY_S = 0.0


def _question(user: str) -> str:
    return user.rpartition("\nQuestion:\n")[2].strip()


def respond(prompt: Prompt) -> str:
    user = prompt.messages[-1].content
    if "current search query" in user.lower():
        return "Reading the pages.\n**Final Information**\n\nThe pages name the answer."
    question = _question(user)
    if mk.BEGIN_QUERY in user and mk.END_RESULT not in prompt.continuation:
        return f"I should check. {mk.BEGIN_QUERY}{question[:80]}{mk.END_QUERY}"
    return ANSWERS.get(question, "I do not know. \\boxed{unknown}")


def make_llm(settings: Any, *, role: str = "main") -> ScriptedLLM:
    return ScriptedLLM(respond, delay_s=DELAY_S)


def main() -> None:
    global DELAY_S
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--method", default="search-o1")
    ap.add_argument("--data-dir", default=os.environ.get("SEARCH_O1_DATA_DIR", "data"))
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--delay", type=float, default=0.0, help="Seconds per model call.")
    args = ap.parse_args()
    DELAY_S = args.delay
    data = load_dataset(args.dataset, data_dir=Path(args.data_dir), limit=args.limit)
    for i, item in enumerate(data.items):
        if i % 3 != 2 and item.gold:
            ANSWERS[item.question.strip()] = f"So the answer is \\boxed{{{item.gold[0]}}}."
    register("llm", "bench-scripted", make_llm)
    os.environ["SEARCH_O1_BACKEND"] = "bench-scripted"
    out = Path(tempfile.mkdtemp(prefix="eval-bench-")) / "run"
    argv = [
        *("eval", "--dataset", args.dataset, "--data-dir", args.data_dir),
        *("--method", args.method, "--limit", str(args.limit), "--out", str(out)),
        *("--concurrency", str(args.concurrency), "--no-progress", "--no-force-search"),
    ]
    if args.corpus:
        argv += ["--corpus", args.corpus]
    start = time.perf_counter()
    try:
        cli.main(argv, standalone_mode=False)
    finally:
        wall = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size_mb = (out / "results.jsonl").stat().st_size / 1e6
    print(
        f"bench: {len(data.items)} items, {args.dataset}/{args.method}: wall {wall:.1f}s "
        f"({1000 * wall / max(1, len(data.items)):.1f} ms/item), peak RSS {peak_mb:.0f} MB, "
        f"results.jsonl {size_mb:.1f} MB, run dir {out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
