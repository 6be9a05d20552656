"""Many questions at once: continuous ("async", the default) or the paper's lock-step rounds.

- async: every question advances the moment its own step is done. Bounded by the number of
  questions in flight (`concurrency`) and per resource: model requests in flight (chain
  generations and reader calls share one limit) and searches in flight (each with its
  document reads; page fetches are further bounded, globally and per host, by the fetcher).
- rounds: Algorithm 1 of the paper. Every unfinished chain generates; when all have
  stopped, every chain that asked runs its search; then every reader call; then the next
  round. Each stage waits for its slowest chain. With `concurrency` below the number of
  jobs, jobs run in successive batches of that size (the paper runs them all as one).

Both share the engine's single loop: the scheduler hands each run a `gate` that the
engine enters around every generation, search and reader call.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

from search_o1.engine import Engine, Phase, PhaseGate
from search_o1.tasks import TaskKind
from search_o1.types import Trace

Schedule = Literal["async", "rounds"]
SCHEDULES: tuple[str, ...] = ("async", "rounds")
_PHASES: tuple[Phase, ...] = ("generate", "search", "read")


@dataclass(frozen=True)
class Job:
    id: str
    question: str
    task: TaskKind
    method: str = "search-o1"


ResultSink = Callable[[Job, Trace], Awaitable[None] | None]


class _Limits:
    """One semaphore per bounded resource; a phase takes a slot for as long as it runs."""

    def __init__(self, llm: int | None, search: int | None) -> None:
        self.llm = None if llm is None else asyncio.Semaphore(max(1, llm))
        self.search = None if search is None else asyncio.Semaphore(max(1, search))

    def slot(self, phase: Phase) -> AbstractAsyncContextManager[Any]:
        slot = self.search if phase == "search" else self.llm
        return contextlib.nullcontext() if slot is None else slot


class RoundBarrier:
    """Lock-step stages for a fixed set of members (one per chain).

    Stage numbers run round by round: 3r (generate), 3r + 1 (search), 3r + 2 (read). A
    member's progress is the stage it is in or waiting for (-1 before its first). A stage
    opens when no member still in the batch is behind it, so a chain that does not search
    this round simply waits at the next round's generation; a finished chain `leave`s.
    """

    def __init__(self, members: Iterable[str]) -> None:
        self._progress: dict[str, int] = dict.fromkeys(members, -1)
        self._counts: Counter[int] = Counter(self._progress.values())
        self._open: dict[int, asyncio.Event] = {}
        self._low = -1 if self._progress else 1 << 62

    async def arrive(self, member: str, phase: Phase) -> None:
        """Wait until every member has finished all stages before `phase` in this round."""
        current = self._progress[member]
        index = _PHASES.index(phase)
        stage = max(current, 0) // 3 * 3 + index
        if stage <= current:
            stage += 3
        self._move(member, stage)
        if stage > self._low:
            await self._open.setdefault(stage, asyncio.Event()).wait()

    def leave(self, member: str) -> None:
        self._move(member, None)

    def _move(self, member: str, stage: int | None) -> None:
        old = self._progress.pop(member)
        self._counts[old] -= 1
        if not self._counts[old]:
            del self._counts[old]
        if stage is not None:
            self._progress[member] = stage
            self._counts[stage] += 1
        # Only a move of the last laggard can open anything; the set of distinct stages
        # held is at most a few, so min() is cheap.
        if old == self._low and old not in self._counts:
            self._low = min(self._counts, default=1 << 62)
            for opened in [s for s in self._open if s <= self._low]:
                self._open.pop(opened).set()


def make_gate(limits: _Limits, barrier: RoundBarrier | None, member: str) -> PhaseGate:
    @asynccontextmanager
    async def gate(phase: Phase) -> AsyncIterator[None]:
        if barrier is not None:
            await barrier.arrive(member, phase)
        async with limits.slot(phase):
            yield

    return gate


async def run_all(
    engine: Engine,
    jobs: Iterable[Job],
    *,
    concurrency: int,
    on_result: ResultSink,
    schedule: str = "async",
    llm_limit: int | None = None,
    search_limit: int | None = None,
) -> None:
    """Run every job; `on_result` is called as each one finishes (in finishing order).

    `concurrency`: questions in flight (in rounds: the batch size). `llm_limit` and
    `search_limit` bound model requests and searches in flight across all questions
    (None: no bound beyond the questions in flight; the settings give both).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; known: {', '.join(SCHEDULES)}")
    limits = _Limits(llm_limit, search_limit)
    if schedule == "rounds":
        iterator = iter(jobs)
        while batch := list(islice(iterator, max(1, concurrency))):
            await _run_rounds(engine, batch, limits, on_result)
    else:
        await _run_continuous(engine, jobs, limits, max(1, concurrency), on_result)


async def _deliver(sink: ResultSink, job: Job, trace: Trace) -> None:
    done = sink(job, trace)
    if inspect.isawaitable(done):
        await done


async def _run_continuous(
    engine: Engine, jobs: Iterable[Job], limits: _Limits, concurrency: int, sink: ResultSink
) -> None:
    # Jobs are taken lazily: a slot is held before a task exists, so a long job list
    # costs no memory until its questions actually start.
    slots = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> None:
        try:
            gate = make_gate(limits, None, job.id)
            trace = await engine.run(job.question, task=job.task, method=job.method, gate=gate)
            await _deliver(sink, job, trace)
        finally:
            slots.release()

    async with asyncio.TaskGroup() as group:
        for job in jobs:
            await slots.acquire()
            group.create_task(one(job))


async def _run_rounds(engine: Engine, batch: list[Job], limits: _Limits, sink: ResultSink) -> None:
    # Members are keyed by position: job ids need not be unique.
    keys = [str(i) for i in range(len(batch))]
    barrier = RoundBarrier(keys)

    async def one(key: str, job: Job) -> None:
        gate = make_gate(limits, barrier, key)
        try:
            trace = await engine.run(job.question, task=job.task, method=job.method, gate=gate)
        finally:
            barrier.leave(key)  # a finished (or failed) chain must not hold the others
        await _deliver(sink, job, trace)

    async with asyncio.TaskGroup() as group:
        for key, job in zip(keys, batch, strict=True):
            group.create_task(one(key, job))
