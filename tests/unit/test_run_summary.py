"""A run's summary counts fetch outcomes over its items (records as the runner saves them)."""

from __future__ import annotations

from search_o1.eval.report import render_summary
from search_o1.eval.scoring import aggregate


def test_fetch_outcomes_are_summed_and_shown_in_the_run_summary() -> None:
    counts = {"ok": 2, "snippet_only": 1, "failed": 1, "empty": 1}
    record = {"metrics": {"em": 1.0}, "documents": counts, "finish_reason": "answered"}
    metrics = aggregate([record, record], "qa")
    assert metrics["documents"] == {"ok": 4, "snippet_only": 2, "failed": 2, "empty": 2}
    summary = render_summary(
        {
            **metrics,
            "dataset": "nq",
            "primary": "em",
            "method": "search-o1",
            "task": "qa",
            "items": 2,
            "missing": 0,
            "skipped_rows": 0,
        }
    )
    assert "2 fetch failed · 2 empty pages" in summary


def test_each_breakdown_is_its_own_table_with_counts_and_percentages() -> None:
    records = [
        {
            "metrics": {"em": em, "f1": em, "acc": em},
            "groups": {"type": kind},
            "finish_reason": "answered",
        }
        for em, kind in ((1.0, "bridge"), (0.0, "bridge"), (1.0, "comparison"))
    ]
    metrics = aggregate(records, "multihop")
    summary = render_summary(
        {
            **metrics,
            "dataset": "hotpotqa",
            "primary": "em",
            "method": "search-o1",
            "task": "multihop",
            "items": 3,
            "missing": 0,
            "skipped_rows": 0,
        }
    )
    assert "\n## By type\n\n| type | n | EM | F1 | Acc |\n|---|---|---|---|---|\n" in summary
    assert "| bridge | 2 | 50.0 | 50.0 | 50.0 |" in summary
    assert "| comparison | 1 | 100.0 | 100.0 | 100.0 |" in summary


def test_backoff_replaces_an_invalid_answer_only_with_a_valid_one() -> None:
    from search_o1.eval.scoring import backoff_choice

    def rec(i: str, valid: float, em: float) -> dict[str, object]:
        return {"id": i, "metrics": {"valid": valid, "em": em}}

    ours = [rec("a", 0.0, 0.0), rec("b", 0.0, 0.0), rec("c", 1.0, 0.0)]
    direct = {"a": rec("a", 1.0, 1.0), "b": rec("b", 0.0, 1.0), "c": rec("c", 1.0, 1.0)}
    chosen, replaced = backoff_choice(ours, direct)  # type: ignore[arg-type]
    # a: invalid, direct valid -> taken; b: direct invalid too -> kept; c: valid -> kept.
    assert replaced == 1 and [r["metrics"]["em"] for r in chosen] == [1.0, 0.0, 0.0]  # type: ignore[index]
