"""The README's Python blocks run as they are, in order, as a reader would paste them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_readme_has_python_blocks() -> None:
    assert len(BLOCK.findall(README.read_text(encoding="utf-8"))) >= 2


def test_readme_python_blocks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # anything a block writes lands here
    for name in [k for k in os.environ if k.startswith("SEARCH_O1_")]:
        monkeypatch.delenv(name)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for i, code in enumerate(BLOCK.findall(README.read_text(encoding="utf-8"))):
        exec(compile(code, f"README.md python block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Jean-Pierre Jeunet ('Amélie director',)")
    assert out[1] == "Jean-Pierre Jeunet ['Amélie director']"
