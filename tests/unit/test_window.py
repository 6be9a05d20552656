"""best_window / cut_document: the paper's context-window rule and its bounded cousin."""

from __future__ import annotations

import doctest

import search_o1.window as window
from search_o1.window import best_window, cut_document, split_sentences, word_f1

FILLER = "Lorem ipsum dolor sit amet consectetur. " * 40
BEST = "The opera Tosca was composed by Giacomo Puccini in 1900."
TEXT = FILLER + BEST + " " + FILLER


def test_doctests() -> None:
    assert doctest.testmod(window).failed == 0


def test_split_sentences_keeps_closing_quotes_and_line_breaks() -> None:
    text = 'She said "Go." He went!\nNext line? Yes'
    assert split_sentences(text) == ['She said "Go."', "He went!", "Next line?", "Yes"]


def test_word_f1_is_symmetric_and_ignores_case_and_punctuation() -> None:
    assert word_f1("Tosca, Puccini!", "puccini tosca") == 1.0
    assert word_f1("a b", "c d") == 0.0
    assert word_f1("a b c d", "a b") == word_f1("a b", "a b c d")


def test_best_window_centres_on_the_best_sentence() -> None:
    out, matched = best_window(TEXT, "who composed the opera Tosca", 100)
    assert matched
    assert BEST in out
    # about max_chars on each side, never more
    assert len(out) <= len(BEST) + 2 * 100
    assert len(out) >= len(BEST) + 2 * 100 - 30


def test_best_window_cuts_at_word_boundaries() -> None:
    out, _ = best_window(TEXT, "opera Tosca Puccini", 77)
    words = set(TEXT.split())
    assert out.split()[0] in words
    assert out.split()[-1] in words


def test_best_window_falls_back_to_the_head_without_a_match() -> None:
    out, matched = best_window(TEXT, "quantum chromodynamics", 50)
    assert not matched
    assert TEXT.startswith(out)
    assert 80 <= len(out) <= 100


def test_best_window_threshold_is_strictly_above_point_two() -> None:
    # one shared word of five vs. one word: F1 = 2 * (1/5 * 1) / (1/5 + 1) = 1/3 -> match
    _, matched = best_window("alpha beta gamma delta epsilon.", "alpha", 10)
    assert matched
    # one shared word of twenty: F1 = 2/21 < 0.2 -> no match
    long_sentence = " ".join(f"w{i}" for i in range(19)) + " alpha."
    _, matched = best_window(long_sentence, "alpha", 10)
    assert not matched


def test_best_window_on_empty_inputs() -> None:
    assert best_window("", "query", 10) == ("", False)
    assert best_window("Some text here.", "", 100) == ("Some text here.", False)


def test_cut_document_bounds_and_centres() -> None:
    out = cut_document(TEXT, "opera Tosca composed", 300)
    assert len(out) <= 300
    assert BEST in out


def test_cut_document_keeps_short_text_and_falls_back_to_head() -> None:
    assert cut_document("short", "x", 10) == "short"
    out = cut_document(TEXT, "nothing matches here", 120)
    assert TEXT.startswith(out) and len(out) <= 120


def test_cut_document_near_the_end_still_uses_the_full_budget() -> None:
    text = FILLER + BEST
    out = cut_document(text, "opera Tosca Puccini", 400)
    assert out.endswith(BEST)
    assert len(out) >= 370


SNIPPET = "Salt Under Lanterns is a 1998 novel by the Welsh writer Mara Quill"
FACT = (
    "Salt Under Lanterns is a 1998 novel by the Welsh writer Mara Quill, set among the "
    "herring fleets of the northern coast in the years after the war, and it won the "
    "Harbour Prize for fiction in the following spring."
)


def _titled_page(gap: int) -> str:
    filler = "Readers have long argued about harbour towns and their weather. "
    body = (filler * (gap // len(filler) + 1))[:gap]
    # As a page service returns it: the <title> and the <h1> as their own lines.
    return (
        "Title: Salt Under Lanterns, a 1998 novel by Mara Quill\n\n"
        "Markdown Content:\n# Salt Under Lanterns: a 1998 novel by Mara Quill\n\n"
        f"{body}\n\n{FACT}\n\n{filler * 20}"
    )


def test_a_heading_repeating_the_snippet_does_not_take_the_window() -> None:
    page = _titled_page(9000)
    assert page.index(FACT) > 9000
    out, matched = best_window(page, SNIPPET, 3000)
    assert matched and FACT in out


def test_a_long_body_sentence_beats_a_short_title_with_a_higher_f1() -> None:
    # The title's F1 (all of its words match) is above the long sentence's F1, which
    # only the tier rule overrides.
    title = "Salt Under Lanterns, a 1998 novel by Mara Quill"
    assert word_f1(title, SNIPPET) > word_f1(FACT, SNIPPET)
    page = f"{title}\n" + "Unrelated words fill this part of the page. " * 30 + FACT
    out, matched = best_window(page, SNIPPET, 100)
    assert matched and FACT in out and not out.startswith(title)


def test_a_title_still_matches_when_the_body_has_nothing() -> None:
    page = "Salt Under Lanterns\n" + "Unrelated words fill this part of the page. " * 30
    out, matched = best_window(page, SNIPPET, 50)
    assert matched and out.startswith("Salt Under Lanterns")


def test_snippet_fragments_split_by_ellipses_are_found_verbatim() -> None:
    long = "Among the ships " + "and the nets " * 30 + "the crews sang old songs at dawn."
    page = "Ships and songs\n" + "Other words here. " * 20 + long
    out, matched = best_window(page, "crews sang old songs at dawn ... nets", 40)
    assert matched and "the crews sang old songs at dawn." in out
