"""`search-o1 eval` and `search-o1 report` as a user runs them: real subprocesses against a
fake OpenAI-compatible server that answers in tricky formats; metrics.json is checked
against values worked out here independently."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.eval_support import EXE, cli, direct_flags, evaluate, serve, write_jsonl
from tests.eval_support import responder
from tests.sandbox_support import needs_isolation
from tests.servers.openai_server import openai_server

from search_o1.eval.datasets import load_dataset


def test_qa_with_aliases_and_boxed_text(tmp_path: Path) -> None:
    rows = [
        {
            "id": "q1",
            "question": "Which band recorded Abbey Road?",
            "golden_answers": ["The Beatles", "Fab Four"],
        },
        {"id": "q2", "question": "What is the capital of France?", "golden_answers": ["Paris"]},
        {"id": "q3", "question": "Who painted the Night Watch?", "golden_answers": ["Rembrandt"]},
    ]
    data = write_jsonl(tmp_path / "qa.jsonl", rows)
    answers = {
        rows[0]["question"]: r"It is \boxed{\text{the beatles.}}",
        rows[1]["question"]: r"\boxed{Paris, France}",
        rows[2]["question"]: "I believe it was Rembrandt.",  # no box: invalid
    }
    with serve(answers) as srv:
        m, done = evaluate(srv.url, tmp_path, str(data), "run", "--task", "qa")
    # By hand: EM 1,0,0; F1 1, 2*(1/2*1)/(1/2+1)=2/3, 0; acc (gold inside) 1,1,0.
    assert m["overall"]["em"] == pytest.approx(1 / 3)
    assert m["overall"]["f1"] == pytest.approx((1 + 2 / 3) / 3)
    assert m["overall"]["acc"] == pytest.approx(2 / 3)
    assert m["num_valid"] == 2 and m["n"] == 3
    assert "| direct | 33.3 | 55.6 | 66.7 |" in done.stdout


def test_math_known_names_under_data_dir(tmp_path: Path) -> None:
    math = [
        {
            "id": "m1",
            "Question": "Half of one?",
            "answer": r"\frac{1}{2}",
            "subject": "Algebra",
            "level": "1",
        },
        {
            "id": "m2",
            "Question": "Expand it.",
            "answer": "x^2+1",
            "subject": "Algebra",
            "level": "2",
        },
        {
            "id": "m3",
            "Question": "Six over two?",
            "answer": "3",
            "subject": "Prealgebra",
            "level": "1",
        },
        {"id": "m4", "Question": "Seven?", "answer": "7", "subject": "Prealgebra", "level": "2"},
    ]
    (tmp_path / "data" / "math").mkdir(parents=True)
    (tmp_path / "data" / "math" / "math500_test.json").write_text(json.dumps(math))
    aime = [
        {"id": 1, "problem": "AIME one?", "answer": "25"},
        {"id": 2, "problem": "AIME two?", "answer": "100"},
    ]
    write_jsonl(tmp_path / "data" / "math" / "aime2024_test.jsonl", aime)
    answers = {
        "Half of one?": r"\boxed{0.5}",
        "Expand it.": r"\boxed{1+x^{2}}",
        "Six over two?": r"\boxed{\dfrac{6}{2}}",
        "Seven?": r"\boxed{8}",
        "AIME one?": r"\boxed{025}",
        "AIME two?": r"\boxed{100.0}",
    }
    with serve(answers) as srv:
        m, _ = evaluate(srv.url, tmp_path, "math500", "m", "--data-dir", "data")
        a, _ = evaluate(srv.url, tmp_path, "aime", "a", "--data-dir", "data")
    # math_verify: 1/2=0.5 yes, 1+x^2 yes, 6/2=3 yes, 8 no. The paper's math_equal
    # (strings): only 0.5 -> \frac{1}{2}; "025" and "100.0" are other strings than 25, 100.
    assert m["overall"]["math_verify"] == 0.75 and m["overall"]["math_equal"] == 0.25
    assert m["breakdowns"]["subject"]["Algebra"]["math_verify"] == 1.0
    assert m["breakdowns"]["subject"]["Algebra"]["math_equal"] == 0.5
    assert m["breakdowns"]["level"]["2"]["math_verify"] == 0.5
    assert a["overall"] == {
        "math_equal": 0.0,
        "math_verify": 1.0,
        "valid": 1.0,
        "valid_lenient": 1.0,
    }
    summary = (tmp_path / "m" / "summary.md").read_text()
    assert "the paper's tables use: math_equal" in summary


def test_multiple_choice_from_gpqa_csv(tmp_path: Path) -> None:
    (tmp_path / "data" / "gpqa").mkdir(parents=True)
    header = [
        "Question",
        "Correct Answer",
        "Incorrect Answer 1",
        "Incorrect Answer 2",
        "Incorrect Answer 3",
        "High-level domain",
        "Subdomain",
    ]
    with (tmp_path / "data" / "gpqa" / "gpqa_diamond.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for i, dom in enumerate(["Physics", "Chemistry", "Biology"]):
            w.writerow(
                [f"Question number {i}?", f"ok{i}", f"no{i}a", f"no{i}b", f"no{i}c", dom, "x"]
            )
    items = load_dataset("gpqa", data_dir=tmp_path / "data", seed=3).items
    right = [it.gold[0] for it in items]
    wrong = "B" if right[1] != "B" else "C"
    answers = {
        items[0].question: f"\\boxed{{({right[0]})}}",
        items[1].question: f"\\boxed{{\\text{{{wrong}}}}}",
        items[2].question: r"\boxed{42}",
    }
    with serve(answers) as srv:
        m, done = evaluate(srv.url, tmp_path, "gpqa", "g", "--data-dir", "data", "--seed", "3")
    # "(X)" loses its parentheses at extraction; "42" is no letter (and two characters).
    assert m["overall"]["em"] == pytest.approx(1 / 3)
    assert m["overall"]["valid"] == pytest.approx(2 / 3)
    assert m["overall"]["acc_lenient"] == pytest.approx(1 / 3)
    assert m["breakdowns"]["domain"]["Physics"]["em"] == 1.0
    assert "| Biol | Chem | Phys | Overall (EM) |" in done.stdout


ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
TWICE_WRONG = "class Solution:\n    def twice(self, n: int) -> int:\n        return n * 3\n"


@needs_isolation
def test_code_pass_at_1_through_the_sandbox(tmp_path: Path) -> None:
    rows = [
        {
            "id": "c1",
            "question_title": "Add",
            "Question": "Read a and b; print a+b.",
            "difficulty": "easy",
            "public_test_cases": json.dumps(
                [
                    {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
                    {"input": "5 5\n", "output": "10\n", "testtype": "stdin"},
                ]
            ),
        },
        {
            "id": "c2",
            "question_title": "Twice",
            "Question": "Return n doubled.",
            "difficulty": "hard",
            "public_test_cases": json.dumps(
                [{"input": "4", "output": "8", "testtype": "functional"}]
            ),
        },
        {
            "id": "c3",
            "question_title": "Loop",
            "Question": "Print one.",
            "difficulty": "hard",
            "public_test_cases": json.dumps([{"input": "", "output": "1\n", "testtype": "stdin"}]),
        },
    ]
    path = tmp_path / "lcb.json"
    path.write_text(json.dumps(rows))
    answers = {
        "Read a and b; print a+b.": f"```python\n{ADD}```",
        "Return n doubled.": f"Here:\n```python\n{TWICE_WRONG}```",
        "Print one.": "```python\nwhile True:\n    pass\n```",
    }
    with serve(answers) as srv:
        m, _ = evaluate(
            srv.url, tmp_path, str(path), "c", "--task", "code", "--sandbox-timeout", "1"
        )
    assert m["overall"]["pass@1"] == pytest.approx(1 / 3) and m["overall"]["valid"] == 1.0
    assert m["breakdowns"]["difficulty"]["easy"]["pass@1"] == 1.0
    records = [json.loads(x) for x in (tmp_path / "c" / "results.jsonl").read_text().splitlines()]
    statuses = {r["id"]: r["code_result"]["tests"][-1]["status"] for r in records}
    assert statuses == {"c1": "passed", "c2": "wrong_answer", "c3": "timeout"}


def test_killed_run_resumes_and_report_compares(tmp_path: Path) -> None:
    rows = [
        {"id": f"k{i}", "question": f"Question number {i} here?", "golden_answers": [f"a{i}"]}
        for i in range(8)
    ]
    data = write_jsonl(tmp_path / "k.jsonl", rows)
    answers = {r["question"]: f"\\boxed{{a{i}}}" for i, r in enumerate(rows)}
    plain = responder(answers)

    def slow(body: dict[str, Any]) -> str:
        time.sleep(0.25)
        return plain(body)

    with openai_server(slow, return_stop=False) as srv:
        args = ["eval", "--dataset", str(data), "--task", "qa", "--out", "run"]
        args += ["--concurrency", "1", *direct_flags(srv.url), "--no-progress"]
        proc = subprocess.Popen(
            [str(EXE), *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        results = tmp_path / "run" / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if results.exists() and len(results.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = len(results.read_text().splitlines())
        assert 3 <= before < 8
        again = cli(*args, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert f"resumed {before}" in again.stdout
    ids = [json.loads(x)["id"] for x in results.read_text().splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # each item exactly once
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert m["n"] == 8 and m["overall"]["em"] == 1.0
    # A second run of the same items, then the two side by side.
    with serve({}) as srv:
        evaluate(srv.url, tmp_path, str(data), "zero", "--task", "qa")
    shown = cli("report", "run", "zero", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "| EM | 100.0 | 0.0 |" in shown.stdout
    diff = cli("report", "run", "zero", "--diff", cwd=tmp_path)
    assert "run: 8 better · zero: 0 better · 8 shown" in diff.stdout
    bad = cli("report", "run", "--diff", cwd=tmp_path)
    assert bad.returncode == 2 and "exactly two runs" in bad.stderr


def test_a_box_holding_the_placeholder_is_no_answer(tmp_path: Path) -> None:
    # A small model copies the instruction's "\boxed{YOUR_ANSWER}"; it used to count as a
    # valid answer "YOUR_ANSWER". An earlier real box still counts.
    rows = [
        {"id": "q1", "question": "Where was Puccini born?", "golden_answers": ["Lucca"]},
        {"id": "q2", "question": "Who wrote Tosca?", "golden_answers": ["Puccini"]},
    ]
    data = write_jsonl(tmp_path / "qa.jsonl", rows)
    answers = {
        rows[0]["question"]: r"Answer in the form \boxed{YOUR_ANSWER}.",
        rows[1]["question"]: r"\boxed{Puccini}, given as \boxed{YOUR\_ANSWER}",
    }
    with serve(answers) as srv:
        m, _ = evaluate(srv.url, tmp_path, str(data), "run", "--task", "qa")
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").open())}
    # Our lenient extraction (the `*_lenient` columns) passes over the placeholder.
    q1, q2 = records["q1"], records["q2"]
    assert q1["prediction"] is None and q1["metrics"]["valid_lenient"] == 0.0
    assert q1["finish_reason"] == "no_answer"
    assert q2["prediction"] == "Puccini" and q2["metrics"]["em_lenient"] == 1.0
    assert m["overall"]["valid_lenient"] == 0.5
    # The paper's columns read the boxes as its script does: the placeholder is an
    # answer, and one line's two boxes are one greedy match.
    assert q1["paper_answer"] == "YOUR_ANSWER" and q1["metrics"]["valid"] == 1.0
    assert q2["paper_answer"] == r"Puccini}, given as \boxed{YOUR\_ANSWER"
    assert q2["metrics"]["em"] == 0.0 and m["num_valid"] == 2
