"""Rough edges a newcomer met in the first hour, each run as a user runs it: the installed
command as a subprocess, in a folder of its own, against loopback model servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.eval_support import cli, evaluate, serve, write_jsonl


def test_a_task_in_the_settings_file_names_a_data_files_kind(tmp_path: Path) -> None:
    """README's configuration example sets `task`; eval took it for the engine but still
    refused a data file ("say what kind of task it is with --task"). It must not turn a
    known benchmark into another kind, though."""
    write_jsonl(tmp_path / "sums.jsonl", [{"id": "s1", "problem": "Two plus two?", "answer": "4"}])
    write_jsonl(
        tmp_path / "data" / "math" / "aime2024_test.jsonl",
        [{"id": 1, "problem": "AIME one?", "answer": "25"}],
    )
    (tmp_path / "search-o1.toml").write_text('task = "qa"\n')
    answers = {"Two plus two?": r"\boxed{4}", "AIME one?": r"\boxed{25}"}
    with serve(answers) as srv:
        qa, _ = evaluate(srv.url, tmp_path, "sums.jsonl", "as-qa")
        aime, _ = evaluate(srv.url, tmp_path, "aime", "aime", "--data-dir", "data")
        (tmp_path / "search-o1.toml").unlink()
        refused = cli(
            "eval", "--dataset", "sums.jsonl", "--out", "none", "--base-url", srv.url, cwd=tmp_path
        )
    assert qa["task"] == "qa" and qa["overall"]["em"] == 1.0
    assert aime["task"] == "math" and aime["overall"]["math_equal"] == 1.0
    # Without the file nothing says what the data file is: still one line asking.
    assert refused.returncode == 2
    assert "say what kind of task it is with --task" in refused.stderr


def test_a_task_in_the_environment_counts_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_jsonl(tmp_path / "sums.jsonl", [{"id": "s1", "problem": "Two plus two?", "answer": "4"}])
    monkeypatch.setenv("SEARCH_O1_TASK", "math")
    with serve({"Two plus two?": r"\boxed{4}"}) as srv:
        m, _ = evaluate(srv.url, tmp_path, "sums.jsonl", "run")
    assert m["task"] == "math" and m["overall"]["math_equal"] == 1.0
