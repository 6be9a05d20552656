"""What `ask` shows: each query once, readable labels for untitled passages; the demo's
seed and bounds apply unless the user gave a value; replay without a seed is flagged."""

from __future__ import annotations

import io
from pathlib import Path

import click
from click.testing import CliRunner
from rich.console import Console

from search_o1 import markers as mk
from search_o1.cli.demo import DEMO_SETTINGS, demo_settings
from search_o1.cli.live import LiveView, hit_label
from search_o1.cli.options import (
    GroupedCommand,
    replay_note,
    setting_options,
    settings_from_flags,
)
from search_o1.config import load_settings
from search_o1.types import Hit, SearchStarted, TextDelta


def shown(events: list[object]) -> str:
    out = io.StringIO()
    view = LiveView(Console(file=out, width=200, color_system=None))
    for event in events:
        view.on_event(event)  # type: ignore[arg-type]
    return out.getvalue()


def test_the_loading_spinner_runs_until_the_first_words() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    view = LiveView(console, loading=True)
    # While the spinner runs, anything printed is followed by the spinner drawn again.
    console.print("before")
    assert out.getvalue().rstrip().endswith("loading the model…")
    view.on_event(TextDelta("Thinking."))
    drawn = out.getvalue().count("loading the model")
    console.print("after")  # stopped: printing draws no spinner any more
    assert out.getvalue().count("loading the model") == drawn
    assert out.getvalue().rstrip().endswith("Thinking.after")


def test_a_query_is_printed_once_even_split_across_deltas() -> None:
    query = "Tosca composer birthplace"
    text = shown(
        [
            TextDelta("I should look this up. <|begin_se"),
            TextDelta("arch_query|>Tosca composer"),
            TextDelta(f" birthplace{mk.END_QUERY}"),
            SearchStarted(query),
        ]
    )
    assert text.count("Tosca composer") == 1 and "search: " + query in text
    assert "<|" not in text and "I should look this up." in text


def test_a_forced_first_query_is_printed_once() -> None:
    text = shown(
        [TextDelta(mk.BEGIN_QUERY, inserted=True), TextDelta("Tosca"), SearchStarted("Tosca")]
    )
    assert text.count("Tosca") == 1


def test_an_untitled_passage_gets_a_readable_label() -> None:
    assert hit_label(Hit("9", "  ", "Puccini  was born\nin Lucca.")) == "Puccini was born in Lucca."
    assert hit_label(Hit("9", "", "")) == "(passage 9)"
    assert hit_label(Hit("9", "Tosca", "x")) == "Tosca"


def test_demo_is_seeded_and_bounded_unless_the_user_says_otherwise() -> None:
    s = demo_settings(load_settings({"top_k": 7}, environ={"SEARCH_O1_SEED": "5"}))
    assert (s.top_k, s.seed) == (7, 5)
    assert s.max_doc_chars == DEMO_SETTINGS["max_doc_chars"]
    assert demo_settings(load_settings(environ={})).seed == 0


def test_replay_without_a_seed_is_flagged() -> None:
    @click.command(cls=GroupedCommand)
    @setting_options
    def probe(config_file: Path | None, **flags: object) -> None:
        replay_note(settings_from_flags(config_file, dict(flags)))

    unseeded = CliRunner().invoke(probe, ["--cache", "replay"], env={})
    seeded = CliRunner().invoke(probe, ["--cache", "replay", "--seed", "3"], env={})
    assert "replay repeats a run only with that run's --seed; none was set" in unseeded.stderr
    assert seeded.stderr == ""
