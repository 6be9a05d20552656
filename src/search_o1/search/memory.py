"""An in-memory search backend for tests: a dict of query -> hits, or a function.

From the command line (`--search memory`) it answers from a JSON file named by
`--corpus`: an object mapping each query to a list of hits (objects with the fields of
`Hit`; `id` and `title` required). Without `--corpus` every query has no hits, which
is what a run that only exercises the model needs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from search_o1.errors import ConfigError, InputFileError
from search_o1.types import Hit

_HIT_FIELDS = frozenset(f.name for f in dataclasses.fields(Hit))
# A hit as MemorySearch takes it: a Hit, or a dict shaped like the JSON hits format.
RawHit = Hit | Mapping[str, Any]


def as_hit(raw: RawHit, query: str) -> Hit:
    """A Hit, or one made from a dict with Hit's fields (`id` and `title` required)."""
    if isinstance(raw, Hit):
        return raw
    problem = _hit_problem(raw)
    if problem:
        raise ConfigError(f"memory search: a hit of {query!r} {problem}")
    return Hit(**{**raw, "id": str(raw["id"]), "title": str(raw["title"])})


def _hit_problem(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        return f"is a {type(raw).__name__}, not a Hit or a dict"
    if not {"id", "title"} <= raw.keys():
        return "lacks 'id' or 'title'"
    unknown = raw.keys() - _HIT_FIELDS
    return f"has unknown fields {sorted(unknown)}" if unknown else None


class MemorySearch:
    """Answers from a mapping (exact query, then case-insensitive) or a callable.

    Every query is recorded in `queries`, so tests can assert what was searched.
    """

    name = "memory"

    def __init__(
        self, results: Mapping[str, Sequence[RawHit]] | Callable[[str], Sequence[RawHit]]
    ) -> None:
        """`results` maps a query to its hits, or is a function of the query; a hit is a
        Hit or a dict with Hit's fields (the JSON hits format), checked here for a
        mapping and at each search for a function (ConfigError when malformed)."""
        self._results: Mapping[str, Sequence[Hit]] | Callable[[str], Sequence[RawHit]]
        if callable(results):
            self._results = results
        else:
            self._results = {q: [as_hit(h, q) for h in hits] for q, hits in results.items()}
        self.queries: list[str] = []

    async def search(self, query: str, *, k: int) -> list[Hit]:
        self.queries.append(query)
        if callable(self._results):
            return [as_hit(h, query) for h in self._results(query)][:k]
        hits = self._results.get(query)
        if hits is None:
            lowered = {q.lower(): h for q, h in self._results.items()}
            hits = lowered.get(query.lower(), [])
        return list(hits)[:k]

    async def aclose(self) -> None:
        return None


def load_hits(path: Path) -> dict[str, list[Hit]]:
    """`{"query": [{"id": ..., "title": ..., ...}, ...]}` from a JSON file, checked."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(str(path), "file not found") from None
    except IsADirectoryError:
        raise InputFileError(
            str(path), "is a folder; memory search reads one JSON file of {query: [hits]}"
        ) from None
    except OSError as e:
        raise InputFileError(str(path), f"unreadable ({e.strerror or e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputFileError(str(path), f"not a JSON file ({type(e).__name__})") from None
    if not isinstance(data, dict):
        raise InputFileError(str(path), "expected an object mapping queries to lists of hits")
    return {str(q): [_hit(path, q, h) for h in _as_list(path, q, hits)] for q, hits in data.items()}


def _as_list(path: Path, query: str, hits: Any) -> list[Any]:
    if not isinstance(hits, list):
        raise InputFileError(str(path), f"hits of {query!r} are not a list")
    return hits


def _hit(path: Path, query: str, raw: Any) -> Hit:
    problem = "lacks 'id' or 'title'" if not isinstance(raw, dict) else _hit_problem(raw)
    if problem:
        raise InputFileError(str(path), f"a hit of {query!r} {problem}")
    return as_hit(raw, query)
