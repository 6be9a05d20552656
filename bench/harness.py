"""Running a workload against simulated engines and measuring it.

Starts the engines as a child process, builds the orchestrator exactly as the CLI would
(settings -> pipeline.build_llm -> Engine -> scheduler.run_all), and records throughput,
latency, engine stats, the orchestrator's own CPU time and its peak memory.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.sim_search import SimSearch
from search_o1.config import Settings, load_settings
from search_o1.engine import Engine
from search_o1.llm.base import LLM
from search_o1.pipeline import engine_options
from search_o1.scheduler import Job, run_all
from search_o1.types import FinishReason, Trace


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@contextmanager
def sim_engines(n: int, *, time_scale: float, seed: int = 0, **flags: Any) -> Iterator[list[str]]:
    """Start `n` simulated engines (one child process); yields their base URLs."""
    ports = free_ports(n)
    cmd = [sys.executable, "-m", "bench.sim_engine", "--ports", ",".join(map(str, ports))]
    cmd += ["--seed", str(seed), "--time-scale", str(time_scale)]
    for name, value in flags.items():
        cmd += [f"--{name.replace('_', '-')}", str(value)]
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(cmd, cwd=root)
    urls = [f"http://127.0.0.1:{p}/v1" for p in ports]
    try:
        _wait_ready(urls, proc)
        yield urls
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_ready(urls: Sequence[str], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    for url in urls:
        while True:
            if proc.poll() is not None:
                raise RuntimeError("simulated engine exited at start")
            try:
                if httpx.get(url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"simulated engine at {url} did not start")
            time.sleep(0.1)


def engine_stats(urls: Sequence[str], *, reset: bool = False, clear: bool = False) -> list[Any]:
    out = []
    for url in urls:
        root = url.removesuffix("/v1")
        if reset:
            params = {"cache": "clear"} if clear else {}
            httpx.post(root + "/stats/reset", params=params, timeout=5)
        else:
            out.append(httpx.get(root + "/stats", timeout=5).json())
    return out


def bench_settings(urls: Sequence[str], **kw: Any) -> Settings:
    values = {
        "backend": "openai",
        "base_url": list(urls),
        "model": "sim",
        "chat_template": "chatml",
        "task": "multihop",
        "max_searches": 10,  # the paper's multi-hop limit: the 0-6 planned all happen
        "max_turns": 15,
        "force_search": False,
        "retries": 2,
        "timeout": 900.0,
        **kw,
    }
    return load_settings(values, environ={})


def jobs(n: int, offset: int = 0) -> list[Job]:
    return [
        Job(f"q{i}", f"Question {i}: which place links fact {i} to fact {i * 7 % 101}?", "multihop")
        for i in range(offset, offset + n)
    ]


class RssSampler:
    """Peak resident memory of this process while a run lasts (Linux /proc; else max RSS)."""

    def __init__(self, every_s: float = 0.25) -> None:
        self.every_s = every_s
        self.start = self.peak = rss_bytes()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RssSampler:
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task:
            self._task.cancel()
        self.peak = max(self.peak, rss_bytes())

    async def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_bytes())
            await asyncio.sleep(self.every_s)


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class RunResult:
    label: str
    traces: list[Trace]
    wall_s: float
    cpu_s: float
    rss_start: int
    rss_peak: int
    engines: list[dict[str, Any]]
    time_scale: float
    intervals: list[tuple[float, float]]

    def summary(self) -> dict[str, Any]:
        lat = sorted(t.latency_s for t in self.traces)
        n = len(lat)
        prompt = sum(e["prompt_tokens"] for e in self.engines)
        cached = sum(e["cached_tokens"] for e in self.engines)
        cont = sum(e["continuation_prompt_tokens"] for e in self.engines)
        cont_cached = sum(e["continuation_cached_tokens"] for e in self.engines)
        errors = sum(t.finish_reason is FinishReason.ERROR for t in self.traces)
        return {
            "label": self.label,
            "questions": n,
            "errors": errors,
            "answered": sum(t.answer is not None for t in self.traces),
            "wall_s": round(self.wall_s, 2),
            "sim_wall_s": round(self.wall_s * self.time_scale, 1),
            "questions_per_min_sim": round(n / (self.wall_s * self.time_scale) * 60, 2),
            "questions_per_min_wall": round(n / self.wall_s * 60, 1),
            "latency_mean_sim_s": round(statistics.fmean(lat) * self.time_scale, 1),
            "latency_p95_sim_s": round(lat[min(n - 1, int(0.95 * n))] * self.time_scale, 1),
            "engine_busy_fraction": round(
                statistics.fmean(e["busy_fraction"] for e in self.engines), 3
            ),
            "prompt_tokens_computed": prompt - cached,
            "prompt_tokens_cached": cached,
            "continuation_prompt_tokens": cont,
            "continuation_cached_fraction": round(cont_cached / max(1, cont), 4),
            "orchestrator_cpu_s": round(self.cpu_s, 2),
            "orchestrator_cpu_s_per_question": round(self.cpu_s / n, 4),
            "orchestrator_cpu_fraction_of_wall": round(self.cpu_s / self.wall_s, 4),
            "orchestrator_cpu_fraction_of_sim_wall": round(
                self.cpu_s / (self.wall_s * self.time_scale), 5
            ),
            "peak_rss_mb": round(self.rss_peak / 2**20, 1),
            "rss_growth_mb": round((self.rss_peak - self.rss_start) / 2**20, 1),
            "max_in_flight": max_overlap(self.intervals),
        }


def max_overlap(intervals: Sequence[tuple[float, float]]) -> int:
    """Most questions in flight at one moment, from (start, end) times."""
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    best = running = 0
    for _, delta in events:
        running += delta
        best = max(best, running)
    return best


async def run_workload(
    label: str,
    llm: LLM,
    urls: Sequence[str],
    settings: Settings,
    *,
    schedule: str,
    questions: Sequence[Job],
    concurrency: int,
    time_scale: float,
    llm_limit: int | None = None,
    search: SimSearch | None = None,
) -> RunResult:
    engine = Engine(
        llm, search or SimSearch(time_scale=time_scale), options=engine_options(settings)
    )
    engine_stats(urls, reset=True, clear=True)
    traces: list[Trace] = []
    intervals: list[tuple[float, float]] = []

    def collect(job: Job, trace: Trace) -> None:
        end = time.perf_counter()
        traces.append(trace)
        intervals.append((end - trace.latency_s, end))

    cpu0, t0 = time.process_time(), time.perf_counter()
    async with RssSampler() as rss:
        await run_all(
            engine,
            questions,
            concurrency=concurrency,
            on_result=collect,
            schedule=schedule,
            llm_limit=llm_limit or settings.max_llm_inflight,
            search_limit=settings.max_search_inflight,
        )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    stats = engine_stats(urls)
    return RunResult(label, traces, wall, cpu, rss.start, rss.peak, stats, time_scale, intervals)
