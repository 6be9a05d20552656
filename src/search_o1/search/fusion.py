"""Several backends as one (`--search bm25,serper`), merged by reciprocal-rank fusion.

RRF (Cormack et al. 2009): a hit's score is the sum over backends of 1/(K + rank), so a
page near the top of two lists beats one at the top of a single list, and backends
whose raw scores are on different scales (BM25 vs. a web engine's order) mix fairly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence

from search_o1.errors import BackendError
from search_o1.search.base import Search
from search_o1.types import Hit

__all__ = ["FusedSearch", "reciprocal_rank_fusion"]

log = logging.getLogger(__name__)
RRF_K = 60  # the constant from the RRF paper; dampens the weight of the very top ranks


def _identity(hit: Hit) -> str:
    # Web hits meet by URL. Corpus passages have none: bm25 and dense over one corpus name
    # a passage by the same id and title, so they meet by both; the title keeps passages
    # of two different corpora that reuse ids ("0", "1", ...) apart.
    return hit.url or f"passage:{hit.id}\n{hit.title}"


def reciprocal_rank_fusion(lists: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Merge ranked lists; ties keep first-seen order. The result's `score` is the RRF sum.

    >>> a, b, c = (Hit(id=x, title=x, url=f"u/{x}") for x in "abc")
    >>> [h.id for h in reciprocal_rank_fusion([[a, b], [b, c]], 3)]
    ['b', 'a', 'c']
    >>> bm25 = Hit(id="7", title="Tosca", source="bm25")
    >>> len(reciprocal_rank_fusion([[bm25], [dataclasses.replace(bm25, source="dense")]], 10))
    1
    """
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for hits in lists:
        for rank, hit in enumerate(hits, start=1):
            key = _identity(hit)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    order = sorted(scores, key=lambda key: -scores[key])  # sorted() is stable
    return [dataclasses.replace(first[key], score=scores[key]) for key in order[:k]]


class FusedSearch:
    """Queries every backend concurrently and fuses their lists.

    One failing backend does not sink the search: its error is logged and the others'
    hits are used. Only when every backend fails is the first error raised.
    """

    def __init__(self, backends: Sequence[Search]) -> None:
        if not backends:
            raise ValueError("FusedSearch needs at least one backend")
        self.backends = list(backends)
        self.name = "+".join(b.name for b in self.backends)

    async def search(self, query: str, *, k: int) -> list[Hit]:
        results = await asyncio.gather(
            *(b.search(query, k=k) for b in self.backends), return_exceptions=True
        )
        lists: list[list[Hit]] = []
        errors: list[BaseException] = []
        for backend, result in zip(self.backends, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result  # cancellation and the like are not search failures
                log.warning("search backend %s failed: %s", backend.name, result)
                errors.append(result)
            else:
                lists.append(result)
        if errors and not lists:
            first = errors[0]
            if isinstance(first, BackendError):
                raise first
            raise BackendError(self.name, f"all backends failed: {first}") from first
        return reciprocal_rank_fusion(lists, k)

    async def aclose(self) -> None:
        for backend in self.backends:
            await backend.aclose()
