"""Scoring functions: pure, one prediction against its gold answer(s), with examples.

QA uses SQuAD normalisation (max over aliases). Math has two columns: `math_equal` is the
paper's string-normalised equivalence (`paper_math`; the column the paper's tables
report) and `math_verify` checks equivalence with the math-verify library (algebra aware);
AIME/AMC answers are integers. Multiple choice has the paper's strict columns (`em`,
`valid`: the answer is exactly one letter) and our lenient ones (`acc_lenient`,
`valid_lenient`: "B. 42" names B). Nothing here calls `eval()`: predictions are model
output, never code to run outside the sandbox.
"""

from __future__ import annotations

import re
import string
import threading
from collections import Counter
from collections.abc import Iterable

from search_o1.eval.paper_math import math_equal

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation and articles, squash spaces.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    >>> normalize_answer("An apple, a day")
    'apple day'
    """
    text = "".join(c for c in text.lower() if c not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Token-level F1 of two normalised strings.

    >>> token_f1("barack obama", "obama")
    0.6666666666666666
    >>> token_f1("paris", "london")
    0.0
    """
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def qa_scores(prediction: str | None, golds: Iterable[str]) -> dict[str, float]:
    """EM, F1 and acc (gold contained in prediction), each the max over aliases.

    >>> qa_scores("The Beatles.", ["beatles", "Fab Four"])
    {'em': 1.0, 'f1': 1.0, 'acc': 1.0}
    >>> qa_scores("James Madison, 4th president", ["James Madison"])["acc"]
    1.0
    >>> qa_scores(None, ["x"])
    {'em': 0.0, 'f1': 0.0, 'acc': 0.0}
    """
    best = {"em": 0.0, "f1": 0.0, "acc": 0.0}
    if prediction is None:
        return best
    pred = normalize_answer(prediction)
    for gold in golds:
        ref = normalize_answer(gold)
        best["em"] = max(best["em"], float(pred == ref))
        best["f1"] = max(best["f1"], token_f1(prediction, gold))
        best["acc"] = max(best["acc"], float(bool(ref) and ref in pred))
    return best


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def verify_equal(prediction: str | None, gold: str) -> bool:
    """Equivalence by math_verify's parser and verifier (sympy), on `$...$`-wrapped text.

    >>> verify_equal("0.5", r"\\frac{1}{2}")
    True
    >>> verify_equal(r"(3, \\frac{\\pi}{2})", r"\\left( 3, \\frac{\\pi}{2} \\right)")
    True
    >>> verify_equal("x^2+1", "1+x^2")
    True
    >>> verify_equal("3", "4")
    False
    """
    if prediction is None or not prediction.strip():
        return False
    from math_verify import parse, verify

    # math_verify times out with SIGALRM, which only works in the main thread.
    timeout = 5 if _in_main_thread() else None
    try:
        g = parse(f"${gold}$", parsing_timeout=timeout)
        p = parse(f"${prediction}$", parsing_timeout=timeout)
        return bool(g and p and verify(g, p, timeout_seconds=timeout))
    except Exception:  # a parser failure means "not shown equal", never a crash
        return False


_INT_TEXT = re.compile(r"^\\(?:text|mathrm|textbf)\{(.*)\}$")


def as_integer(text: str | None) -> int | None:
    """An answer read as an integer, or None ("025" -> 25, "27.0" -> 27, "1,000" -> 1000).

    >>> as_integer("025"), as_integer("27.0"), as_integer(r"\\text{1,000}"), as_integer("2.5")
    (25, 27, 1000, None)
    """
    if text is None:
        return None
    s = text.strip().strip("$").strip()
    inner = _INT_TEXT.match(s)
    if inner:
        s = inner.group(1)
    s = s.replace("{,}", "").replace(",", "").replace(" ", "")
    if re.fullmatch(r"[-+]?\d+", s):
        return int(s)
    if re.fullmatch(r"[-+]?\d+\.0*", s):
        return int(s.split(".")[0])
    return None


def math_scores(prediction: str | None, gold: str, *, integer: bool = False) -> dict[str, float]:
    """Columns for a math item: math_equal (the paper's), math_verify (ours), valid.

    With `integer` (AIME, AMC) math_verify compares integers when both sides read as one;
    math_equal stays the paper's string rule ("025" is not "25" there).

    >>> math_scores("025", "25", integer=True)
    {'math_equal': 0.0, 'math_verify': 1.0, 'valid': 1.0}
    >>> math_scores(None, "1")
    {'math_equal': 0.0, 'math_verify': 0.0, 'valid': 0.0}
    """
    valid = prediction is not None and bool(prediction.strip())
    verified = verify_equal(prediction, gold)
    if integer and valid:
        p, g = as_integer(prediction), as_integer(gold)
        if p is not None and g is not None:
            verified = p == g
    return {
        "math_equal": float(math_equal(prediction, gold)),
        "math_verify": float(verified),
        "valid": float(valid),
    }


# An upper-case letter, optionally in parentheses, alone or followed by a separator:
# "B", "(B)", "B) 42", "B. 42". Lower case only as the whole answer, so "a fish" is no "A".
_LETTER = re.compile(r"^\(?([A-Z])\)?(?:[.:)]|\s|$)|^\(?([a-z])\)?$")


def choice_letter(prediction: str | None, letters: str = "ABCD") -> str | None:
    """The option letter a prediction names, or None when it names none clearly.

    >>> choice_letter("(B)"), choice_letter(r"\\text{C}"), choice_letter("D. 42")
    ('B', 'C', 'D')
    >>> choice_letter("E") is None
    True
    >>> choice_letter("Because") is None
    True
    """
    if prediction is None:
        return None
    s = prediction.strip().strip("$").strip()
    inner = _INT_TEXT.match(s)
    if inner:
        s = inner.group(1).strip()
    match = _LETTER.match(s)
    if not match:
        return None
    letter = (match.group(1) or match.group(2)).upper()
    return letter if letter in letters else None


def choice_scores(prediction: str | None, gold: str) -> dict[str, float]:
    """The paper's strict columns and our lenient ones for a multiple-choice item.

    Paper (its tables): `valid` only when the answer is exactly one character, and `em`
    its case-insensitive match with the gold letter. Ours: `valid_lenient` when the
    answer names a letter clearly ("B", "(B)", "B) 42"), and `acc_lenient` that letter.

    >>> choice_scores("A", "A")
    {'em': 1.0, 'valid': 1.0, 'acc_lenient': 1.0, 'valid_lenient': 1.0}
    >>> choice_scores("A. 42", "A")
    {'em': 0.0, 'valid': 0.0, 'acc_lenient': 1.0, 'valid_lenient': 1.0}
    """
    letter = choice_letter(prediction)
    strict = "" if prediction is None else " ".join(prediction.lower().split())
    return {
        "em": float(strict == gold.strip().lower()),
        "valid": float(prediction is not None and len(prediction) == 1),
        "acc_lenient": float(letter == gold.strip().upper()),
        "valid_lenient": float(letter is not None),
    }


def mean(values: Iterable[float]) -> float:
    """The mean, 0.0 for nothing.

    >>> mean([1.0, 0.0, 1.0, 0.0])
    0.5
    """
    items = list(values)
    return sum(items) / len(items) if items else 0.0
