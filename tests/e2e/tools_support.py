"""What the tools-mode CLI tests share: the installed command run as a subprocess over
a small multi-hop corpus with `--api-mode tools`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXE = Path(sys.executable).with_name("search-o1")
QUESTION = "Where was the designer of the Glimmer Bridge born?"
CORPUS = [
    {
        "id": "b1",
        "title": "Glimmer Bridge",
        "text": "The Glimmer Bridge was designed by Orla Venn.",
    },
    {"id": "p1", "title": "Orla Venn", "text": "Orla Venn was born in Tessaly in 1931."},
    {"id": "x2", "title": "Kelp", "text": "Kelp forests grow in cold coastal waters."},
]


def cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    env = {**os.environ, "SEARCH_O1_INDEX_CACHE": str(tmp / "idx")}
    env.pop("SEARCH_O1_BACKEND", None)
    command = [
        str(EXE),
        *args,
        "--api-mode",
        "tools",
        "--corpus",
        str(corpus),
        "--task",
        "multihop",
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp, timeout=120)
