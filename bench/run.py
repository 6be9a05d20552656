"""`make bench`: the paper's rounds vs continuous scheduling, on simulated engines.

    python -m bench.run            # writes bench/out/results.json and bench/out/bench.png

1. 200 questions, one engine: `rounds` then `async` (same workload, same seed).
2. Three engines: the pool with prefix affinity vs plain least-loaded routing.
3. 1,000 questions in flight at once (four engines, shorter chains): errors and memory.
4. `search-o1 eval` itself, rounds vs async, on an independent fixed-latency server
   (bench/schedule_check.py).

Times are simulated: the engines run `TIME_SCALE` simulated seconds per wall second, so
"per minute" and latency figures are in simulated (real-deployment) time. Orchestrator CPU
is this process's CPU time; it is reported against both wall clocks.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bench.harness import RunResult, bench_settings, jobs, run_workload, sim_engines
from search_o1.config import Settings
from search_o1.llm.base import LLM
from search_o1.llm.pool import PoolLLM
from search_o1.pipeline import build_llm
from search_o1.wiring import llms

OUT = Path(__file__).resolve().parent / "out"
TIME_SCALE = 20.0
QUESTIONS = 200


async def _standard(
    label: str, llm: LLM, urls: list[str], settings: Settings, schedule: str
) -> RunResult:
    """The 200-question workload through `llm`, reported as it finishes."""
    try:
        result = await run_workload(
            label,
            llm,
            urls,
            settings,
            schedule=schedule,
            questions=jobs(QUESTIONS),
            concurrency=QUESTIONS,
            time_scale=TIME_SCALE,
        )
    finally:
        await llm.aclose()
    report(result)
    return result


async def schedules() -> list[RunResult]:
    with sim_engines(1, time_scale=TIME_SCALE) as urls:
        settings = bench_settings(urls)
        return [
            await _standard(schedule, build_llm(settings), urls, settings, schedule)
            for schedule in ("rounds", "async")
        ]


async def routing() -> list[RunResult]:
    results = []
    with sim_engines(3, time_scale=TIME_SCALE, cache_tokens=600_000) as urls:
        settings = bench_settings(urls)
        for affinity in (True, False):
            label = "affinity" if affinity else "least-loaded"
            backends = [llms.openai(bench_settings([u], retries=0)) for u in urls]
            llm = PoolLLM(backends, labels=urls, affinity=affinity)
            results.append(await _standard(label, llm, urls, settings, "async"))
    return results


async def thousand() -> RunResult:
    n = 1000
    with sim_engines(4, time_scale=TIME_SCALE, length_scale=0.25) as urls:
        # The run's model-request limit is n; the clients' connection caps follow it.
        settings = bench_settings(urls, max_llm_inflight=n)
        llm = build_llm(settings)
        try:
            result = await run_workload(
                "1000-in-flight",
                llm,
                urls,
                settings,
                schedule="async",
                questions=jobs(n),
                concurrency=n,
                llm_limit=n,
                time_scale=TIME_SCALE,
            )
        finally:
            await llm.aclose()
    report(result)
    return result


def report(result: RunResult) -> None:
    s = result.summary()
    print(
        f"[{s['label']:>14}] {s['questions']} q, {s['errors']} errors | "
        f"{s['questions_per_min_sim']:.2f} q/min (sim) | latency mean {s['latency_mean_sim_s']}s "
        f"p95 {s['latency_p95_sim_s']}s (sim) | busy {s['engine_busy_fraction']:.0%} | "
        f"prompt tok computed {s['prompt_tokens_computed']:,} cached "
        f"{s['prompt_tokens_cached']:,} | continuation cached "
        f"{s['continuation_cached_fraction']:.1%} | "
        f"CPU {s['orchestrator_cpu_s_per_question'] * 1000:.0f}"
        f" ms/q = {s['orchestrator_cpu_fraction_of_sim_wall']:.2%} of sim wall "
        f"({s['orchestrator_cpu_fraction_of_wall']:.1%} of bench wall) | peak RSS "
        f"{s['peak_rss_mb']} MB | wall {s['wall_s']}s",
        flush=True,
    )


def targets(
    by_schedule: dict[str, Any], by_routing: dict[str, Any], big: dict[str, Any]
) -> dict[str, Any]:
    speedup = by_schedule["async"]["questions_per_min_sim"] / max(
        1e-9, by_schedule["rounds"]["questions_per_min_sim"]
    )
    cpu = max(r["orchestrator_cpu_fraction_of_sim_wall"] for r in by_schedule.values())
    cached = by_schedule["async"]["continuation_cached_fraction"]
    per_q = big["rss_growth_mb"] / big["questions"]
    return {
        "async_vs_rounds_throughput": round(speedup, 2),
        "async_at_least_2x_rounds": speedup >= 2.0,
        "orchestrator_cpu_fraction_of_sim_wall_max": cpu,
        "orchestrator_cpu_at_most_2pct": cpu <= 0.02,
        "continuation_cached_fraction_async": cached,
        "continuation_cached_at_least_95pct": cached >= 0.95,
        "affinity_vs_least_loaded_cache": [
            by_routing["affinity"]["continuation_cached_fraction"],
            by_routing["least-loaded"]["continuation_cached_fraction"],
        ],
        "thousand_in_flight": big["max_in_flight"],
        "thousand_errors": big["errors"],
        "thousand_ok": big["errors"] == 0 and big["max_in_flight"] >= 1000,
        "memory_per_in_flight_question_kb": round(per_q * 1024, 1),
    }


async def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    by_schedule = {r.label: r.summary() for r in await schedules()}
    by_routing = {r.label: r.summary() for r in await routing()}
    big = (await thousand()).summary()
    from bench import schedule_check

    second = schedule_check.main()  # the CLI in child processes; blocking is fine here
    results = {
        "time_scale": TIME_SCALE,
        "schedules": by_schedule,
        "routing": by_routing,
        "thousand": big,
        "second_server": second,
        "targets": {
            **targets(by_schedule, by_routing, big),
            "second_server_same_ordering": second["async_faster"],
        },
    }
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    from bench.plot import plot

    plot(results, OUT / "bench.png")
    print(json.dumps(results["targets"], indent=2))
    print(f"wrote {OUT / 'results.json'} and {OUT / 'bench.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
