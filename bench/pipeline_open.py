"""How long opening and closing a pipeline takes (what every `ask` and `serve` pays once).

    python -m bench.pipeline_open [-n 15]

An OpenAI-compatible model client and a Serper client, nothing contacted (clients connect
on first use). Prints the median and the first (which also builds the TLS context, once
per process).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from search_o1 import load_settings, open_pipeline


async def measure(n: int) -> list[float]:
    os.environ.setdefault("SERPER_API_KEY", "unused")
    settings = load_settings(
        {"base_url": ["http://127.0.0.1:9/v1"], "model": "m", "search": ["serper"]},
        environ={},
    )
    times = []
    for _ in range(n):
        started = time.perf_counter()
        async with open_pipeline(settings):
            pass
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="pipelines to open (default 15)")
    times = asyncio.run(measure(parser.parse_args().n))
    print(
        f"open+close: median {1000 * statistics.median(times):.1f} ms, "
        f"first {1000 * times[0]:.1f} ms, over {len(times)}"
    )


if __name__ == "__main__":
    main()
