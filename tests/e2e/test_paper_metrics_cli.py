"""`search-o1 eval --method direct --profile paper` as a user runs it, on data files laid
out as in ../shared/data, against a real server on 127.0.0.1 that returns the outputs of
the conformance file: every item's metrics must be the ones the paper's own functions
computed for that output (`../shared/conformance/paper_scoring.jsonl`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.eval_support import responder
from tests.servers.openai_server import openai_server

EXE = Path(sys.executable).with_name("search-o1")
CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"


def _math(r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "Question": r["question"], "answer": r["gold"]}


def _problem(r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "problem": r["question"], "answer": r["gold"]}


def _flashrag(r: dict[str, Any]) -> dict[str, Any]:
    return {"id": r["id"], "question": r["question"], "golden_answers": r["gold"]}


# dataset -> (our known name, the file as ../shared/data lays it out, the row's shape)
LAYOUT: dict[str, tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "math500": ("math500", "math/math500_test.json", _math),
    "aime24": ("aime24", "math/aime2024_test.jsonl", _problem),
    "amc23": ("amc23", "math/amc2023_test.jsonl", _problem),
    "bamboogle": ("bamboogle", "qa/bamboogle_test.jsonl", _flashrag),
    "nq": ("nq", "qa/nq_test_1000.jsonl", _flashrag),
}


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(rows))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _eval(url: str, cwd: Path, dataset: str) -> None:
    done = subprocess.run(
        [
            str(EXE),
            "eval",
            "--dataset",
            dataset,
            "--data-dir",
            "data",
            "--out",
            dataset,
            "--method",
            "direct",
            "--profile",
            "paper",
            "--paper-model",
            "other",
            "--base-url",
            url,
            "--model",
            "fake-model",
            "--chat-template",
            "chatml",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "SEARCH_O1_INDEX_CACHE": str(cwd / "idx")},
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("dataset", list(LAYOUT))
def test_direct_paper_profile_writes_the_official_metrics_per_item(
    tmp_path: Path, dataset: str
) -> None:
    path = CONFORMANCE / "paper_scoring.jsonl"
    if not path.exists():
        pytest.skip(f"conformance data not found at {path}")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["dataset"] == dataset]
    name, file, shape = LAYOUT[dataset]
    _write(tmp_path / "data" / file, [shape(r) for r in rows])
    # The server answers each question with that record's whole output.
    answers = {r["question"].strip(): r["output"] for r in rows}
    with openai_server(responder(answers), return_stop=False) as server:  # type: ignore[arg-type]
        _eval(server.url, tmp_path, name)
        sent = {body["max_tokens"] for body in server.completion_requests}
    assert sent == {32768}  # the paper's direct script, whatever the model
    results = tmp_path / name / "results.jsonl"
    records = {r["id"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert len(records) == len(rows)
    disagree = []
    for row in rows:
        got, official = records[str(row["id"])], row["official"]
        ours = {k: got["metrics"][k] for k in ("em", "acc", "f1", "math_equal")}
        ours |= {"extracted": got["paper_answer"], "is_valid_answer": got["metrics"]["valid"]}
        if ours != pytest.approx(official):
            disagree.append((row["id"], official, ours))
    assert not disagree, f"{len(disagree)} of {len(rows)} disagree: {disagree[:2]}"
