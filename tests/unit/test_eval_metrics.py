"""Metrics on hand-checked tricky cases (each expected value worked out by hand)."""

from __future__ import annotations

import doctest

import pytest

import search_o1.eval.metrics as metrics_module
from search_o1.answer import extract_answer
from search_o1.eval import paper_math
from search_o1.eval.metrics import (
    as_integer,
    choice_scores,
    math_scores,
    normalize_answer,
    qa_scores,
    verify_equal,
)
from search_o1.eval.paper_math import math_equal


@pytest.mark.parametrize(
    ("prediction", "golds", "em", "f1", "acc"),
    [
        ("The Beatles!", ["Beatles"], 1.0, 1.0, 1.0),  # article + punctuation
        ("Sam Clemens", ["Mark Twain", "Sam Clemens"], 1.0, 1.0, 1.0),  # max over aliases
        ("Samuel Clemens", ["Mark Twain", "Sam Clemens"], 0.0, 0.5, 0.0),
        ("president James Madison", ["james madison"], 0.0, 0.8, 1.0),  # acc: contained
        ("U.S.A.", ["USA"], 1.0, 1.0, 1.0),  # punctuation inside a token
        ("$59,039", ["$59,039"], 1.0, 1.0, 1.0),
        ("", ["x"], 0.0, 0.0, 0.0),
    ],
)
def test_qa_scores(prediction: str, golds: list[str], em: float, f1: float, acc: float) -> None:
    scores = qa_scores(prediction, golds)
    assert scores["em"] == em
    assert scores["f1"] == pytest.approx(f1)
    assert scores["acc"] == acc


def test_normalisation_collapses_whitespace_and_articles() -> None:
    assert normalize_answer("  A  Tale of   the Two Cities ") == "tale of two cities"


@pytest.mark.parametrize(
    ("chain", "gold", "verified", "paper"),
    [
        (r"so \boxed{\dfrac{1}{2}}", r"\frac{1}{2}", True, True),  # \dfrac vs \frac
        (r"\boxed{0.5}", r"\frac12", True, True),  # 0.5 vs 1/2
        (r"\boxed{\frac{\sqrt{3}}{2}}", r"\frac{\sqrt3}{2}", True, True),  # nested braces
        (r"\boxed{\left( 3, \frac{\pi}{2} \right)}", r"(3,\frac{\pi}{2})", True, True),
        (r"\boxed{\text{(B)}} ... ", "B", True, False),  # "(B)" after unwrapping \text{}
        (r"\boxed{x^2+1}", "1+x^2", True, False),  # algebra: only math_verify
        (r"\boxed{2\sqrt{3}}", r"\sqrt{12}", True, False),
        (r"\boxed{10^\circ}", "10", True, True),  # degrees dropped
        (r"\boxed{3}", "4", False, False),
        ("no box at all", "4", False, False),
    ],
)
def test_math_columns(chain: str, gold: str, verified: bool, paper: bool) -> None:
    prediction = extract_answer(chain, "math")
    scores = math_scores(prediction, gold)
    assert scores["math_verify"] == float(verified)
    assert scores["math_equal"] == float(paper)


# Answer pairs on which the paper's math_equal and math-verify disagree, each checked by
# hand against the MATH normalisation rules: this pins which column is which.
DISAGREE = [
    ("x^2+1", "1+x^2", False, True),  # no algebra in the string rule
    (r"\frac{2}{4}", r"\frac{1}{2}", False, True),  # no reduction
    ("0.25", r"\frac{1}{4}", False, True),  # only 0.5 is rewritten
    (r"2\sqrt{2}", r"\sqrt{8}", False, True),
    ("025", "25", False, True),  # leading zero kept
    ("1,000", "1000", False, True),  # thousands separator kept
    (r"50\%", "0.5", False, True),  # percent dropped, not converted
    (r"\{1,2\}", r"\{2,1\}", False, True),  # sets are strings
    ("2+3i", "3i+2", False, True),
    ("x = 3", "y = 3", True, False),  # a short left side is dropped
    ("$5$", "5", False, True),  # only an escaped dollar is removed
    ("5%", "5", False, True),  # only an escaped percent is removed
    ("6.0", "6", False, True),
    (r"3\sqrt 2", r"3\sqrt{2}", False, True),  # \sqrt before a space braces the space
    (r"5\text{ cm}\text{ m}", "5", False, True),  # two unit groups: raw comparison
    ("f(x)=2", "2", False, True),  # a left side longer than two characters stays
]


@pytest.mark.parametrize(("prediction", "gold", "paper", "verified"), DISAGREE)
def test_paper_math_equal_and_math_verify_disagree(
    prediction: str, gold: str, paper: bool, verified: bool
) -> None:
    assert paper != verified
    scores = math_scores(prediction, gold)
    assert scores["math_equal"] == float(paper)
    assert scores["math_verify"] == float(verified)


def test_paper_math_equal_rules() -> None:
    assert math_equal(r"\$18.90", "18.90")
    assert math_equal(r"5\text{ cm}", "5")
    assert math_equal("k = 3", "3")
    assert math_equal("3/4", r"\frac{3}{4}")
    assert math_equal(r"\frac12", r"\frac{1}{2}") and math_equal(r"\frac1{72}", r"\frac{1}{72}")
    assert math_equal(".5", "0.5") and math_equal(r"\sqrt3", r"\sqrt{3}")
    assert math_equal(r"\left(1,2\right)", "(1, 2)")
    assert math_equal(r"\frac", r"\frac") and not math_equal(r"\frac", r"\frac{}")
    assert not math_equal(None, "3")


def test_nested_braces_survive_extraction() -> None:
    prediction = extract_answer(r"thus \boxed{\frac{a^{2}}{b_{1}}} and done", "math")
    assert prediction == r"\frac{a^{2}}{b_{1}}"
    assert verify_equal(prediction, r"\frac{a^2}{b_1}")


@pytest.mark.parametrize(
    ("prediction", "gold", "equal"),
    [
        ("025", "25", 1.0),
        ("27", "27.0", 1.0),
        (r"\text{204}", "204", 1.0),
        ("26", "25", 0.0),
        ("27.5", "27.0", 0.0),
        (r"\frac{54}{2}", "27.0", 1.0),
    ],
)
def test_integer_answers(prediction: str, gold: str, equal: float) -> None:
    scores = math_scores(prediction, gold, integer=True)
    assert scores["math_verify"] == equal
    assert as_integer("0") == 0


@pytest.mark.parametrize(
    ("chain", "gold", "em", "valid", "lenient", "lenient_valid"),
    [
        (r"\boxed{B}", "B", 1.0, 1.0, 1.0, 1.0),
        (r"\boxed{b}", "B", 1.0, 1.0, 1.0, 1.0),  # the paper lowercases
        (r"\boxed{(B)}", "B", 1.0, 1.0, 1.0, 1.0),  # parentheses stripped by extraction
        (r"\boxed{\text{C}}", "B", 0.0, 1.0, 0.0, 1.0),
        (r"\boxed{B) 42 kelvin}", "B", 0.0, 0.0, 1.0, 1.0),  # strict: not one letter
        (r"\boxed{B. 42}", "B", 0.0, 0.0, 1.0, 1.0),
        (r"\boxed{42 kelvin}", "B", 0.0, 0.0, 0.0, 0.0),
        (r"\boxed{E}", "B", 0.0, 1.0, 0.0, 0.0),  # one character, so valid for the paper
        ("no answer", "A", 0.0, 0.0, 0.0, 0.0),
    ],
)
def test_choice(
    chain: str, gold: str, em: float, valid: float, lenient: float, lenient_valid: float
) -> None:
    assert choice_scores(extract_answer(chain, "choice"), gold) == {
        "em": em,
        "valid": valid,
        "acc_lenient": lenient,
        "valid_lenient": lenient_valid,
    }


@pytest.mark.parametrize("module", [metrics_module, paper_math])
def test_doctests(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.failed == 0 and result.attempted > 0
