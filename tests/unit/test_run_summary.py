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
            **metrics, "dataset": "hotpotqa", "primary": "em", "method": "search-o1",
            "task": "multihop", "items": 3, "missing": 0, "skipped_rows": 0,
        }
    )  # fmt: skip
    assert "\n## By type\n\n| type | n | EM | F1 | Acc |\n|---|---|---|---|---|\n" in summary
    assert "| bridge | 2 | 50.0 | 50.0 | 50.0 |" in summary
    assert "| comparison | 1 | 100.0 | 100.0 | 100.0 |" in summary
