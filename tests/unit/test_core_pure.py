"""Markers, answer extraction, reasoning trimming, reader parsing and settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from search_o1 import markers as mk
from search_o1.answer import extract_answer, extract_boxed, extract_code
from search_o1.config import load_settings
from search_o1.errors import ConfigError
from search_o1.llm.base import normalise_stop
from search_o1.reader import parse_refined, trim_reasoning


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"first \boxed{1}, finally \boxed{2}", "2"),
        (r"\boxed{\text{Paris}}", "Paris"),
        (r"\boxed{\text{a} + \text{b}}", r"\text{a} + \text{b}"),
        (r"\boxed{x^{2}} then an unclosed \boxed{3", "x^{2}"),
        (r"\boxed{a\{b}", r"a\{b"),
        ("\\boxed{multi\nline}", "multi\nline"),
        ("nothing", None),
    ],
)
def test_extract_boxed(text: str, want: str | None) -> None:
    assert extract_boxed(text) == want


def test_extract_answer_by_task() -> None:
    assert extract_answer(r"\boxed{(B)}", "choice") == "B"
    assert extract_answer("```\nx=1\n```\n```python\nprint(2)\n```\n", "code") == "print(2)"
    assert extract_code("no code") is None


def test_last_between_takes_the_last_pair_and_tolerates_a_missing_end() -> None:
    text = f"{mk.BEGIN_QUERY}a{mk.END_QUERY} and {mk.BEGIN_QUERY} b "
    assert mk.last_between(text, mk.BEGIN_QUERY, mk.END_QUERY) == "b"
    assert mk.last_between("none", mk.BEGIN_QUERY, mk.END_QUERY) is None


@pytest.mark.parametrize("marker", mk.ALL_MARKERS)
def test_every_marker_is_neutralised(marker: str) -> None:
    out = mk.neutralise(f"x {marker} y {marker.upper()} < |{marker[2:-2]}| >")
    assert all(m not in out for m in mk.ALL_MARKERS)


def test_normalise_stop_shapes() -> None:
    stops = [mk.END_QUERY]
    assert normalise_stop("q" + mk.END_QUERY, "stop", stops) == ("q", mk.END_QUERY)
    assert normalise_stop("q", "stop", stops, server_stop=mk.END_QUERY) == ("q", mk.END_QUERY)
    assert normalise_stop("q", "length", stops) == ("q", None)


def test_trim_keeps_first_last_and_search_steps() -> None:
    lines = [f"s{i}" for i in range(1, 21)]
    lines[9] = f"{mk.BEGIN_RESULT}facts{mk.END_RESULT}"
    out = trim_reasoning("\n".join(lines)).split("\n")
    assert out[0] == "Step 1: s1"
    assert f"Step 10: {mk.BEGIN_RESULT}facts{mk.END_RESULT}" in out
    # The official script keeps its last four split parts, one of which is empty.
    assert out[-4:] == ["...", *(f"Step {i}: s{i}" for i in range(18, 21))]
    assert out.count("...") == 2


def test_trim_keeps_multi_line_queries_and_results_whole() -> None:
    facts = "Fact one: Jeunet directed it.\n\nFact two: he was born in Roanne."
    chain = (
        "First I think.\nMore thinking.\n"
        f"{mk.BEGIN_QUERY}director\nof Amelie{mk.END_QUERY}\n\n{mk.BEGIN_RESULT}\n{facts}\n"
        f"{mk.END_RESULT}\n\n" + "\n".join(f"middle {i}" for i in range(10)) + "\nlast"
    )
    out = trim_reasoning(chain)
    assert f"Step 3: {mk.BEGIN_QUERY}director\nof Amelie{mk.END_QUERY}" in out
    block = f"Step 4: {mk.BEGIN_RESULT}\nFact one: Jeunet directed it.\n"
    assert block + f"Fact two: he was born in Roanne.\n{mk.END_RESULT}" in out
    assert "middle 1\n" not in out and out.endswith(
        "...\nStep 13: middle 8\nStep 14: middle 9\nStep 15: last"
    )


def test_parse_refined_takes_the_last_heading() -> None:
    raw = "**Final Information** draft\n...\n**Final Information**\n\nKept."
    assert parse_refined(raw) == ("Kept.", True)
    assert parse_refined("**Final Information**\n") == ("No helpful information found.", True)


def test_settings_precedence_file_env_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "search-o1.toml"
    cfg.write_text('max_searches = 3\ntop_k = 4\nmodel = "from-file"\n')
    env = {"SEARCH_O1_TOP_K": "6", "SEARCH_O1_MODEL": "from-env"}
    s = load_settings({"model": "from-flag"}, config_file=cfg, environ=env)
    assert (s.max_searches, s.top_k, s.model) == (3, 6, "from-flag")


def test_bad_settings_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="top_k"):
        load_settings({"top_k": 0}, environ={})
    with pytest.raises(ConfigError, match="not found"):
        load_settings({}, config_file=tmp_path / "missing.toml", environ={})
    bad = tmp_path / "bad.toml"
    bad.write_text("= nope")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings({}, config_file=bad, environ={})
    with pytest.raises(ConfigError, match="unknown"):
        load_settings({"no_such_setting": 1}, environ={})
