"""One raw row (native, FlashRAG or the paper's format) -> an `Item`, or a RowError saying why not.

Formats are recognised by their field names, so the same code reads
`{id, question, golden_answers}`, `{id, Question, answer: "['a', 'b']"}`, HotpotQA's
`{_id, question, answer, type}`, MuSiQue's `answer_aliases`, GPQA's CSV columns and
LiveCodeBench's `public_test_cases`.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from search_o1.text_safety import scrub_data

LETTERS = "ABCDEFGHIJ"
_ID_FIELDS = ("id", "_id", "question_id", "Record ID", "unique_id")
_QUESTION_FIELDS = ("question", "Question", "problem", "question_content", "query")
_HOPS = re.compile(r"^(\d+)hop")


class RowError(ValueError):
    """A row that cannot become an item; `reason` is shown with its line number."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Item:
    """One question. `gold` holds aliases (QA), the answer (math), the letter (choice);
    code items carry their tests in `meta["tests"]`."""

    id: str
    question: str
    gold: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)


def _get(row: Mapping[str, Any], fields: Mapping[str, str], ours: str, names: Sequence[str]) -> Any:
    if ours in fields:
        return row.get(fields[ours])
    for name in names:
        if row.get(name) not in (None, ""):
            return row[name]
    return None


def _aliases(value: Any) -> list[str]:
    """Gold answers as a list of strings; the paper stores lists as their Python repr."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                value = ast.literal_eval(text)  # a literal parser, not eval(): data only
            except (ValueError, SyntaxError):
                return [text]
        else:
            return [text] if text else []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    return [str(value)]


def _qa(
    row: Mapping[str, Any], fields: Mapping[str, str]
) -> tuple[tuple[str, ...], dict[str, Any]]:
    golds = _aliases(_get(row, fields, "answer", ("golden_answers", "answer", "answers")))
    golds += _aliases(row.get("answer_aliases"))
    if not golds:
        raise RowError("no gold answer")
    meta: dict[str, Any] = {}
    for key in ("type", "level"):
        if isinstance(row.get(key), str):
            meta[key] = row[key]
    hops = _HOPS.match(str(row.get("id", "")))
    if hops:
        meta["hops"] = int(hops.group(1))
    elif isinstance(row.get("question_decomposition"), list):
        meta["hops"] = len(row["question_decomposition"])
    return tuple(dict.fromkeys(golds)), meta


def _math(
    row: Mapping[str, Any], fields: Mapping[str, str]
) -> tuple[tuple[str, ...], dict[str, Any]]:
    answer = _get(row, fields, "answer", ("answer", "Answer", "final_answer"))
    if answer is None or str(answer).strip() == "":
        raise RowError("no gold answer")
    meta = {k: str(row[k]) for k in ("subject", "level") if row.get(k) not in (None, "")}
    return (str(answer).strip(),), meta


def _shuffle_choices(row: Mapping[str, Any], item_id: str, seed: int) -> tuple[str, list[str]]:
    """GPQA: the correct answer and three wrong ones (as the CSV holds them, like the
    paper's preprocessing) in a seeded, per-item order."""
    correct = str(row.get("Correct Answer") or "")
    wrong = [str(row.get(f"Incorrect Answer {i}") or "") for i in (1, 2, 3)]
    if not correct.strip() or not all(w.strip() for w in wrong):
        raise RowError("needs Correct Answer and Incorrect Answer 1..3")
    options = [correct, *wrong]
    # Seeded by item id, so an item's order does not depend on --limit or file order.
    random.Random(f"{seed}:{item_id}").shuffle(options)
    return LETTERS[options.index(correct)], options


# A choice file of one's own: `{"question", "choices": [...], "answer": "B"}` (or the
# answer's text). The choice instruction names the letters A to D, so at most four.
_OPTION_FIELDS = ("choices", "options")
_CHOICE_ANSWERS = ("answer", "Correct Choice", "answer_letter")
MAX_OPTIONS = 4


def _listed_options(options: Any, answer: Any) -> tuple[str, str]:
    """(the gold letter, the options listed as the paper's preprocessing lists them)."""
    if not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS:
        raise RowError(f"choices must be a list of 2 to {MAX_OPTIONS} options")
    texts = [str(o).strip() for o in options]
    letters = LETTERS[: len(texts)]
    given = "" if answer is None or isinstance(answer, bool | int) else str(answer).strip()
    if given.strip("()").upper() in letters and len(given.strip("()")) == 1:
        letter = given.strip("()").upper()
    elif given in texts:
        letter = letters[texts.index(given)]
    else:
        raise RowError(
            f"answer {answer!r} is neither a letter {letters[0]}-{letters[-1]} nor one of the "
            "choices (a number is refused: counted from 0 or from 1?)"
        )
    return letter, "\n".join(f"({letters[i]}) {t}" for i, t in enumerate(texts))


def _choice(
    row: Mapping[str, Any], fields: Mapping[str, str], item_id: str, question: str, seed: int
) -> tuple[str, tuple[str, ...], dict[str, Any]]:
    meta = {
        key: str(row[col]).strip()
        for key, col in (("domain", "High-level domain"), ("subdomain", "Subdomain"))
        if row.get(col)
    }
    options = _get(row, fields, "choices", _OPTION_FIELDS)
    if options is not None:  # a file of one's own: the options as a list
        letter, listed = _listed_options(options, _get(row, fields, "answer", _CHOICE_ANSWERS))
        return f"{question} Choices:\n{listed}\n", (letter,), meta
    given = _get(row, fields, "answer", ("Correct Choice", "answer_letter"))
    if given is not None:  # the paper's preprocessed form: options already in the question
        letter = str(given).strip().strip("()").upper()
        if len(letter) != 1 or letter not in LETTERS:
            raise RowError(f"Correct Choice {given!r} is not a letter")
        return question, (letter,), meta
    letter, options = _shuffle_choices(row, item_id, seed)
    listed = "\n".join(f"({LETTERS[i]}) {opt}" for i, opt in enumerate(options))
    # The paper's preprocessing writes exactly this (its prompts get the text verbatim).
    return f"{question} Choices:\n{listed}\n", (letter,), meta


def _tests(value: Any) -> list[dict[str, str]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise RowError("public_test_cases is not valid JSON") from None
    if not isinstance(value, list) or not value:
        raise RowError("no public test cases")
    tests = []
    for t in value:
        if not isinstance(t, dict) or "input" not in t or "output" not in t:
            raise RowError("a test case lacks input/output")
        kind = "functional" if t.get("testtype") == "functional" else "stdin"
        tests.append({"input": str(t["input"]), "output": str(t["output"]), "kind": kind})
    return tests


def _code(
    row: Mapping[str, Any], fields: Mapping[str, str], question: str
) -> tuple[str, dict[str, Any]]:
    tests = _tests(_get(row, fields, "tests", ("public_test_cases", "tests")))
    meta: dict[str, Any] = {"tests": tests}
    for key in ("difficulty", "contest_date", "question_title"):
        if row.get(key):
            meta[key] = str(row[key])
    metadata = row.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            metadata = None
    if isinstance(metadata, dict) and metadata.get("func_name"):
        meta["func_name"] = str(metadata["func_name"])
    title = meta.get("question_title")
    return (f"{title}\n\n{question}" if title else question), meta


def row_id(row: Mapping[str, Any], fields: Mapping[str, str]) -> str | None:
    """The row's id as given (through the field mapping), or None."""
    raw = _get(row, fields, "id", _ID_FIELDS)
    return None if raw is None else str(raw).strip()


def parse_row(
    row: Mapping[str, Any], task: str, *, index: int, seed: int, fields: Mapping[str, str]
) -> Item:
    """Build the item for `task` from `row`; raises RowError when it cannot.

    Lone surrogates in the row's text (a JSON escape such as \\ud800) become U+FFFD
    here, where the text enters; how many is kept in `meta["replaced"]`.
    """
    row, replaced = scrub_data(row)
    item = _parse_row(row, task, index=index, seed=seed, fields=fields)
    if replaced:
        item.meta["replaced"] = replaced
    return item


def _parse_row(
    row: Mapping[str, Any], task: str, *, index: int, seed: int, fields: Mapping[str, str]
) -> Item:
    item_id = row_id(row, fields) or str(index)
    question = _get(row, fields, "question", _QUESTION_FIELDS)
    if not isinstance(question, str) or not question.strip():
        raise RowError("no question text")
    # Kept as the dataset holds it (surrounding whitespace too): prompt templates get it
    # verbatim, as the paper's scripts pass it; our built-in prompts strip it themselves.
    if task == "choice":
        question, gold, meta = _choice(row, fields, item_id, question, seed)
    elif task == "math":
        gold, meta = _math(row, fields)
    elif task == "code":
        question, meta = _code(row, fields, question)
        gold = ()
    else:
        gold, meta = _qa(row, fields)
    return Item(item_id, question, gold, meta)
