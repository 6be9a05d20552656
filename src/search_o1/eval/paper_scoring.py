"""The paper's per-item scores, rule for rule, from a model's whole output.

What the paper's `evaluate.py` computes for one item, so a number printed under a paper
metric's name is the number its scripts would give for the same output:

- the answer is the last match of `\\boxed\\{(.*)\\}`: greedy and within one line, so
  `\\boxed{3} and }` keeps `3} and `, a box spread over lines is no answer, and two
  boxes on a line give `A} and \\boxed{B`; no match is an invalid (empty) answer;
- `qa` and `choose` modes then take the last `\\text{...}` inside it and strip
  parentheses from both ends; `gen` (maths) keeps the box as written;
- `gen` and `choose` lowercase and collapse whitespace, then compare: `em` equality,
  `acc` gold contained in the answer, `f1` over whitespace tokens, and `math_equal` the
  MATH normalisation (`paper_math`) of the two lowercased strings;
- `qa` uses SQuAD normalisation and the best alias; an alias sharing no token with the
  answer is skipped for all three scores;
- `valid` is the count the paper reports (`num_valid_answer`): a non-empty answer, and
  for multiple choice exactly one character.

Our lenient reading (balanced braces, multi-line boxes, `\\fbox`, option letters in
words) is scored beside these under its own names (`*_lenient`, `math_verify`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from search_o1.eval.metrics import normalize_answer
from search_o1.eval.paper_math import math_equal

__all__ = ["MODES", "Mode", "paper_code", "paper_extract", "paper_gold", "paper_scores"]

Mode = Literal["gen", "qa", "choose"]
# The paper's mode for each of our task kinds (code is judged by running it instead).
MODES: dict[str, Mode] = {"math": "gen", "qa": "qa", "multihop": "qa", "choice": "choose"}

_BOXED = re.compile(r"\\boxed\{(.*)\}")  # no DOTALL: `.` stops at a line break
_TEXT = re.compile(r"\\text\{(.*)\}")
_PYTHON_BLOCK = re.compile(r"```python\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)


def paper_extract(output: str, mode: Mode) -> str:
    r"""The answer the paper reads from an output; "" when there is none.

    >>> paper_extract(r"so \boxed{\frac{1}{2}}.", "gen")
    '\\frac{1}{2}'
    >>> paper_extract(r"\boxed{A} or \boxed{B}", "choose")
    'A} or \\boxed{B'
    >>> paper_extract(r"\boxed{\text{(Paris)}}", "qa"), paper_extract("\\boxed{\n1\n}", "gen")
    ('Paris', '')
    """
    matches = _BOXED.findall(output)
    if not matches:
        return ""
    answer: str = matches[-1]
    if mode != "gen":
        inner = _TEXT.findall(answer)
        if inner:
            answer = inner[-1]
        answer = answer.strip("()")
    return answer


def paper_code(output: str) -> str:
    """The program the paper's judge runs: the last ```python block, any case; "" if none.

    >>> paper_code("```Python\\nprint(1)\\n```\\n```\\nprint(2)\\n```")
    'print(1)'
    """
    blocks = _PYTHON_BLOCK.findall(output)
    return blocks[-1].strip() if blocks else ""


def paper_gold(answer: str, *, integer: bool) -> str:
    """The gold as the paper's preprocessing stores it: AIME/AMC as `str(int(answer))`.

    >>> paper_gold("025", integer=True), paper_gold("27.0", integer=True)
    ('25', '27')
    >>> paper_gold("27.5", integer=True), paper_gold("025", integer=False)
    ('27.5', '025')
    """
    if not integer:
        return answer
    try:
        value = float(answer)
    except ValueError:
        return answer
    return str(int(value)) if value.is_integer() else answer


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def _overlap(pred: list[str], gold: list[str]) -> float | None:
    """Token F1, or None when no token is shared."""
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return None
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def _qa(answer: str, golds: Sequence[str]) -> dict[str, float]:
    best = {"em": 0.0, "acc": 0.0, "f1": 0.0}
    pred = normalize_answer(answer)
    for gold in golds:
        ref = normalize_answer(gold)
        f1 = _overlap(pred.split(), ref.split())
        if f1 is None:
            continue  # the paper skips an alias with no shared token, em and acc too
        best["em"] = max(best["em"], float(pred == ref))
        best["acc"] = max(best["acc"], float(ref in pred))
        best["f1"] = max(best["f1"], f1)
    return {**best, "math_equal": 0.0}


def _plain(answer: str, gold: str) -> dict[str, float]:
    pred, ref = _squash(answer), _squash(gold)
    return {
        "em": float(pred == ref),
        "acc": float(ref in pred),
        "f1": _overlap(pred.split(), ref.split()) or 0.0,
        "math_equal": float(math_equal(pred, ref)),
    }


def paper_scores(output: str, golds: Sequence[str], mode: Mode) -> tuple[dict[str, float], str]:
    r"""(`valid`, `em`, `acc`, `f1`, `math_equal`) as the paper scores them, and the answer.

    `golds`: every alias for `qa`; the gold answer (or letter) first for the others.

    >>> paper_scores(r"\boxed{The Beatles}", ["Beatles"], "qa")[0]["em"]
    1.0
    >>> scores, answer = paper_scores(r"\boxed{\dfrac{14}{3}}", [r"\frac{14}{3}"], "gen")
    >>> answer, scores["em"], scores["math_equal"]
    ('\\dfrac{14}{3}', 0.0, 1.0)
    >>> paper_scores(r"\boxed{(B) 42}", ["B"], "choose")[0]["valid"]
    0.0
    """
    answer = paper_extract(output, mode)
    scores = _qa(answer, golds) if mode == "qa" else _plain(answer, golds[0])
    valid = answer != "" and not (mode == "choose" and len(answer) > 1)
    return {"valid": float(valid), **scores}, answer
