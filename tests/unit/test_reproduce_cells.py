"""`reproduce`'s cells: a method without a tools mode is a noted cell; Table 1's split
columns (GPQA by domain, LiveCodeBench by difficulty) beside each overall column."""

from __future__ import annotations

import asyncio
import doctest
from collections import Counter
from pathlib import Path
from typing import Any

from search_o1.config import load_settings
from search_o1.engine import get_method, has_tools_mode
from search_o1.eval import paper_tables, reproduce
from search_o1.eval.reproduce import CellResult, MatrixOptions, render_matrix, run_matrix


def test_a_method_without_tools_mode_is_a_noted_cell_in_tools_mode(tmp_path: Path) -> None:
    # No model server and no data: the cell is decided before either is touched.
    settings = load_settings(
        {"api_mode": "tools", "base_url": ["http://127.0.0.1:9/v1"]}, environ={}
    )
    opts = MatrixOptions(table="qa", out=tmp_path, datasets=["nq"], methods=["rag-agent"])
    (result,) = asyncio.run(run_matrix(settings, opts))
    assert result.metrics is None
    assert result.note == "not run: no tools mode (--api-mode tools)"
    summary = (tmp_path / "summary.md").read_text()
    # Our row is named by the model run, not the paper's (it said "RAgent-QwQ-32B · ours").
    assert "| RAgent · ours (the --base-url server's model) | – |" in summary
    assert "| RAgent-QwQ-32B · paper |" in summary
    assert "- nq · rag-agent: not run: no tools mode (--api-mode tools)" in summary
    assert [has_tools_mode(get_method(m)) for m in ("direct", "rag", "rag-agent", "search-o1")] == [
        True,
        True,
        False,
        True,
    ]


def _split(group: str, scores: dict[str, tuple[int, float]], primary: str) -> dict[str, Any]:
    return {group: {label: {"n": n, primary: v} for label, (n, v) in scores.items()}}


def test_table_1_shows_domains_and_difficulties_beside_each_overall_column() -> None:
    domains = {"Physics": (2, 1.0), "Chemistry": (1, 0.0), "Biology": (1, 0.0)}
    gpqa = {
        "n": 4,
        "primary": "em",
        "overall": {"em": 0.5},
        "breakdowns": _split("domain", domains, "em"),
        "backoff": {"em": 0.75, "replaced": 1},
        "backoff_breakdowns": _split("domain", {**domains, "Chemistry": (1, 1.0)}, "em"),
    }
    lcb = {
        "n": 3,
        "primary": "pass@1",
        "overall": {"pass@1": 1 / 3},
        "breakdowns": _split("difficulty", {"easy": (1, 1.0), "hard": (2, 0.0)}, "pass@1"),
    }
    results = [
        CellResult("gpqa", "search-o1", gpqa),
        CellResult("livecodebench", "search-o1", lcb),
    ]
    summary = render_matrix("reasoning", results)
    assert (
        "| Method | GPQA Phy (n=2) | GPQA Chem (n=1) | GPQA Bio (n=1) | GPQA (n=4) "
        "| LiveCodeBench E (n=1) | LiveCodeBench M (n=0) | LiveCodeBench H (n=2) "
        "| LiveCodeBench (n=3) |"
    ) in summary
    assert "| Search-o1 · ours | 100.0 | 0.0 | 0.0 | 50.0 | 100.0 | – | 0.0 | 33.3 |" in summary
    # Ours are in the header; the paper's sizes are a row of their own.
    assert "| Problems · paper | 86 | 93 | 19 | 198 | 26 | 37 | 49 | 112 |" in summary
    # The back-off row has its own splits; a set run without back-off shows none.
    assert "| Search-o1 · ours + back-off | 100.0 | 100.0 | 0.0 | 75.0 | – | – | – | – |" in summary
    assert (
        "| Search-o1 · paper | 77.9 | 47.3 | 78.9 | 63.6 | 57.7 | 32.4 | 20.4 | 33.0 |" in summary
    )


def test_doctests_of_the_tables_and_the_notes() -> None:
    for module, examples in ((paper_tables, 2), (reproduce, 2)):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted == examples


def test_a_cell_whose_items_all_failed_one_way_names_the_cause() -> None:
    note = reproduce.failure_note(2, Counter({"openai: HTTP 500 (model crashed)": 2}))
    assert note == "2 items failed (rerun to retry): openai: HTTP 500 (model crashed)"


def test_our_rows_name_the_model_run() -> None:
    # Rows run on the embedded model used to read "QwQ-32B (direct) · ours".
    embedded = reproduce.model_label(load_settings({}, environ={}))
    assert embedded == "smollm2-135m-instruct, embedded"
    named = load_settings({"base_url": ["http://h/v1"], "model": "qwq"}, environ={})
    assert reproduce.model_label(named) == "qwq"
    result = CellResult("nq", "direct", {"n": 0, "task": "qa", "primary": "em"})
    summary = render_matrix("qa", [result], model=embedded)
    assert "| Direct · ours (smollm2-135m-instruct, embedded) |" in summary
    assert "| QwQ-32B (direct) · paper |" in summary
