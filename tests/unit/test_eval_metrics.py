"""Metrics on hand-checked tricky cases (each expected value worked out by hand)."""

from __future__ import annotations

import pytest

from search_o1.answer import extract_answer
from search_o1.eval.metrics import (
    as_integer,
    choice_scores,
    math_scores,
    normalize_answer,
    qa_scores,
    string_equal,
    verify_equal,
)


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
    ("chain", "gold", "verified", "stringy"),
    [
        (r"so \boxed{\dfrac{1}{2}}", r"\frac{1}{2}", True, True),  # \dfrac vs \frac
        (r"\boxed{0.5}", r"\frac12", True, True),  # 0.5 vs 1/2
        (r"\boxed{\frac{\sqrt{3}}{2}}", r"\frac{\sqrt3}{2}", True, True),  # nested braces
        (r"\boxed{\left( 3, \frac{\pi}{2} \right)}", r"(3,\frac{\pi}{2})", True, True),
        (r"\boxed{\text{(B)}} ... ", "B", True, False),  # \text{} unwrapped by extraction
        (r"\boxed{x^2+1}", "1+x^2", True, False),  # algebra: only math_verify
        (r"\boxed{2\sqrt{3}}", r"\sqrt{12}", True, False),
        (r"\boxed{10^\circ}", "10", True, True),  # degrees dropped
        (r"\boxed{3}", "4", False, False),
        ("no box at all", "4", False, False),
    ],
)
def test_math_columns(chain: str, gold: str, verified: bool, stringy: bool) -> None:
    prediction = extract_answer(chain, "math")
    scores = math_scores(prediction, gold)
    assert scores["math_equal"] == float(verified)
    assert scores["string_equal"] == float(stringy)


def test_nested_braces_survive_extraction() -> None:
    prediction = extract_answer(r"thus \boxed{\frac{a^{2}}{b_{1}}} and done", "math")
    assert prediction == r"\frac{a^{2}}{b_{1}}"
    assert verify_equal(prediction, r"\frac{a^2}{b_1}")


@pytest.mark.parametrize(
    ("prediction", "gold", "equal"),
    [("025", "25", 1.0), ("27", "27.0", 1.0), (r"\text{204}", "204", 1.0), ("26", "25", 0.0),
     ("27.5", "27.0", 0.0), (r"\frac{54}{2}", "27.0", 1.0)],
)  # fmt: skip
def test_integer_answers(prediction: str, gold: str, equal: float) -> None:
    scores = math_scores(prediction, gold, integer=True)
    assert scores["math_equal"] == equal
    assert as_integer("0") == 0


def test_string_equal_handles_units_and_dollars() -> None:
    assert string_equal(r"\$18.90", "18.90")
    assert string_equal(r"5\text{ cm}", "5")
    assert string_equal("k = 3", "3")
    assert string_equal("3/4", r"\frac{3}{4}")
    assert not string_equal(None, "3")


@pytest.mark.parametrize(
    ("chain", "gold", "acc", "valid"),
    [
        (r"\boxed{B}", "B", 1.0, 1.0),
        (r"\boxed{(B)}", "B", 1.0, 1.0),
        (r"\boxed{\text{C}}", "B", 0.0, 1.0),
        (r"\boxed{B) 42 kelvin}", "B", 1.0, 1.0),
        (r"\boxed{42 kelvin}", "B", 0.0, 0.0),
        ("no answer", "A", 0.0, 0.0),
    ],
)
def test_choice(chain: str, gold: str, acc: float, valid: float) -> None:
    assert choice_scores(extract_answer(chain, "choice"), gold) == {"acc": acc, "valid": valid}
