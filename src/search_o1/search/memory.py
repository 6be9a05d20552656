"""An in-memory search backend for tests: a dict of query -> hits, or a function."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from search_o1.types import Hit


class MemorySearch:
    """Answers from a mapping (exact query, then case-insensitive) or a callable.

    Every query is recorded in `queries`, so tests can assert what was searched.
    """

    name = "memory"

    def __init__(
        self, results: Mapping[str, Sequence[Hit]] | Callable[[str], Sequence[Hit]]
    ) -> None:
        self._results = results
        self.queries: list[str] = []

    async def search(self, query: str, *, k: int) -> list[Hit]:
        self.queries.append(query)
        if callable(self._results):
            return list(self._results(query))[:k]
        hits = self._results.get(query)
        if hits is None:
            lowered = {q.lower(): h for q, h in self._results.items()}
            hits = lowered.get(query.lower(), [])
        return list(hits)[:k]

    async def aclose(self) -> None:
        return None
