"""Run files: only the evaluator's own lines count, one eval per run folder, and a
failed write leaves neither a torn line nor a stray .tmp file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from search_o1.eval import runfiles


def lines(run: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (run / runfiles.RESULTS).read_text().splitlines()]


def test_lines_appended_behind_the_evaluators_back_are_cut(tmp_path: Path) -> None:
    with runfiles.open_results(tmp_path) as sink:
        sink.append({"id": "a", "metrics": {"pass@1": 0.0}})
        with (tmp_path / runfiles.RESULTS).open("a") as intruder:
            intruder.write('{"id": "b", "metrics": {"pass@1": 1.0}}\n')
        sink.append({"id": "c", "metrics": {"pass@1": 0.0}})
        with (tmp_path / runfiles.RESULTS).open("a") as intruder:
            intruder.write('{"id": "a", "metrics": {"pass@1": 1.0}}\n')
    assert [r["id"] for r in lines(tmp_path)] == ["a", "c"]
    assert sink.foreign_bytes > 0


def test_an_ids_first_line_is_its_record(tmp_path: Path) -> None:
    (tmp_path / runfiles.RESULTS).write_text(
        '{"id": "a", "metrics": {"pass@1": 0.0}}\n{"id": "a", "metrics": {"pass@1": 1.0}}\n'
    )
    assert runfiles.read_records(tmp_path)["a"]["metrics"] == {"pass@1": 0.0}


def test_a_lone_surrogate_cannot_make_a_record_unwritable(tmp_path: Path) -> None:
    with runfiles.open_results(tmp_path) as sink:
        sink.append({"id": "a", "question": "bad \ud800 text"})
    assert lines(tmp_path)[0]["question"] == "bad \ufffd text"
    runfiles.write_json(tmp_path / "m.json", {"q": "\udfff"})
    assert json.loads((tmp_path / "m.json").read_text()) == {"q": "\ufffd"}


def test_a_second_holder_of_the_run_folder_is_refused(tmp_path: Path) -> None:
    held = f"another eval \\(pid {os.getpid()}\\)"
    with runfiles.lock_run_dir(tmp_path), pytest.raises(runfiles.RunLocked, match=held):
        runfiles.check_unlocked(tmp_path)
    runfiles.check_unlocked(tmp_path)  # released with its holder
    runfiles.check_run_dir(tmp_path)  # the lock file alone is not "other files"


def test_a_failed_write_leaves_no_tmp_and_says_what_to_do(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    target.mkdir()  # replacing a folder with a file fails, as a full disk would
    (target / "x").write_text("")
    with pytest.raises(runfiles.RunFileError, match="rerun the same command to resume"):
        runfiles.write_json(target, {"a": 1})
    assert not (tmp_path / "metrics.json.tmp").exists()
