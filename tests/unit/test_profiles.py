"""Profiles and per-dataset values: what fills the settings nobody gave."""

from __future__ import annotations

import doctest

from search_o1 import profiles
from search_o1.config import load_settings
from search_o1.pipeline import engine_options
from search_o1.profiles import resolve


def settings(**given: object):  # type: ignore[no-untyped-def]
    return load_settings({"base_url": "http://x/v1", **given}, environ={})


def test_doctests() -> None:
    result = doctest.testmod(profiles)
    assert result.failed == 0 and result.attempted > 0


def test_ours_fills_only_the_per_dataset_values() -> None:
    s = resolve(settings(), dataset="hotpotqa", task="multihop", method="search-o1")
    assert (s.max_call_tokens, s.max_searches, s.max_turns, s.top_k) == (20480, 10, 15, 10)
    assert s.repeated_query == "reuse" and s.max_page_chars == 50_000 and s.page_chars is None
    assert s.repetition_penalty == 1.05


def test_paper_profile_values_and_model_rows() -> None:
    s = resolve(settings(profile="paper"), dataset="nq", task="qa", method="rag-agent")
    assert (s.max_call_tokens, s.max_searches, s.max_turns, s.top_k) == (20480, 5, 10, 5)
    assert (s.repeated_query, s.max_page_chars, s.page_chars) == ("notice", 8000, 8000)
    other = resolve(settings(profile="paper", paper_model="other"), dataset="aime24", task="math")
    assert other.max_call_tokens == 8192 and other.repetition_penalty == 1.0


def test_given_values_win_and_resolving_twice_changes_nothing() -> None:
    given = settings(profile="paper", max_call_tokens=100, top_k=7, repeated_query="reuse")
    s = resolve(given, dataset="nq", task="qa", method="rag-agent")
    assert (s.max_call_tokens, s.top_k, s.repeated_query, s.max_searches) == (100, 7, "reuse", 5)
    once = resolve(settings(), dataset="aime24", task="math", method="direct")
    assert resolve(once) == once and once.max_call_tokens == 32768


def test_engine_options_outside_eval() -> None:
    options = engine_options(settings())
    assert options.limits.max_call_tokens == 32768 and options.limits.max_total_tokens is None
    assert options.reader.max_call_tokens is None  # the main model's per-call limit
    budget = engine_options(settings(max_total_tokens=5000, reader_max_call_tokens=900))
    assert budget.limits.max_total_tokens == 5000 and budget.reader.max_call_tokens == 900


def test_paper_baselines_send_32768_tokens_for_any_model_and_set() -> None:
    for model in ("qwq", "other"):
        for dataset, task in (("nq", "qa"), ("math500", "math"), ("gpqa", "choice")):
            for method in ("direct", "rag"):
                s = resolve(
                    settings(profile="paper", paper_model=model),
                    dataset=dataset,
                    task=task,
                    method=method,
                )
                assert s.max_call_tokens == 32768, (model, dataset, method)
    # search-o1 and rag-agent keep the per-dataset values; ours keeps them for all.
    s = resolve(settings(profile="paper"), dataset="nq", task="qa", method="search-o1")
    assert s.max_call_tokens == 20480
    s = resolve(settings(paper_model="other"), dataset="nq", task="qa", method="direct")
    assert s.max_call_tokens == 8192


def test_rag_agent_has_ten_turns_everywhere_and_paper_never_forces_a_search() -> None:
    for dataset, task in (("gpqa", "choice"), ("aime24", "math"), ("hotpotqa", "multihop")):
        s = resolve(settings(profile="paper"), dataset=dataset, task=task, method="rag-agent")
        assert (s.max_turns, s.max_searches) == (10, 5)
    embedded = settings(profile="paper", backend="embedded")
    assert engine_options(embedded).force_search is False
    assert engine_options(settings(backend="embedded")).force_search is True
    forced = settings(profile="paper", backend="embedded", force_search=True)
    assert engine_options(forced).force_search is True


def test_the_paper_profile_reader_uses_the_papers_steps_and_parse() -> None:
    assert engine_options(settings(profile="paper")).reader.paper is True
    assert engine_options(settings()).reader.paper is False
