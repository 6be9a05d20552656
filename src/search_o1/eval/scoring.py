"""Score one item's prediction for its task, and aggregate records into a run's metrics.

Aggregation reads only the records (results.jsonl), never the dataset, so `report` and
`--backoff` work on finished runs alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from search_o1.eval.metrics import choice_scores, math_scores, mean, qa_scores
from search_o1.eval.paper_judge import JUDGE_TIMEOUT_S, judge_program
from search_o1.eval.paper_scoring import MODES, paper_code, paper_gold, paper_scores
from search_o1.eval.rows import Item
from search_o1.eval.sandbox import DEFAULT_LIMITS, CodeResult, Limits, TestCase, run_tests

# Each task's columns in metrics.json: the paper's (computed as its scripts do, from the
# whole output) first, then ours from the lenient answer (`*_lenient`, `math_verify`).
# Each item's record holds every paper score (`em`, `acc`, `f1`, `math_equal`, `valid`).
_QA_COLUMNS = ("em", "f1", "acc", "valid", "em_lenient", "f1_lenient", "acc_lenient")
COLUMNS: dict[str, tuple[str, ...]] = {
    "qa": (*_QA_COLUMNS, "valid_lenient"),
    "multihop": (*_QA_COLUMNS, "valid_lenient"),
    "math": ("math_equal", "math_verify", "valid", "valid_lenient"),
    "choice": ("em", "acc_lenient", "valid", "valid_lenient"),
    "code": ("pass@1", "pass@1_lenient", "valid", "valid_lenient"),
}
# Which item fields split the results, per task (the paper's per-domain columns and more).
GROUPS: dict[str, tuple[str, ...]] = {
    "choice": ("domain",),
    "code": ("difficulty",),
    "math": ("level", "subject"),
    "multihop": ("hops", "type"),
    "qa": (),
}

_sandbox_gate: asyncio.Semaphore | None = None


def _gate() -> asyncio.Semaphore:
    """At most one sandboxed program per CPU, however many questions run at once."""
    global _sandbox_gate
    if _sandbox_gate is None:
        _sandbox_gate = asyncio.Semaphore(os.cpu_count() or 2)
    return _sandbox_gate


def _tests(item: Item) -> list[TestCase]:
    return [TestCase(t["input"], t["output"], t["kind"]) for t in item.meta.get("tests", [])]


async def _sandboxed(run: Callable[[], CodeResult]) -> CodeResult:
    async with _gate():
        return await asyncio.to_thread(run)


async def score_code(
    output: str, code: str | None, item: Item, limits: Limits
) -> tuple[dict[str, float], dict[str, Any]]:
    """pass@1 as the paper's judge gives it (its program, every test as a stdin program,
    10 s each) and ours (`pass@1_lenient`: our extraction, `Solution` methods called)."""
    tests = _tests(item)
    scores: dict[str, float] = {}
    detail: dict[str, Any] = {}
    program = paper_code(output)
    # The sandbox's other limits stay the run's; the time per test is the paper's.
    judge_limits = dataclasses.replace(limits, timeout_s=JUDGE_TIMEOUT_S)
    judged = await _sandboxed(lambda: judge_program(program, tests, limits=judge_limits))
    scores |= {"pass@1": float(judged.passed), "valid": float(program != "")}
    detail |= {"paper_answer": program, "judge_result": judged.to_dict()}
    if not code or not code.strip():
        return scores | {"pass@1_lenient": 0.0, "valid_lenient": 0.0}, detail
    method = item.meta.get("func_name")
    result = await _sandboxed(lambda: run_tests(code, tests, limits=limits, method=method))
    scores |= {"pass@1_lenient": float(result.passed), "valid_lenient": 1.0}
    return scores, detail | {"code_result": result.to_dict()}


def lenient_scores(
    prediction: str | None, item: Item, task: str, *, integer_answers: bool
) -> dict[str, float]:
    """Our columns, from our lenient extraction of the answer."""
    valid = float(prediction is not None and bool(prediction.strip()))
    if task == "math":
        ours = math_scores(prediction, item.gold[0], integer=integer_answers)
        return {"math_verify": ours["math_verify"], "valid_lenient": valid}
    if task == "choice":
        ours = choice_scores(prediction, item.gold[0])
        return {"acc_lenient": ours["acc_lenient"], "valid_lenient": ours["valid_lenient"]}
    qa = qa_scores(prediction, item.gold)
    return {f"{k}_lenient": v for k, v in qa.items()} | {"valid_lenient": valid}


async def score_item(
    item: Item,
    prediction: str | None,
    task: str,
    *,
    output: str,
    integer_answers: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[dict[str, float], dict[str, Any]]:
    """(metric columns, fields for the item's record) for one item.

    `output` is the model's whole output (the chain), which the paper's columns read;
    `prediction` is our lenient extraction from it, which ours read.
    """
    if task == "code":
        return await score_code(output, prediction, item, limits)
    golds = (
        item.gold
        if task in ("qa", "multihop")
        else (paper_gold(item.gold[0], integer=integer_answers),)
    )
    paper, answer = paper_scores(output, golds, MODES[task])
    ours = lenient_scores(prediction, item, task, integer_answers=integer_answers)
    return paper | ours, {"paper_answer": answer}


def groups_of(item: Item, task: str) -> dict[str, str]:
    """The breakdown labels of an item, e.g. {"domain": "Physics"}."""
    return {g: str(item.meta[g]) for g in GROUPS.get(task, ()) if item.meta.get(g) is not None}


def _means(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> dict[str, float]:
    return {c: mean(float(r["metrics"].get(c, 0.0)) for r in records) for c in columns}


def breakdowns(
    records: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> dict[str, dict[str, dict[str, float]]]:
    """{group: {label: {"n": count, column: mean, ...}}}, labels sorted."""
    by: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for group, label in (r.get("groups") or {}).items():
            by[group][label].append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for group, labels in sorted(by.items()):
        out[group] = {
            label: {"n": float(len(rs)), **_means(rs, columns)}
            for label, rs in sorted(labels.items(), key=lambda kv: _label_key(kv[0]))
        }
    return out


def _label_key(label: str) -> tuple[int, float | str]:
    order = {"easy": 0, "medium": 1, "hard": 2}
    if label in order:
        return (0, order[label])
    try:
        return (1, float(label))
    except ValueError:
        return (2, label)


def backoff_choice(
    records: Sequence[Mapping[str, Any]], fallback: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], int]:
    """Each record, or the direct run's for its item where ours is invalid and that one
    valid; and how many were replaced."""
    chosen: list[Mapping[str, Any]] = []
    replaced = 0
    for r in records:
        other = fallback.get(r["id"])
        # As the paper: only an invalid answer is replaced, and only by a valid one.
        if not r["metrics"].get("valid") and other is not None and other["metrics"].get("valid"):
            chosen.append(other)
            replaced += 1
        else:
            chosen.append(r)
    return chosen, replaced


def aggregate(
    records: Iterable[Mapping[str, Any]],
    task: str,
    *,
    fallback: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run's metrics.json body (values are fractions; reports show percentages)."""
    rows = list(records)
    columns = COLUMNS[task]
    usage = Counter[str]()
    documents = Counter[str]()
    for r in rows:
        usage.update({k: int(v) for k, v in (r.get("tokens") or {}).items()})
        documents.update({k: int(v) for k, v in (r.get("documents") or {}).items()})
    out: dict[str, Any] = {
        "n": len(rows),
        "overall": _means(rows, columns),
        "num_valid": int(sum(r["metrics"].get("valid", 0.0) for r in rows)),
        "breakdowns": breakdowns(rows, columns),
        "finish_reasons": dict(Counter(str(r.get("finish_reason")) for r in rows)),
        "searches": {
            "mean": mean(float(r.get("n_searches", 0)) for r in rows),
            "items_with_search": sum(1 for r in rows if r.get("n_searches")),
        },
        "tokens": dict(usage),
        # Fetch outcomes: failures and empty pages fell back to the hit's snippet.
        "documents": {k: documents[k] for k in ("ok", "snippet_only", "failed", "empty")},
        "latency_s": {"mean": mean(float(r.get("latency_s", 0.0)) for r in rows)},
    }
    if fallback is not None:
        # Each column when an invalid answer takes the direct run's result for that item.
        chosen, replaced = backoff_choice(rows, fallback)
        out["backoff"] = {**_means(chosen, columns), "replaced": float(replaced)}
        out["backoff_breakdowns"] = breakdowns(chosen, columns)
    return out
