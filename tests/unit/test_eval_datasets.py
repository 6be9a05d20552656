"""Every loader on the real benchmark files in ../shared/data, plus GPQA from rows we write."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from tests.sandbox_support import needs_isolation

from search_o1.errors import ConfigError, InputFileError
from search_o1.eval.datasets import KNOWN, expected_files, load_dataset, load_file
from search_o1.eval.sandbox import Limits, TestCase, run_tests

# name, split, expected rows, task, a field every item's meta has (or None)
REAL = [
    ("math500", None, 500, "math", "subject"),
    ("aime24", None, 30, "math", None),
    ("amc23", None, 40, "math", None),
    ("livecodebench", None, 223, "code", "difficulty"),
    ("nq", None, 1000, "qa", None),
    ("triviaqa", None, 1000, "qa", None),
    ("hotpotqa", "paper", 500, "multihop", None),
    ("hotpotqa", "native", 200, "multihop", "type"),
    ("2wiki", "paper", 500, "multihop", None),
    ("2wiki", "native", 164, "multihop", "type"),
    ("musique", "paper", 500, "multihop", None),
    ("musique", "native", 200, "multihop", "hops"),
    ("bamboogle", "paper", 125, "multihop", None),
    ("bamboogle", "native", 125, "multihop", None),
]


@pytest.mark.parametrize(("name", "split", "rows", "task", "meta_key"), REAL)
def test_real_files_load_completely(
    shared_data: Path, name: str, split: str | None, rows: int, task: str, meta_key: str | None
) -> None:
    ds = load_dataset(name, data_dir=shared_data, split=split)
    assert ds.task == task and len(ds.items) == rows and not ds.skipped
    assert len({i.id for i in ds.items}) == rows
    for item in ds.items:
        assert item.question
        assert item.gold or task == "code"
        if meta_key:
            assert meta_key in item.meta


def test_known_names_cover_the_eleven_and_match_shared_files(shared_data: Path) -> None:
    assert len(KNOWN) == 11
    for name, splits in expected_files().items():
        if name != "gpqa":  # GPQA is not redistributed
            default = splits[next(iter(splits))]
            assert any((shared_data / rel).is_file() for rel in default), name


def test_paper_format_alias_lists_are_parsed(shared_data: Path) -> None:
    ds = load_dataset("hotpotqa", data_dir=shared_data, split="paper", limit=3)
    assert ds.items[0].gold == ("Long live our noble Queen",)  # stored as "['...']"
    trivia = load_dataset("triviaqa", data_dir=shared_data, limit=1)
    assert "Mark Twain" in trivia.items[0].gold and len(trivia.items[0].gold) > 10
    musique = load_dataset("musique", data_dir=shared_data, split="native")
    assert {i.meta["hops"] for i in musique.items} == {2, 3, 4}


def test_math_answers_and_levels(shared_data: Path) -> None:
    amc = load_dataset("amc23", data_dir=shared_data)
    assert amc.integer_answers and amc.items[0].gold == ("27.0",)
    math500 = load_dataset("math500", data_dir=shared_data, limit=1)
    assert math500.items[0].gold[0].startswith("\\left( 3")
    assert math500.items[0].meta == {"subject": "Precalculus", "level": "2"}


@needs_isolation
def test_livecodebench_tests_run_in_the_sandbox(shared_data: Path) -> None:
    ds = load_dataset("lcb", data_dir=shared_data)
    kinds = {t["kind"] for i in ds.items for t in i.meta["tests"]}
    assert kinds == {"stdin", "functional"}
    stdin_item = next(i for i in ds.items if i.meta["question_title"] == "Second Best")
    program = "n = int(input())\na = list(map(int, input().split()))\n"
    program += "print(a.index(sorted(a)[-2]) + 1)\n"
    snake = next(i for i in ds.items if i.question.startswith("snake-in-matrix"))
    solution = (
        "class Solution:\n"
        "    def finalPositionOfSnake(self, n: int, commands: List[str]) -> int:\n"
        "        moves = {'UP': (-1, 0), 'DOWN': (1, 0), 'LEFT': (0, -1), 'RIGHT': (0, 1)}\n"
        "        r = c = 0\n"
        "        for cmd in commands:\n"
        "            r, c = r + moves[cmd][0], c + moves[cmd][1]\n"
        "        return r * n + c\n"
    )
    limits = Limits(timeout_s=5)
    for item, code in ((stdin_item, program), (snake, solution)):
        tests = [TestCase(t["input"], t["output"], t["kind"]) for t in item.meta["tests"]]
        assert run_tests(code, tests, limits=limits).passed, item.id


def _gpqa_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    wrong = [f"Incorrect Answer {i}" for i in (1, 2, 3)]
    fields = ["Record ID", "Question", "Correct Answer", *wrong, "High-level domain", "Subdomain"]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _gpqa_row(i: int, domain: str = "Physics") -> dict[str, str]:
    return {
        "Record ID": f"rec{i}",
        "Question": f"Which value is right for case {i}?",
        "Correct Answer": f"right {i}",
        "Incorrect Answer 1": f"wrong a{i}",
        "Incorrect Answer 2": f"wrong b{i}",
        "Incorrect Answer 3": f"wrong c{i}",
        "High-level domain": domain,
        "Subdomain": "Quantum Mechanics",
    }


def test_gpqa_csv_shuffles_with_a_fixed_seed_and_keeps_domain(tmp_path: Path) -> None:
    rows = [_gpqa_row(i, d) for i, d in enumerate(["Physics", "Chemistry", "Biology"] * 4)]
    rows[5]["Incorrect Answer 2"] = ""  # malformed: skipped, counted, line reported
    (tmp_path / "gpqa").mkdir()
    _gpqa_csv(tmp_path / "gpqa" / "gpqa_diamond.csv", rows)
    ds = load_dataset("gpqa", data_dir=tmp_path, seed=7)
    again = load_dataset("gpqa", data_dir=tmp_path, seed=7, limit=3)
    other = load_dataset("gpqa", data_dir=tmp_path, seed=8)
    assert ds.task == "choice" and len(ds.items) == 11
    assert [(s.line, s.id) for s in ds.skipped] == [(7, "rec5")]
    first = ds.items[0]
    letter = first.gold[0]
    assert f"({letter}) right 0" in first.question and first.meta["domain"] == "Physics"
    assert again.items[0] == first  # same seed, same order, whatever the limit
    assert [i.gold for i in other.items] != [i.gold for i in ds.items]
    assert len({i.gold[0] for i in ds.items}) > 1  # the right answer is not always (A)


def test_gpqa_csv_question_is_laid_out_as_the_papers_preprocessing(tmp_path: Path) -> None:
    # data_pre_precess.ipynb: the question, " Choices:", a line per option "(A) answer"
    # with the answers as the CSV holds them, and a final line break.
    row = _gpqa_row(3) | {"Question": "Which one?\n", "Incorrect Answer 2": " wrong b3\n"}
    _gpqa_csv(tmp_path / "q.csv", [row])
    item = load_file(tmp_path / "q.csv", "choice", seed=7).items[0]
    answers = [row[k] for k in ("Correct Answer", *(f"Incorrect Answer {i}" for i in (1, 2, 3)))]
    listed = sorted(answers, key=lambda a: item.question.index(a.strip()))
    letter = "ABCD"[listed.index("right 3")]
    options = "\n".join(f"({'ABCD'[i]}) {a}" for i, a in enumerate(listed))
    assert item.question == f"Which one?\n Choices:\n{options}\n"
    assert item.gold == (letter,)


def test_missing_file_says_where_and_whence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_dataset("gpqa", data_dir=tmp_path, split="extended")
    message = str(e.value)
    assert str(tmp_path / "gpqa" / "gpqa_extended.csv") in message and "idavidrein/gpqa" in message
    with pytest.raises(ConfigError, match="--task"):
        load_dataset(str(_gpqa_csv(tmp_path / "x.csv", [_gpqa_row(1)])))


def test_any_jsonl_with_field_mapping_and_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    lines = [
        json.dumps({"qid": "a", "q": "Capital of France?", "gold": ["Paris"]}),
        "{not json",
        json.dumps({"qid": "b", "q": "", "gold": ["x"]}),
        json.dumps({"qid": "c", "q": "Largest planet?", "gold": "Jupiter"}),
        json.dumps({"qid": "a", "q": "Again?", "gold": "dup"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    ds = load_file(path, "qa", fields={"id": "qid", "question": "q", "answer": "gold"})
    assert [(i.id, i.gold) for i in ds.items] == [("a", ("Paris",)), ("c", ("Jupiter",))]
    assert [(s.line, s.id, s.reason.split(":")[0]) for s in ds.skipped] == [
        (2, None, "invalid JSON"),
        (3, "b", "no question text"),
        (5, "a", "duplicate id"),
    ]
    with pytest.raises(InputFileError):
        load_file(tmp_path / "absent.jsonl", "qa")


def test_hostile_bytes_in_a_jsonl_cost_a_character_or_a_row_not_the_run(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(
        b'{"id": "u", "question": "Bad \xff\xfe bytes?", "golden_answers": ["a"]}\n'
        b'{"id": "big", "question": "Huge?", "golden_answers": [1' + b"0" * 5000 + b"]}\n"
        b'{"id": "deep", "question": "Deep?", "golden_answers": '
        + b"[" * 5000
        + b"]" * 5000
        + b"}\n"
        b'{"id": "cr", "question": "A\rB?", "golden_answers": ["a"]}\r\n'
        b'{"id": "ok", "question": "Fine?", "golden_answers": ["a"]}\r\n'
    )
    ds = load_file(path, "qa")
    assert [i.id for i in ds.items] == ["u", "ok"]
    assert ds.items[0].question == "Bad \ufffd\ufffd bytes?"
    assert ds.items[0].meta["replaced"] == 2  # counted where the text entered
    assert [(s.line, s.reason) for s in ds.skipped] == [
        (
            2,
            "invalid JSON: Exceeds the limit (4300 digits) for integer string conversion: "
            "value has 5001 digits; use sys.set_int_max_str_digits() to increase the limit",
        ),
        (3, "invalid JSON: nested too deeply"),
        (4, "invalid JSON: Invalid control character at"),
    ]
    whole = tmp_path / "hostile.json"
    whole.write_bytes(b'[{"id": "u", "question": "Bad \xff?", "golden_answers": ["a"]}]')
    assert load_file(whole, "qa").items[0].question == "Bad \ufffd?"
    whole.write_bytes(b"[" * 5000 + b"]" * 5000)
    with pytest.raises(InputFileError, match="invalid JSON"):
        load_file(whole, "qa")
    table = tmp_path / "hostile.csv"
    table.write_bytes(b"id,question,answer\nu,Bad \xff?,a\n")
    assert load_file(table, "qa").items[0].question == "Bad \ufffd?"


def test_gpqa_paper_json_keeps_its_correct_choice(tmp_path: Path) -> None:
    rows = [
        {
            "id": "0",
            "Question": "Pick one. Choices:\n(A) x\n(B) y\n(C) z\n(D) w",
            "Correct Choice": "C",
            "High-level domain": "Chemistry",
        },
        {"id": "1", "Question": "Bad letter", "Correct Choice": "Q"},
    ]
    (tmp_path / "GPQA").mkdir()
    (tmp_path / "GPQA" / "diamond.json").write_text(json.dumps(rows))
    ds = load_dataset("gpqa", data_dir=tmp_path)
    assert [(i.id, i.gold, i.meta["domain"]) for i in ds.items] == [("0", ("C",), "Chemistry")]
    assert ds.items[0].question.endswith("(D) w")
    assert [(s.line, s.id) for s in ds.skipped] == [(2, "1")]


def test_livecodebench_v1_v4_is_the_papers_subset_of_our_file(shared_data: Path) -> None:
    everything = load_dataset("livecodebench", data_dir=shared_data)
    paper = load_dataset("livecodebench", data_dir=shared_data, split="v1-v4")
    # Releases v1-v4 end in September 2024; the paper keeps dates from 2024-08-01.
    dates = sorted(i.meta["contest_date"][:10] for i in paper.items)
    assert (len(everything.items), len(paper.items)) == (223, 113)
    assert dates[0] >= "2024-08-01" and dates[-1] <= "2024-09-30"
    levels = Counter(i.meta["difficulty"] for i in paper.items)
    assert levels == {"easy": 26, "medium": 36, "hard": 51}  # the paper: 26, 37, 49
