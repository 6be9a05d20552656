"""One LLM over several equivalent model servers (one per --base-url).

Routing, per request:
- a chain's first request goes to the healthy endpoint with the fewest requests in flight;
- its continuations stay on that endpoint (prefix affinity: that replica holds the chain's
  prefix in its KV cache), unless it is down or far more loaded than the least loaded;
- an endpoint that fails with a retryable error (connection refused, 429, 5xx) is taken
  out for a back-off period from the package's RetryPolicy (doubling with each
  consecutive failure), and the request is retried on another endpoint at once.

A chain is recognised by its `Prompt.messages`, which never change within a chain; only
their hash is kept, in a bounded table, so finished chains cost nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from search_o1._http import RetryPolicy
from search_o1.errors import BackendError, ConfigError, ContextOverflowError
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.llm.tools import ToolLLM, ToolRequest
from search_o1.tool_chat import ToolReply
from search_o1.types import Completion, TextSink

R = TypeVar("R")
log = logging.getLogger(__name__)

_AFFINITY_ENTRIES = 1 << 16


@dataclass
class Endpoint:
    """One backend and what the pool knows about it."""

    llm: LLM
    label: str
    outstanding: int = 0
    sent: int = 0
    failures: int = 0  # consecutive
    down_until: float = 0.0

    def up(self, now: float) -> bool:
        return now >= self.down_until


class PoolLLM:
    """Routes requests over `backends` (equivalent servers) with prefix affinity.

    `affinity=False` gives plain least-loaded routing (the benchmark's comparison).
    `imbalance`, `min_gap`: a chain leaves its endpoint when that one has more than
    `imbalance` x the least outstanding requests in flight and `min_gap` more.
    `retry` (default: `retries` with a 1 s base back-off) sets how long a failed
    endpoint stays out and how many extra attempts a request gets.
    """

    name = "pool"

    def __init__(
        self,
        backends: Sequence[LLM],
        *,
        labels: Sequence[str] | None = None,
        affinity: bool = True,
        imbalance: float = 2.0,
        min_gap: int = 16,
        retries: int = 4,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not backends:
            raise ValueError("PoolLLM needs at least one backend")
        names = list(labels) if labels else [f"{b.name}#{i}" for i, b in enumerate(backends)]
        self.endpoints = [Endpoint(b, n) for b, n in zip(backends, names, strict=True)]
        self.affinity = affinity
        self.imbalance = imbalance
        self.min_gap = min_gap
        self.retry = retry or RetryPolicy(retries=max(0, retries), backoff_s=1.0)
        self._chains: OrderedDict[int, int] = OrderedDict()  # hash(messages) -> endpoint
        self._next = 0  # rotates ties so equal loads spread
        self._context: int | None = None
        self._context_known = False

    # ---- the LLM protocol ----------------------------------------------------------------

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        prompt = request.prompt
        return await self._route(
            hash(prompt.messages),
            bool(prompt.continuation),
            lambda llm: llm.complete(request, on_text=on_text),
        )

    async def converse(
        self,
        request: ToolRequest,
        *,
        on_text: TextSink | None = None,
        on_reasoning: TextSink | None = None,
    ) -> ToolReply:
        """Tools mode: a conversation is recognised by its first message, like a chain."""

        async def call(llm: LLM) -> ToolReply:
            if not isinstance(llm, ToolLLM):
                raise ConfigError(f"{llm.name!r} cannot call tools (--api-mode tools)")
            return await llm.converse(request, on_text=on_text, on_reasoning=on_reasoning)

        first = request.messages[0] if request.messages else None
        key = hash((first.role, first.content) if first is not None else None)
        return await self._route(key, len(request.messages) > 1, call)

    async def _route(self, key: int, continuing: bool, call: Callable[[LLM], Awaitable[R]]) -> R:
        # Each endpoint may be tried once more than the retries allow, so one dead server
        # among many never exhausts a request's attempts.
        attempts = len(self.endpoints) + self.retry.retries
        for attempt in range(attempts):
            index = await self._choose(key, continuing=continuing)
            endpoint = self.endpoints[index]
            endpoint.outstanding += 1
            endpoint.sent += 1
            try:
                completion = await call(endpoint.llm)
            except BackendError as e:
                if not _fails_endpoint(e) or attempt == attempts - 1:
                    raise
                self._mark_down(endpoint)
                continue
            finally:
                endpoint.outstanding -= 1
            endpoint.failures = 0
            self._remember(key, index)
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    async def context_length(self) -> int | None:
        """The servers' context window, asked of all of them once (replicas serve the same
        model). When none answers, one line says why for each (a run's preflight then
        stops in seconds, not item by item); when some do not, a warning names them."""
        if self._context_known:
            return self._context
        asked = await asyncio.gather(
            *(e.llm.context_length() for e in self.endpoints), return_exceptions=True
        )
        down = [(e, a) for e, a in zip(self.endpoints, asked, strict=True) if _failed(a)]
        answers = [a for a in asked if not isinstance(a, BaseException)]
        for answer in asked:
            if isinstance(answer, BaseException) and not isinstance(answer, BackendError):
                raise answer  # a fault of ours or a cancellation, not a server's
        causes = "; ".join(f"{e.label}: {_cause(a)}" for e, a in down)
        if len(down) == len(self.endpoints):
            raise BackendError("pool", f"no model server answers ({causes})")
        if down:
            log.warning("%d of %d model servers answer; not: %s", len(answers), len(asked), causes)
        self._context = next((a for a in answers if a is not None), None)
        self._context_known = True
        return self._context

    async def aclose(self) -> None:
        for endpoint in self.endpoints:
            await endpoint.llm.aclose()

    # ---- routing -------------------------------------------------------------------------

    async def _choose(self, key: int, *, continuing: bool) -> int:
        now = time.monotonic()
        healthy = [i for i, e in enumerate(self.endpoints) if e.up(now)]
        if not healthy:
            # Everything is down: wait for the first to come back rather than fail.
            soonest = min(range(len(self.endpoints)), key=lambda i: self.endpoints[i].down_until)
            await self.retry.sleep(max(0.0, self.endpoints[soonest].down_until - now))
            return soonest
        least = self._least_loaded(healthy)
        if self.affinity and continuing:
            sticky = self._chains.get(key)
            if sticky is not None and sticky in healthy and not self._overloaded(sticky, least):
                return sticky
        return least

    def _least_loaded(self, healthy: list[int]) -> int:
        low = min(self.endpoints[i].outstanding for i in healthy)
        tied = [i for i in healthy if self.endpoints[i].outstanding == low]
        self._next += 1
        return tied[self._next % len(tied)]

    def _overloaded(self, index: int, least: int) -> bool:
        # Both a ratio and a gap: at small loads a recomputed prefix costs more than
        # waiting behind a few requests.
        load, low = self.endpoints[index].outstanding, self.endpoints[least].outstanding
        return load > self.imbalance * low and load - low > self.min_gap

    def _remember(self, key: int, index: int) -> None:
        if not self.affinity:
            return
        self._chains[key] = index
        self._chains.move_to_end(key)
        if len(self._chains) > _AFFINITY_ENTRIES:
            self._chains.popitem(last=False)

    def _mark_down(self, endpoint: Endpoint) -> None:
        endpoint.failures += 1
        delay = self.retry.delay(endpoint.failures - 1, None)
        endpoint.down_until = time.monotonic() + delay

    def stats(self) -> list[dict[str, object]]:
        """Per endpoint: requests sent, in flight, consecutive failures, whether up."""
        now = time.monotonic()
        return [
            {
                "endpoint": e.label,
                "sent": e.sent,
                "outstanding": e.outstanding,
                "failures": e.failures,
                "up": e.up(now),
            }
            for e in self.endpoints
        ]


def _fails_endpoint(error: BackendError) -> bool:
    """Errors that say the server (not the request) is the problem."""
    return error.retryable and not isinstance(error, ContextOverflowError)


def _failed(answer: object) -> bool:
    return isinstance(answer, BackendError)


def _cause(error: object) -> str:
    """A server's failure without the backend prefix (the pool's line names it once)."""
    text = str(error)
    backend = getattr(error, "backend", "")
    return text.removeprefix(f"{backend}: ") if backend else text
