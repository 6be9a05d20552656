"""What the `ask` CLI tests share: the installed command, a small multi-hop corpus, a
scripted two-hop reasoning model (for the loopback OpenAI server) and a subprocess runner."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from search_o1 import markers as mk

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


def reasoning_model(body: dict[str, Any]) -> str:
    """A two-hop reasoner: designer -> birthplace, reading facts from result blocks."""
    prompt = body.get("prompt") or body["messages"][-1]["content"]
    if "**Current search query**" in prompt:  # Reason-in-Documents
        docs = prompt.split("**Search results**", 1)[1]
        first = re.search(r"\*\*Document 1\*\*: [^\n]*\n([^\n]+)", docs)
        return "Reading.\n**Final Information**\n\n" + (first.group(1) if first else "nothing")
    chain = prompt.rsplit("<|im_start|>assistant\n", 1)[-1]  # the chain, not the examples
    results = re.findall(
        re.escape(mk.BEGIN_RESULT) + r"\n(.*?)\n" + re.escape(mk.END_RESULT), chain, re.S
    )
    if not results:
        return f"First the designer. {mk.BEGIN_QUERY}Glimmer Bridge designer{mk.END_QUERY}"
    if len(results) == 1:
        who = re.search(r"designed by ([A-Z]\w+ [A-Z]\w+)", results[0])
        name = who.group(1) if who else "unknown"
        return f"Now where {name} was born. {mk.BEGIN_QUERY}{name} birthplace{mk.END_QUERY}"
    place = re.search(r"born in ([A-Z]\w+)", results[-1])
    return f"So the answer is \\boxed{{{place.group(1) if place else '?'}}}."


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
