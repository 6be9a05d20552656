"""Evaluation runs that must refuse rather than mix, and what they report while running:
resume with other settings, --out on a foreign folder, no usable rows, progress after a
resume (all items, as metrics.json), a dead server found before any item runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.eval_support import responder

from search_o1.cli import cli
from search_o1.config import Settings, load_settings
from search_o1.engine import Engine
from search_o1.errors import ConfigError
from search_o1.eval.datasets import Dataset, load_dataset
from search_o1.eval.report import render_summary
from search_o1.eval.runner import Progress, RunOptions, run_eval
from search_o1.llm.scripted import ScriptedLLM
from search_o1.pipeline import engine_options

QUESTIONS = {f"Question number {i}, who?": f"So \\boxed{{a{i}}}." for i in range(4)}


def dataset(tmp_path: Path, n: int = 4) -> Dataset:
    rows = [
        {"id": f"q{i}", "question": q, "golden_answers": [f"a{i}"]}
        for i, q in enumerate(list(QUESTIONS)[:n])
    ]
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_dataset(str(path), task="qa")


def settings(**kw: Any) -> Settings:
    base = {"backend": "openai", "base_url": "http://unused", "force_search": False}
    return load_settings({**base, **kw}, environ={})


def engine(s: Settings, answers: dict[str, str] = QUESTIONS) -> Engine:
    return Engine(ScriptedLLM(responder(answers)), None, options=engine_options(s))


async def test_resume_refuses_other_result_settings_and_names_them(tmp_path: Path) -> None:
    ds, out = dataset(tmp_path), tmp_path / "run"
    first = settings(top_k=1, max_call_tokens=20)
    opts = RunOptions(method="direct", out=out, settings=first)
    await run_eval(engine(first), dataset(tmp_path, 1), opts)
    changed = settings(top_k=7, max_call_tokens=10)
    with pytest.raises(ConfigError) as e:
        await run_eval(engine(changed), ds, RunOptions(method="direct", out=out, settings=changed))
    msg = str(e.value)
    assert "top_k 1 -> 7" in msg and "max_call_tokens 20 -> 10" in msg and "new --out" in msg
    assert "\n" not in msg
    assert json.loads((out / "config.json").read_text())["settings"]["top_k"] == 1
    # Where the server is and how long to wait change no answer: the run resumes.
    same = settings(
        top_k=1, max_call_tokens=20, timeout=5, base_url="http://elsewhere:1/v1", concurrency=2
    )
    outcome = await run_eval(engine(same), ds, RunOptions(method="direct", out=out, settings=same))
    assert (outcome.resumed, outcome.ran) == (1, 3)


async def test_out_on_a_folder_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    s = settings()
    with pytest.raises(ConfigError, match="holds other files and no run"):
        await run_eval(engine(s), dataset(tmp_path), RunOptions(method="direct", out=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "qa.jsonl"]


async def test_progress_after_resume_covers_every_item(tmp_path: Path) -> None:
    out = tmp_path / "run"
    s = settings()
    # First run: two items, both right.
    await run_eval(engine(s), dataset(tmp_path, 2), RunOptions(method="direct", out=out))
    seen: list[Progress] = []
    wrong = {q: "\\boxed{nope}" for q in QUESTIONS}
    opts = RunOptions(method="direct", out=out, on_progress=seen.append)
    outcome = await run_eval(engine(s, wrong), dataset(tmp_path), opts)
    assert (seen[0].done, seen[0].total, seen[0].score) == (2, 4, 1.0)
    last = seen[-1]
    assert (last.done, last.total) == (4, 4)
    assert last.score == outcome.metrics["overall"]["em"] == 0.5
    assert last.label() == "em 50.0"


def test_a_summary_of_nothing_scored_shows_dashes() -> None:
    metrics = {
        "dataset": "x",
        "method": "direct",
        "task": "qa",
        "primary": "em",
        "items": 3,
        "n": 0,
        "missing": 3,
        "skipped_rows": 0,
        "num_valid": 0,
        "overall": {"em": 0.0, "f1": 0.0, "acc": 0.0},
    }
    table_row = render_summary(metrics).splitlines()[4]
    assert table_row == "| direct | – | – | – |"


def test_eval_refuses_an_empty_file_in_one_line(tmp_path: Path) -> None:
    # It used to fail inside its own refusal (IndexError on the first skipped row).
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n\n")):
        (tmp_path / name).write_text(text)
        args = ["eval", "--dataset", str(tmp_path / name), "--task", "qa"]
        result = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "r")])
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == f"error: {tmp_path / name}: no rows " + (
            "(it is empty, or only blank lines)"
        )


def test_eval_refuses_no_usable_rows_and_a_folder(tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"q": "x?", "a": "y"}) + "\n")
    args = ["eval", "--dataset", str(data), "--task", "qa", "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(cli, [*args, "--fields", "question=nope,answer=a"])
    assert result.exit_code == 2
    assert "no usable rows" in result.stderr and len(result.stderr.splitlines()) >= 1
    folder = CliRunner().invoke(cli, ["eval", "--dataset", str(tmp_path), "--out", "r"])
    assert folder.exit_code == 2 and "is a folder" in folder.stderr


def test_eval_checks_the_model_server_before_any_item(tmp_path: Path) -> None:
    data = dataset(tmp_path)
    args = [
        "eval",
        "--dataset",
        str(data.path),
        "--task",
        "qa",
        "--out",
        str(tmp_path / "r"),
        "--method",
        "direct",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--retries",
        "0",
        "--no-progress",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "127.0.0.1:9" in result.stderr and "items failed" not in result.stderr
    assert (
        not (tmp_path / "r" / "results.jsonl").exists()
        or not (tmp_path / "r" / "results.jsonl").read_text()
    )


def test_eval_refuses_a_method_without_tools_mode_before_anything(tmp_path: Path) -> None:
    data = dataset(tmp_path)
    out = tmp_path / "r"
    args = [
        "eval",
        "--dataset",
        str(data.path),
        "--task",
        "qa",
        "--out",
        str(out),
        "--method",
        "rag-agent",
        "--api-mode",
        "tools",
        "--search",
        "memory",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--no-progress",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "the rag-agent method has no tools mode" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and not out.exists()
