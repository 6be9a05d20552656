"""The embedded model's speed on this machine: load time and tokens per second.

    python -m bench.embedded_speed [MAX_TOKENS]

Starts SmolLM2-135M through llama.cpp (the `embedded` backend), generates MAX_TOKENS
tokens (128 by default) once at temperature 0, prints one JSON object, and closes the
backend, which stops the server.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from search_o1.llm.base import CompletionRequest
from search_o1.llm.embedded import EmbeddedLLM
from search_o1.types import Message, Prompt, Sampling


async def measure(max_tokens: int = 128) -> dict[str, float]:
    """Start the model, generate `max_tokens` tokens once, and report the speeds."""
    started = time.monotonic()
    llm = EmbeddedLLM()
    try:
        await llm.context_length()  # starts the server
        load_s = time.monotonic() - started
        prompt = Prompt((Message("user", "Write a long story about a lighthouse keeper."),))
        request = CompletionRequest(
            prompt, max_tokens=max_tokens, sampling=Sampling(temperature=0.0, seed=1)
        )
        done = await llm.complete(request)
    finally:
        await llm.aclose()
    return {
        "load_s": round(load_s, 2),
        "completion_tokens": done.completion_tokens,
        "latency_s": round(done.latency_s, 2),
        "tokens_per_s": round(done.completion_tokens / max(done.latency_s, 1e-9), 1),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 128))))
