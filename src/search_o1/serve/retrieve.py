"""`POST /retrieve`: the Search-R1/FlashRAG retriever protocol over the served search backend.

Request: {"queries": ["q1", ...], "topk": k, "return_scores": true}
Response: {"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}, one list
per query in order; without return_scores each list holds the documents themselves.
`contents` is "Title\\ntext", as FlashRAG's corpora store it, so one index can serve
many training or evaluation workers (and search-o1's own `retriever` backend).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from search_o1.search.base import Search
from search_o1.serve.chat_completions import WireError
from search_o1.types import Hit

DEFAULT_TOPK = 3  # Search-R1's default
MAX_TOPK = 100
MAX_QUERIES = 256


@dataclass(frozen=True)
class RetrieveRequest:
    queries: list[str]
    topk: int = DEFAULT_TOPK
    return_scores: bool = False


def parse_retrieve(body: Any) -> RetrieveRequest:
    """Validate a /retrieve body; raises WireError(400)."""
    if not isinstance(body, dict):
        raise WireError(400, "the request body must be a JSON object")
    queries = body.get("queries")
    if isinstance(queries, str):
        queries = [queries]  # a lone string is a common client slip; accept it
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise WireError(400, "queries must be a list of strings", param="queries")
    if len(queries) > MAX_QUERIES:
        raise WireError(400, f"at most {MAX_QUERIES} queries per request", param="queries")
    topk = body.get("topk", DEFAULT_TOPK)
    if isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= MAX_TOPK:
        raise WireError(400, f"topk must be an integer from 1 to {MAX_TOPK}", param="topk")
    return_scores = body.get("return_scores", False)
    if not isinstance(return_scores, bool):
        raise WireError(400, "return_scores must be a boolean", param="return_scores")
    return RetrieveRequest(queries, topk, return_scores)


def document(hit: Hit) -> dict[str, Any]:
    """A hit as a FlashRAG document; web hits without text contribute their snippet."""
    doc: dict[str, Any] = {"id": hit.id, "contents": f"{hit.title}\n{hit.text or hit.snippet}"}
    if hit.url:
        doc["url"] = hit.url
    return doc


async def retrieve(search: Search, request: RetrieveRequest) -> dict[str, Any]:
    """Run every query (concurrently) and shape the answer in the protocol."""
    groups = await asyncio.gather(*(search.search(q, k=request.topk) for q in request.queries))
    result: list[list[dict[str, Any]]] = []
    for hits in groups:
        if request.return_scores:
            result.append([{"document": document(h), "score": h.score or 0.0} for h in hits])
        else:
            result.append([document(h) for h in hits])
    return {"result": result}
