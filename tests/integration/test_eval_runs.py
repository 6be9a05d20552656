"""Evaluation runs end to end in-process: scripted model, BM25 over the closed multi-hop
corpus, every method; resume after a crash; backoff; reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.eval_support import responder

from search_o1.config import Settings, load_settings
from search_o1.engine import Engine
from search_o1.errors import BackendError
from search_o1.eval import report
from search_o1.eval.datasets import Dataset, load_dataset
from search_o1.eval.runner import RunOptions, run_eval
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import engine_options
from search_o1.search.bm25 import BM25Search
from search_o1.types import Completion, Prompt, TextSink


@pytest.fixture
def bm25(multihop_bm25: BM25Search) -> BM25Search:
    return multihop_bm25


def settings(**kw: Any) -> Settings:
    base = {"backend": "openai", "base_url": "http://unused", "force_search": False}
    return load_settings({**base, "task": "multihop", "max_searches": 10, **kw}, environ={})


def engine(model: LLM, search: BM25Search | None) -> Engine:
    return Engine(model, search, options=engine_options(settings()))


def hotpot(shared_data: Path, n: int) -> Dataset:
    return load_dataset("hotpotqa", data_dir=shared_data, split="native", limit=n)


def boxed(ds: Dataset, n: int) -> dict[str, str]:
    """Right answers (in a \\text{} box) for the first n items; the rest get none."""
    return {i.question: f"So \\boxed{{\\text{{{i.gold[0]}}}}}." for i in ds.items[:n]}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("method", ["direct", "rag", "rag-agent", "search-o1"])
async def test_each_method_end_to_end(
    shared_data: Path, bm25: BM25Search, tmp_path: Path, method: str
) -> None:
    ds = hotpot(shared_data, 4)
    model = ScriptedLLM(responder(boxed(ds, 3)))
    out = tmp_path / method
    opts = RunOptions(method=method, out=out, settings=settings())
    outcome = await run_eval(engine(model, bm25), ds, opts)
    m = json.loads((out / "metrics.json").read_text())
    assert m["overall"]["em"] == pytest.approx(0.75) and m["n"] == 4 and m["missing"] == 0
    assert outcome.ran == 4 and m["num_valid"] == 4  # the 4th boxes "unknown": valid, wrong
    records = lines(out / "results.jsonl")
    assert {r["id"] for r in records} == {i.id for i in ds.items}
    searched = [r["n_searches"] for r in records]
    if method in ("rag-agent", "search-o1"):
        assert sorted(searched) == [0, 1, 1, 1]  # the unknown question is not searched
        searched_trace = json.dumps([r["trace"] for r in records if r["n_searches"]])
        assert ("The pages name the answer" in searched_trace) == (method == "search-o1")
    elif method == "direct":
        assert searched == [0, 0, 0, 0]
    # Each item records its answer's sources: the documents behind what the chain read.
    with_sources = [bool(r["sources"]) for r in records]
    assert with_sources == [bool(n) for n in searched]
    if method == "search-o1":
        assert all(
            {"n", "id", "title", "url", "quote", "query"} <= set(s)
            for r in records
            for s in r["sources"]
        )
    assert set(m["breakdowns"]["type"]) <= {"bridge", "comparison"}
    assert "| Method | EM | F1 | Acc |" in (out / "summary.md").read_text()
    config = json.loads((out / "config.json").read_text())
    assert config["run"]["method"] == method and config["settings"]["max_searches"] == 10
    assert "git_commit" in config["environment"] and "api_key_env" not in config["settings"]


class Crash(Exception):
    """Stands in for the process dying mid-run."""


class Crashing:
    """Wraps a responder; raises (like a killed process) once `after` questions have answered."""

    def __init__(self, respond: Callable[[Prompt], str], after: int) -> None:
        self.respond, self.after, self.answered = respond, after, 0

    def __call__(self, prompt: Prompt) -> str:
        if self.answered >= self.after:
            raise Crash
        self.answered += 1
        return self.respond(prompt)


async def test_interrupted_run_resumes_and_counts_each_item_once(
    shared_data: Path, tmp_path: Path
) -> None:
    ds = hotpot(shared_data, 8)
    answers = boxed(ds, 8)
    out = tmp_path / "run"
    opts = RunOptions(method="direct", out=out, concurrency=1)
    crashing = ScriptedLLM(Crashing(responder(answers), after=5))
    with pytest.raises(Crash):
        await run_eval(engine(crashing, None), ds, opts)
    assert len(lines(out / "results.jsonl")) == 5
    with (out / "results.jsonl").open("a") as f:
        f.write('{"id": "torn-in-mid-write", "pred')  # a crash during a write
    model = ScriptedLLM(responder(answers))
    outcome = await run_eval(engine(model, None), ds, opts)
    assert (outcome.resumed, outcome.ran) == (5, 3) and len(model.prompts) == 3
    records = lines(out / "results.jsonl")
    assert sorted(r["id"] for r in records) == sorted(i.id for i in ds.items)
    assert outcome.metrics["n"] == 8 and outcome.metrics["overall"]["em"] == 1.0


async def test_backoff_takes_the_direct_answer_for_invalid_ones(
    shared_data: Path, tmp_path: Path
) -> None:
    ds = hotpot(shared_data, 4)
    direct = tmp_path / "direct"
    eng = engine(ScriptedLLM(responder(boxed(ds, 4))), None)
    await run_eval(eng, ds, RunOptions(method="direct", out=direct, settings=settings()))
    # The second run leaves two answers unboxed (invalid) and gets one wrong.
    answers = boxed(ds, 1)
    answers |= {ds.items[1].question: "\\boxed{nobody}", ds.items[2].question: "no idea"}
    answers |= {ds.items[3].question: "still thinking"}
    run = tmp_path / "rag"
    eng = engine(ScriptedLLM(responder(answers, search=False)), None)
    opts = RunOptions(method="direct", out=run, backoff=direct, settings=settings())
    outcome = await run_eval(eng, ds, opts)
    m = outcome.metrics
    assert m["overall"]["em"] == 0.25 and m["num_valid"] == 2
    assert m["backoff"]["em"] == 0.75 and m["backoff"]["replaced"] == 2
    # Split by the items' groups the same way, for the paper's per-domain columns.
    backoff_by_type = m["backoff_breakdowns"]["type"]
    assert sum(v["n"] for v in backoff_by_type.values()) == 4
    assert sum(v["n"] * v["em"] for v in backoff_by_type.values()) == 3
    assert "+ backoff | 75.0" in (run / "summary.md").read_text()
    runs = [report.load_run(direct), report.load_run(run)]
    table = report.side_by_side(runs)
    assert "| EM | 100.0 | 25.0 |" in table and "EM +backoff" in table
    delta = report.diff(runs[0], runs[1])
    assert "direct: 3 better · rag: 0 better · 3 shown" in delta
    png = report.plot(runs, x="max_searches", metric="em", out=tmp_path / "p.png")
    assert png.read_bytes().startswith(b"\x89PNG")


class Failing:
    name = "failing"

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        raise BackendError("failing", "connection refused", retryable=True)

    async def context_length(self) -> int | None:
        return None

    async def aclose(self) -> None:
        return None


async def test_backend_failures_are_not_saved_as_answers(shared_data: Path, tmp_path: Path) -> None:
    ds = hotpot(shared_data, 3)
    eng = engine(Failing(), None)
    outcome = await run_eval(
        eng, ds, RunOptions(method="direct", out=tmp_path, settings=settings())
    )
    assert outcome.failed == 3 and outcome.ran == 0
    assert (tmp_path / "results.jsonl").read_text() == ""
    assert outcome.metrics["missing"] == 3
