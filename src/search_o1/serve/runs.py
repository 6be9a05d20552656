"""Runs in flight: admission (a concurrency limit with a small queue) and cancellation.

A request is admitted or refused at once (429, before any response starts), then waits
in the queue for a running slot. Each run is an asyncio task that feeds the engine's
events into a queue the HTTP side reads; cancelling the task cancels the model request
it is awaiting, so a client that leaves leaves no orphaned work behind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from search_o1.engine import Engine
from search_o1.errors import QueueFull
from search_o1.types import Event, Trace


@dataclass
class Stats:
    """Counters for /health and for tests that check no run was orphaned."""

    running: int = 0
    queued: int = 0
    started: int = 0
    finished: int = 0
    cancelled: int = 0
    refused: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class Limiter:
    """At most `max_running` runs at once and `max_queued` more waiting; beyond, refuse."""

    def __init__(self, max_running: int, max_queued: int) -> None:
        if max_running < 1 or max_queued < 0:
            raise ValueError("max_running must be >= 1 and max_queued >= 0")
        self.max_running = max_running
        self.max_queued = max_queued
        self.stats = Stats()
        self._slots = asyncio.Semaphore(max_running)
        self._admitted = 0

    def admit(self) -> Ticket:
        """A place in line, or QueueFull. Synchronous: no await between check and take."""
        if self._admitted >= self.max_running + self.max_queued:
            self.stats.refused += 1
            raise QueueFull
        self._admitted += 1
        self.stats.queued += 1
        return Ticket(self)


class Ticket:
    """One admitted request: `async with ticket` waits for a slot and frees it after.

    `release()` (idempotent) gives the place back when the run never started.
    """

    def __init__(self, limiter: Limiter) -> None:
        self._limiter = limiter
        self._waiting = True
        self._running = False
        self.queued_s = 0.0

    async def __aenter__(self) -> Ticket:
        start = time.perf_counter()
        await self._limiter._slots.acquire()
        self.queued_s = time.perf_counter() - start
        self._leave_queue()
        self._running = True
        self._limiter.stats.running += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def _leave_queue(self) -> None:
        if self._waiting:
            self._waiting = False
            self._limiter.stats.queued -= 1

    def release(self) -> None:
        if self._running:
            self._running = False
            self._limiter.stats.running -= 1
            self._limiter._slots.release()
            self._limiter._admitted -= 1
        elif self._waiting:
            self._leave_queue()
            self._limiter._admitted -= 1


_END = object()  # put in the event queue when the run task ends, however it ends


class Run:
    """One question running as a task; read its events with `events()`."""

    def __init__(
        self,
        engine: Engine,
        question: str,
        *,
        ticket: Ticket,
        registry: set[Run],
        task: Any = None,
        method: str = "search-o1",
    ) -> None:
        self.ticket = ticket
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._registry = registry
        self._stats = ticket._limiter.stats
        self.task: asyncio.Task[Trace] = asyncio.create_task(
            self._main(engine, question, task, method)
        )
        # A done-callback, not `finally`: a task cancelled before its first step never
        # enters the coroutine body, and its place in line must still be given back.
        self.task.add_done_callback(self._done)
        registry.add(self)

    async def _main(self, engine: Engine, question: str, task: Any, method: str) -> Trace:
        async with self.ticket:
            self._stats.started += 1
            return await engine.run(
                question, task=task, method=method, on_event=self._queue.put_nowait
            )

    def _done(self, task: asyncio.Task[Trace]) -> None:
        if task.cancelled():
            self._stats.cancelled += 1
        else:
            self._stats.finished += 1
        self.ticket.release()
        self._registry.discard(self)
        self._queue.put_nowait(_END)

    async def events(self) -> AsyncIterator[Event]:
        """Engine events as they happen, until the run ends."""
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            event: Event = item
            yield event

    def cancel(self) -> None:
        self.task.cancel()

    async def result(self) -> Trace:
        """The trace; re-raises what the engine raised (e.g. ConfigError)."""
        return await self.task


async def cancel_all(runs: set[Run], *, grace_s: float = 0.0) -> None:
    """Shutdown: give runs `grace_s` to finish, then cancel the rest and wait for them."""
    pending = {r.task for r in runs}
    if pending and grace_s > 0:
        _, pending = await asyncio.wait(pending, timeout=grace_s)
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
