"""What the `ask` CLI tests share: the installed command, a small multi-hop corpus, the
loopback model's flags and a subprocess runner (the two-hop reasoner is tests.two_hop's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXE = Path(sys.executable).with_name("search-o1")

CORPUS = [
    {
        "id": "b1",
        "title": "Glimmer Bridge",
        "text": "The Glimmer Bridge was designed by Orla Venn.",
    },
    {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly in 1931."},
    {"id": "x1", "title": "Tessaly", "text": "Tessaly is a river town known for its bridges."},
    {"id": "x2", "title": "Kelp", "text": "Kelp forests grow in cold coastal waters."},
]


def model_flags(url: str, corpus: Path | None = None) -> list[str]:
    """The flags that point a CLI command at the loopback model (chatml, the multi-hop
    task), and at a local corpus when one is given."""
    flags = ["--base-url", url, "--model", "fake-model", "--chat-template", "chatml"]
    flags += ["--task", "multihop"]
    return flags if corpus is None else [*flags, "--corpus", str(corpus)]


def run_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp_path / "idx")}
    env.pop("SEARCH_O1_BACKEND", None)
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
