"""The scheduler: rounds are lock-step (the paper's Algorithm 1); async never waits."""

from __future__ import annotations

import asyncio
import re

import pytest

from search_o1 import markers as mk
from search_o1.engine import Engine
from search_o1.llm.base import CompletionRequest
from search_o1.scheduler import Job, RoundBarrier, run_all
from search_o1.search.memory import MemorySearch
from search_o1.types import Completion, Hit, Prompt, TextSink, Trace

Q, EQ = mk.BEGIN_QUERY, mk.END_QUERY
Log = list[tuple[str, int, int]]  # (event, chain, round)


def chain_of(prompt: Prompt) -> int:
    match = re.search(r"QUESTION-(\d+)", prompt.messages[0].content)
    assert match, "every prompt names its question"
    return int(match.group(1))


class LoggingLLM:
    """Chain i searches i % 4 times (query i/r, the 3rd one repeated); every call is logged.

    Each call yields to the event loop a chain-dependent number of times, so calls
    overlap and finish in an order unrelated to their start.
    """

    name = "logging"

    def __init__(self, log: Log, *, hold: dict[int, asyncio.Event] | None = None) -> None:
        self.log = log
        self.hold = hold or {}

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        prompt = request.prompt
        if prompt.messages[0].content.startswith("**Task**"):  # the reader
            i, r = map(int, re.findall(r"query (\d+)/(\d+)", prompt.messages[0].content)[-1])
            return await self._call("read", i, r, f"**Final Information**\n\nfact {i}/{r}")
        i = chain_of(prompt)
        r = prompt.continuation.count(EQ)
        if i in self.hold and r == 0:
            await self.hold[i].wait()
        if r < i % 4:
            query = f"query {i}/{min(r, 1) if r == 2 else r}"  # round 2 repeats round 1
            return await self._call("gen", i, r, f"step {r}. {Q}{query}", stop=EQ)
        return await self._call("gen", i, r, f"done. \\boxed{{{i}}}")

    async def _call(
        self, kind: str, i: int, r: int, text: str, stop: str | None = None
    ) -> Completion:
        self.log.append((f"{kind}-start", i, r))
        for _ in range((i * 7 + r * 3) % 5):
            await asyncio.sleep(0)
        self.log.append((f"{kind}-end", i, r))
        return Completion(text, "stop", stop=stop, prompt_tokens=10, completion_tokens=5)

    async def context_length(self) -> int | None:
        return None

    async def aclose(self) -> None:
        return None


class LoggingSearch(MemorySearch):
    def __init__(self, log: Log) -> None:
        super().__init__(lambda q: [Hit("h", "title", f"text about {q}")])
        self.log = log

    async def search(self, query: str, *, k: int) -> list[Hit]:
        i, r = map(int, re.findall(r"query (\d+)/(\d+)", query)[0])
        self.log.append(("search-start", i, r))
        await asyncio.sleep(0)
        self.log.append(("search-end", i, r))
        return await super().search(query, k=k)


def jobs(n: int) -> list[Job]:
    return [Job(str(i), f"QUESTION-{i}: what is {i}?", "qa") for i in range(n)]


async def run(
    schedule: str, n: int, *, concurrency: int = 100, hold: dict[int, asyncio.Event] | None = None
) -> tuple[Log, dict[str, Trace]]:
    log: Log = []
    engine = Engine(LoggingLLM(log, hold=hold), LoggingSearch(log))
    results: dict[str, Trace] = {}

    def sink(job: Job, trace: Trace) -> None:
        results[job.id] = trace
        if hold and int(job.id) + 1 in hold:
            hold[int(job.id) + 1].set()

    await asyncio.wait_for(
        run_all(engine, jobs(n), concurrency=concurrency, on_result=sink, schedule=schedule),
        timeout=20,
    )
    return log, results


STAGES = {"gen": 0, "search": 1, "read": 2}


def stage(event: str, r: int) -> int:
    return r * 3 + STAGES[event.split("-")[0]]


def assert_lock_step(log: Log) -> None:
    """No call of stage s starts before every call of every earlier stage has ended."""
    last_end: dict[int, int] = {}
    for pos, (event, _, r) in enumerate(log):
        if event.endswith("-end"):
            last_end[stage(event, r)] = pos
    for pos, (event, i, r) in enumerate(log):
        if event.endswith("-start"):
            s = stage(event, r)
            late = [t for t, end in last_end.items() if t < s and end > pos]
            assert not late, f"{event} of chain {i} round {r} started before stages {late} ended"


async def test_rounds_are_lock_step() -> None:
    log, results = await run("rounds", 12)
    assert len(results) == 12
    assert all(t.answer == str(int(j)) for j, t in results.items())
    assert_lock_step(log)
    # The repeated query (round 2 of chains with i % 4 == 3) searched nothing new.
    assert ("search-start", 3, 2) not in log and ("gen-start", 3, 3) in log


async def test_rounds_batches_keep_lock_step_within_each_batch() -> None:
    log, results = await run("rounds", 10, concurrency=4)
    assert len(results) == 10
    batches = [range(0, 4), range(4, 8), range(8, 10)]
    for batch in batches:
        assert_lock_step([e for e in log if e[1] in batch])
    # A batch starts only after the previous one has finished entirely.
    first_of = {b.start: min(p for p, e in enumerate(log) if e[1] in b) for b in batches}
    last_of = {b.start: max(p for p, e in enumerate(log) if e[1] in b) for b in batches}
    assert last_of[0] < first_of[4] and last_of[4] < first_of[8]


async def test_async_does_not_interleave_in_rounds() -> None:
    log, results = await run("async", 12)
    assert len(results) == 12
    with pytest.raises(AssertionError):
        assert_lock_step(log)  # the log above is not lock-step: chains ran ahead


async def test_async_lets_a_chain_finish_while_another_is_still_generating() -> None:
    # Chain 3's first generation waits until chain 2 has finished completely (three
    # generations, two searches); a round barrier would deadlock here, async must not.
    hold = {3: asyncio.Event()}
    log, results = await run("async", 4, hold=hold)
    assert set(results) == {"0", "1", "2", "3"}
    assert log.index(("gen-end", 2, 2)) < log.index(("gen-end", 3, 0))


async def test_rounds_would_deadlock_on_the_same_dependency() -> None:
    hold = {3: asyncio.Event()}
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(run("rounds", 4, hold=hold), timeout=0.5)


async def test_barrier_opens_when_the_last_laggard_leaves() -> None:
    barrier = RoundBarrier(["a", "b"])
    waiting = asyncio.ensure_future(barrier.arrive("a", "generate"))
    await asyncio.sleep(0)
    assert not waiting.done()  # b has not started its first generation
    barrier.leave("b")
    await asyncio.wait_for(waiting, timeout=1)
    await asyncio.wait_for(barrier.arrive("a", "search"), timeout=1)  # alone now


async def test_unknown_schedule_is_refused() -> None:
    engine = Engine(LoggingLLM([]), None)
    with pytest.raises(ValueError, match="unknown schedule"):
        await run_all(engine, [], concurrency=1, on_result=lambda j, t: None, schedule="x")
