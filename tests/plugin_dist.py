"""A third-party backend package made on disk, installed the way pip leaves one: a
module plus a `*.dist-info` folder whose entry_points.txt names the factories.

Put its folder on sys.path (or PYTHONPATH for a subprocess) and importlib.metadata finds
it exactly as it finds an installed plugin.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

MODULE = "search_o1_echo"

_SOURCE = textwrap.dedent(
    '''
    """An example plugin: a search backend whose every query returns one hit that
    repeats it, and a method that answers in a word."""

    from search_o1 import Method
    from search_o1.types import Hit


    class EchoSearch:
        name = "echo"

        def __init__(self, top_k):
            self.top_k = top_k

        @classmethod
        def from_settings(cls, settings):
            return cls(settings.top_k)

        async def search(self, query, *, k):
            return [Hit(id="echo-1", title="Echo", text=f"Echo heard: {query}.")][:k]

        async def aclose(self):
            return None


    def _terse(opening):
        return "Answer in one word. " + opening.prompts.task(opening.task, opening.question)


    TERSE = Method("terse", "answers in one word, no retrieval", _terse)
    '''
)


def make_plugin(root: Path, *, entry_points: str) -> Path:
    """Write the package under `root` with the given entry_points.txt; returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{MODULE}.py").write_text(_SOURCE, encoding="utf-8")
    info = root / f"{MODULE}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {MODULE}\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    return root


ECHO_ENTRY_POINTS = f"""\
[search_o1.search]
echo = {MODULE}:EchoSearch.from_settings
"""

METHOD_ENTRY_POINTS = f"""\
[search_o1.methods]
terse = {MODULE}:TERSE
misnamed = {MODULE}:TERSE
"""
