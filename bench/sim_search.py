"""A simulated web search (search plus page fetches), in process, in scaled time.

Latency is log-normal per query (median `median_s` simulated seconds: a search API call
and fetching its pages), seeded by the query so both schedules see the same delays.
"""

from __future__ import annotations

import asyncio
import math

from bench.workload import filler, seeded_rng
from search_o1.types import Hit


class SimSearch:
    name = "sim"

    def __init__(
        self,
        *,
        time_scale: float,
        seed: int = 0,
        median_s: float = 2.0,
        sigma: float = 0.5,
        doc_tokens: int = 250,
    ) -> None:
        self.time_scale = time_scale
        self.seed = seed
        self.median_s = median_s
        self.sigma = sigma
        self.doc_tokens = doc_tokens
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def search(self, query: str, *, k: int) -> list[Hit]:
        rng = seeded_rng(self.seed, "search", query)
        delay = self.median_s * math.exp(rng.gauss(0.0, self.sigma))
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(delay / self.time_scale)
        finally:
            self.in_flight -= 1
        return [
            Hit(
                id=f"{query}/{i}",
                title=f"Page {i} about {query}",
                text=f"{query}. " + filler(rng, self.doc_tokens).replace("\n", " "),
                url=f"https://example.org/{abs(hash(query)) % 10**8}/{i}",
            )
            for i in range(k)
        ]

    async def aclose(self) -> None:
        return None
