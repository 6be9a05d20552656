"""Many questions at once: each advances on its own (no round barrier), bounded concurrency."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from search_o1.config import TaskKind
from search_o1.engine import Engine
from search_o1.types import Trace


@dataclass(frozen=True)
class Job:
    id: str
    question: str
    task: TaskKind
    method: str = "search-o1"


ResultSink = Callable[[Job, Trace], Awaitable[None] | None]


async def run_all(
    engine: Engine,
    jobs: Iterable[Job],
    *,
    concurrency: int,
    on_result: ResultSink,
    schedule: str = "async",
) -> None:
    """Run every job; `on_result` is called as each one finishes (in finishing order)."""
    if schedule != "async":
        raise NotImplementedError(f"schedule {schedule!r}")
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> None:
        async with gate:
            trace = await engine.run(job.question, task=job.task, method=job.method)
        done = on_result(job, trace)
        if inspect.isawaitable(done):
            await done

    async with asyncio.TaskGroup() as group:
        for job in jobs:
            group.create_task(one(job))
