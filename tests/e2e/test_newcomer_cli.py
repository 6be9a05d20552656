"""Rough edges a newcomer met in the first hour, each run as a user runs it: the installed
command as a subprocess, in a folder of its own, against loopback model servers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.eval_support import cli, evaluate, serve, write_jsonl
from tests.eval_support import READER_REPLY, prompt_text, responder
from tests.servers.openai_server import openai_server

from search_o1 import markers as mk


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


# Nothing listens on the discard port: a connection there is refused at once.
DEAD = "http://127.0.0.1:9/v1"


def test_a_dead_reader_server_stops_eval_before_any_item(tmp_path: Path) -> None:
    """A reader that cannot be reached fails no item (each search is recorded as failed),
    so eval used to finish with every search failed and scores that looked real."""
    write_jsonl(
        tmp_path / "qa.jsonl", [{"id": "q1", "question": "Capital of Peru?", "answer": "Lima"}]
    )
    write_jsonl(
        tmp_path / "docs.jsonl",
        [{"id": "d1", "title": "Peru", "text": "Lima is the capital of Peru."}],
    )
    flags = ["--task", "qa", "--corpus", "docs.jsonl", "--no-progress", "--retries", "0"]
    with serve({"Capital of Peru?": r"\boxed{Lima}"}) as srv:
        model = ["--base-url", srv.url, "--model", "fake-model", "--chat-template", "chatml"]
        reader = ["--reader-base-url", DEAD]
        done = cli(
            "eval", "--dataset", "qa.jsonl", "--out", "run", *model, *reader, *flags, cwd=tmp_path
        )
        # rag pastes the documents: it has no reader to ask, so the same flags run.
        rag = cli(
            "eval",
            "--dataset",
            "qa.jsonl",
            "--out",
            "rag",
            "--method",
            "rag",
            *model,
            *reader,
            *flags,
            cwd=tmp_path,
        )
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().splitlines()[-1].startswith("error: reader: ")
    assert "127.0.0.1:9" in done.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()
    assert rag.returncode == 0, rag.stderr


def test_reproduce_stops_at_a_dead_server_before_any_item(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "data" / "qa" / "bamboogle_test.jsonl",
        [{"id": "b1", "question": "Capital of Peru?", "golden_answers": ["Lima"]}],
    )
    done = cli(
        "reproduce",
        "--table",
        "qa",
        "--datasets",
        "bamboogle",
        "--methods",
        "direct,rag",
        "--data-dir",
        "data",
        "--base-url",
        DEAD,
        "--model",
        "m",
        "--retries",
        "0",
        "--out",
        "table",
        "--no-progress",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "127.0.0.1:9" in done.stderr and "items failed" not in done.stdout + done.stderr
    assert not (tmp_path / "table" / "bamboogle.direct" / "results.jsonl").exists()


def test_asks_summary_counts_searches_run_not_queries_repeated(tmp_path: Path) -> None:
    """A model that wrote one query again and again, under a limit of 5, ended with
    "searches: 15": the summary now counts what ran and names the rest."""
    write_jsonl(
        tmp_path / "docs.jsonl",
        [{"id": "d1", "title": "Peru", "text": "Lima is the capital of Peru."}],
    )

    def respond(body: dict[str, Any]) -> str:
        if "current search query" in prompt_text(body).lower():
            return READER_REPLY
        return f"Again. {mk.BEGIN_QUERY}capital of Peru{mk.END_QUERY}"

    with openai_server(respond, return_stop=False) as srv:
        done = cli(
            "ask",
            "Capital of Peru?",
            "--base-url",
            srv.url,
            "--model",
            "fake-model",
            "--chat-template",
            "chatml",
            "--corpus",
            "docs.jsonl",
            "--max-turns",
            "4",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    # One line, though over 80 columns (it wrapped in a pipe: "... by the\nreader · 0.2s").
    (finish,) = [line for line in done.stdout.splitlines() if line.startswith("finish:")]
    assert finish.startswith("finish: max_turns · searches: 1 (3 repeated) · tokens:")
    assert re.search(r" by the reader · \d+\.\ds$", finish), finish


def test_a_bad_value_names_the_file_or_variable_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "setting max_searches: Input should be a valid integer" read the same whether the
    value was in search-o1.toml, in a SEARCH_O1_* variable or a flag."""
    (tmp_path / "search-o1.toml").write_text('max_searches = "three"\n')
    from_file = cli("ask", "q", "--base-url", DEAD, cwd=tmp_path)
    monkeypatch.setenv("SEARCH_O1_MAX_SEARCHES", "abc")
    from_env = cli("ask", "q", "--base-url", DEAD, cwd=tmp_path)
    from_flag = cli("ask", "q", "--base-url", DEAD, "--max-searches", "-1", cwd=tmp_path)
    assert (from_file.returncode, from_env.returncode, from_flag.returncode) == (2, 2, 2)
    assert from_file.stderr.startswith("error: setting max_searches (from search-o1.toml): ")
    assert from_env.stderr.startswith("error: setting max_searches (from SEARCH_O1_MAX_SEARCHES): ")
    assert from_flag.stderr.startswith("error: setting max_searches: Input should be greater")


def test_a_choice_file_of_ones_own_lists_its_options(tmp_path: Path) -> None:
    """`{"question", "choices": [...], "answer": "B"}` was refused (it asked for GPQA's
    CSV columns), and with `--fields answer=answer` ran with the options dropped from
    the question the model saw."""
    rows = [
        {"id": "c1", "question": "Largest planet?", "choices": ["Mars", "Jupiter"], "answer": "B"},
        {"id": "c2", "question": "A gas giant?", "options": ["Saturn", "Mars"], "answer": "Saturn"},
        {"id": "c3", "question": "Which one?", "choices": ["a", "b"], "answer": 1},
    ]
    write_jsonl(tmp_path / "mine.jsonl", rows)
    answers = {"Largest planet?": r"\boxed{B}", "A gas giant?": r"\boxed{B}"}
    with serve(answers) as srv:
        m, done = evaluate(srv.url, tmp_path, "mine.jsonl", "run", "--task", "choice")
        prompts = [prompt_text(body) for body in srv.completion_requests]
    assert m["n"] == 2 and m["overall"]["em"] == 0.5
    assert any("Largest planet? Choices:\n(A) Mars\n(B) Jupiter\n" in p for p in prompts)
    assert "line 3 (id c3): answer 1 is neither a letter A-B nor one of the choices" in done.stderr


def test_the_chatml_fallback_is_announced_once(tmp_path: Path) -> None:
    """Items rendering at once each said "cannot render chat templates; using chatml"
    (and reproduce again for each cell)."""
    answers = {"Capital of Peru?": r"\boxed{Lima}", "Capital of Chile?": r"\boxed{Santiago}"}
    rows = [{"id": str(n), "question": q, "answer": "x"} for n, q in enumerate(answers)]
    write_jsonl(tmp_path / "qa.jsonl", rows)
    # A vLLM-like server (without /tokenize here): the client asks it to render, in vain.
    with openai_server(responder(answers)) as srv:
        done = cli(
            "eval",
            "--dataset",
            "qa.jsonl",
            "--task",
            "qa",
            "--out",
            "run",
            "--method",
            "direct",
            "--base-url",
            srv.url,
            "--no-progress",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot render chat templates; using chatml") == 1, done.stderr
    # A library warning reads like the command's own (it came bare, with no prefix).
    assert "\nwarning: server at " in "\n" + done.stderr, done.stderr


def test_ask_json_says_a_search_failed_and_why(tmp_path: Path) -> None:
    """With the reader's server down, --json listed the search like one that found
    nothing: no outcome, no error."""
    write_jsonl(tmp_path / "docs.jsonl", [{"id": "d1", "title": "Peru", "text": "Lima, Peru."}])
    with openai_server(responder({"Capital of Peru?": r"\boxed{Lima}"})) as srv:
        done = cli(
            "ask",
            "Capital of Peru?",
            "--json",
            "--base-url",
            srv.url,
            "--corpus",
            "docs.jsonl",
            "--reader-base-url",
            DEAD,
            "--retries",
            "0",
            "--chat-template",
            "chatml",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    (search,) = json.loads(done.stdout)["searches"]
    assert search["outcome"] == "failed" and "127.0.0.1:9" in search["error"]
    assert search["hits"] and search["hits"][0]["id"] == "d1"


def test_report_on_a_run_killed_before_its_summary_says_how_to_finish_it(tmp_path: Path) -> None:
    """A run killed outright keeps config.json and results.jsonl but has no metrics.json
    yet; report asked "metrics.json: missing: is this a run directory?"."""
    write_jsonl(
        tmp_path / "qa.jsonl", [{"id": "q1", "question": "Capital of Peru?", "answer": "Lima"}]
    )
    with serve({"Capital of Peru?": r"\boxed{Lima}"}) as srv:
        evaluate(srv.url, tmp_path, "qa.jsonl", "run", "--task", "qa")
    (tmp_path / "run" / "metrics.json").unlink()  # as a SIGKILL before the summary leaves it
    done = cli("report", "run", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: run: an unfinished run (no metrics.json): rerun `search-o1 eval")
    assert "--dataset qa.jsonl" in line and line.endswith("` to finish it")


def test_ask_without_a_question_points_to_the_demo(tmp_path: Path) -> None:
    done = cli("ask", cwd=tmp_path)
    assert done.returncode == 2
    assert "Missing argument 'QUESTION'. (Or try `search-o1 ask --demo`" in done.stderr


def test_json_lines_under_another_name_get_a_hint(tmp_path: Path) -> None:
    """A JSONL file named .json (or .txt) was read as one JSON document: "qa.json:2:
    invalid JSON: Extra data" and nothing more."""
    rows = [
        {"id": "q1", "question": "A?", "answer": "a"},
        {"id": "q2", "question": "B?", "answer": "b"},
    ]
    write_jsonl(tmp_path / "qa.json", rows)
    done = cli("eval", "--dataset", "qa.json", "--task", "qa", "--out", "run", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: qa.json:2: invalid JSON: Extra data; one object per line? name the file .jsonl"
    )


def test_a_failed_ask_leaves_stdout_empty(tmp_path: Path) -> None:
    """A run that failed before the model said a word printed a stray blank line on
    stdout (the end of a streamed line that never began)."""
    write_jsonl(tmp_path / "docs.jsonl", [{"id": "d1", "title": "Peru", "text": "Lima, Peru."}])
    done = cli(
        "ask", "Capital of Peru?", "--base-url", DEAD, "--corpus", "docs.jsonl", cwd=tmp_path
    )
    assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert done.stdout == ""
