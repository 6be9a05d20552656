"""The Python blocks of the README and of docs/ run as they are, in order, as a reader
would paste them (one namespace per file)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = sorted(p for p in (ROOT / "docs").glob("*.md") if BLOCK.search(p.read_text("utf-8")))
# Runs one file's blocks in a fresh interpreter: a doc may register methods or backends.
RUNNER = """
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
namespace = {"__name__": "__doc__"}
for i, code in enumerate(re.findall(r"^```python\\n(.*?)^```", text, re.S | re.M)):
    exec(compile(code, f"{sys.argv[1]} python block {i + 1}", "exec"), namespace)
"""


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("SEARCH_O1_")]:
        monkeypatch.delenv(name)


def test_readme_has_python_blocks() -> None:
    assert len(BLOCK.findall(README.read_text(encoding="utf-8"))) >= 2


def test_readme_python_blocks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # anything a block writes lands here
    _clean_env(monkeypatch)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for i, code in enumerate(BLOCK.findall(README.read_text(encoding="utf-8"))):
        exec(compile(code, f"README.md python block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Jean-Pierre Jeunet ('Amélie director',)")
    assert out[1] == "Jean-Pierre Jeunet ['Amélie director']"


def test_some_docs_have_python_blocks() -> None:
    assert ROOT / "docs" / "extending.md" in DOCS


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_python_blocks_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(doc)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
