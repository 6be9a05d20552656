"""A simulated continuous-batching GPU engine behind an OpenAI-compatible HTTP API.

    python -m bench.sim_engine --ports 8101,8102 --seed 0 --time-scale 20

Each port is an independent engine (own batch, own prefix cache) sharing one process.
Time is simulated: `--time-scale 20` runs 20 simulated seconds per wall second. Per tick
the engine admits waiting requests up to `max_batch` (prefill costs time per prompt
token not found in its prefix cache), then runs decode steps of `a + b x batch` seconds
each; every running sequence gains one token per step and streams what it gained.
Requests are ChatML-rendered prompts; what the model "writes" comes from workload.py.

GET /stats reports busy time, prompt tokens computed vs served from the cache (all, and
for chain continuations alone); POST /stats/reset zeroes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bench.prefix_cache import PrefixCache
from bench.workload import (
    CHARS_PER_TOKEN,
    END_QUERY,
    FINAL_INFORMATION,
    Profile,
    plan_chain,
    reader_text,
)

USER, ASSISTANT, END_TURN = "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>"
MODEL = "sim"
CONTEXT = 131072


@dataclass(frozen=True)
class EngineParams:
    """Costs in simulated seconds (an H100-class server with a 32B model, roughly)."""

    step_base_s: float = 0.020
    step_per_seq_s: float = 0.0003
    prefill_per_token_s: float = 0.00005
    max_batch: int = 256  # vLLM's default max_num_seqs
    cache_tokens: int = 1_500_000
    time_scale: float = 20.0
    tick_wall_s: float = 0.1  # stream granularity: one chunk per sequence per tick
    seed: int = 0
    profile: Profile = field(default_factory=Profile)


@dataclass
class _Seq:
    prompt: str
    text: str  # everything the model will write for this request
    prompt_tokens: int
    blocks: list[int]
    continuation: bool
    chain: bool
    finish: str
    stop_reason: str | None
    pos: int = 0  # characters emitted
    chunks: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)

    @property
    def tokens(self) -> int:
        return -(-len(self.text) // CHARS_PER_TOKEN)


@dataclass
class Stats:
    started: float = field(default_factory=time.monotonic)
    busy_sim_s: float = 0.0
    requests: int = 0
    continuation_requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    continuation_prompt_tokens: int = 0
    continuation_cached_tokens: int = 0
    decoded_tokens: int = 0
    max_batch_seen: int = 0
    max_waiting: int = 0


class SimEngine:
    def __init__(self, params: EngineParams) -> None:
        self.p = params
        self.cache = PrefixCache(params.cache_tokens)
        self.stats = Stats()
        self._waiting: deque[_Seq] = deque()
        self._running: list[_Seq] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def submit(self, body: dict[str, Any]) -> _Seq:
        seq = self._make(body)
        self._waiting.append(seq)
        self.stats.max_waiting = max(self.stats.max_waiting, len(self._waiting))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())
        self._wake.set()
        return seq

    def _make(self, body: dict[str, Any]) -> _Seq:
        prompt = str(body.get("prompt", ""))
        user = prompt.partition(USER)[2].partition(END_TURN)[0]
        continuation = prompt.partition(ASSISTANT)[2]
        is_reader = FINAL_INFORMATION in user
        if is_reader:
            text = reader_text(prompt, self.p.seed, self.p.profile)
        else:
            plan = plan_chain(user, self.p.seed, self.p.profile)
            text = plan.segment_text(continuation.count(END_QUERY), self.p.seed)
        text, finish, stop_reason = _cut(text, body)
        return _Seq(
            prompt=prompt,
            text=text,
            prompt_tokens=-(-len(prompt) // CHARS_PER_TOKEN),
            blocks=self.cache.block_ids(prompt),
            continuation=bool(continuation) and not is_reader,
            chain=not is_reader,
            finish=finish,
            stop_reason=stop_reason,
        )

    # ---- the engine loop --------------------------------------------------------------

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time()
        while True:
            prefill = self._admit()
            if not self._running:
                self._wake.clear()
                await self._wake.wait()
                deadline = loop.time()
                continue
            step_s = self.p.step_base_s + self.p.step_per_seq_s * len(self._running)
            steps = max(1, int(self.p.tick_wall_s * self.p.time_scale / step_s))
            sim_s = prefill * self.p.prefill_per_token_s + steps * step_s
            self.stats.busy_sim_s += sim_s
            deadline = max(deadline + sim_s / self.p.time_scale, loop.time() - 0.5)
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            self._decode(steps)

    def _admit(self) -> int:
        """Move waiting requests into the batch; returns the prompt tokens to compute."""
        prefill = 0
        while self._waiting and len(self._running) < self.p.max_batch:
            seq = self._waiting.popleft()
            cached = min(self.cache.hit_tokens(seq.blocks), seq.prompt_tokens)
            self.cache.insert(seq.blocks)
            prefill += seq.prompt_tokens - cached
            self._count(seq, cached)
            self._running.append(seq)
        self.stats.max_batch_seen = max(self.stats.max_batch_seen, len(self._running))
        return prefill

    def _count(self, seq: _Seq, cached: int) -> None:
        s = self.stats
        s.requests += 1
        s.prompt_tokens += seq.prompt_tokens
        s.cached_tokens += cached
        if seq.continuation:
            s.continuation_requests += 1
            s.continuation_prompt_tokens += seq.prompt_tokens
            s.continuation_cached_tokens += cached

    def _decode(self, steps: int) -> None:
        still = []
        for seq in self._running:
            end = min(len(seq.text), seq.pos + steps * CHARS_PER_TOKEN)
            if end > seq.pos:
                seq.chunks.put_nowait(seq.text[seq.pos : end])
                self.stats.decoded_tokens += -(-(end - seq.pos) // CHARS_PER_TOKEN)
                seq.pos = end
            if seq.pos >= len(seq.text):
                # The written tokens' KV stays cached, as in vLLM, for the continuation.
                self.cache.insert(self.cache.block_ids(seq.prompt + seq.text))
                seq.chunks.put_nowait(None)
            else:
                still.append(seq)
        self._running = still

    def stats_json(self) -> dict[str, Any]:
        s = self.stats
        wall = time.monotonic() - s.started
        return {
            **{k: v for k, v in vars(s).items() if k != "started"},
            "wall_s": wall,
            "sim_s": wall * self.p.time_scale,
            "busy_fraction": s.busy_sim_s / max(1e-9, wall * self.p.time_scale),
            "cache_hit_rate": s.cached_tokens / max(1, s.prompt_tokens),
            "continuation_hit_rate": s.continuation_cached_tokens
            / max(1, s.continuation_prompt_tokens),
            "time_scale": self.p.time_scale,
        }

    def reset(self, *, clear_cache: bool) -> None:
        self.stats = Stats()
        if clear_cache:
            self.cache.clear()


def _cut(text: str, body: dict[str, Any]) -> tuple[str, str, str | None]:
    """Honour stop strings (returned only if asked, like vLLM) and max_tokens."""
    stops = body.get("stop") or []
    stops = [stops] if isinstance(stops, str) else stops
    finish, matched = "stop", None
    for stop in stops:
        i = text.find(stop) if stop else -1
        if i >= 0:
            keep = body.get("include_stop_str_in_output")
            text, matched = text[: i + (len(stop) if keep else 0)], stop
            break
    limit = int(body.get("max_tokens") or 1 << 30) * CHARS_PER_TOKEN
    if len(text) > limit:
        text, finish, matched = text[:limit], "length", None
    return text, finish, matched


# ---- HTTP ------------------------------------------------------------------------------


def _chunk(piece: str, finish: str | None = None, stop: str | None = None) -> bytes:
    choice: dict[str, Any] = {"index": 0, "text": piece, "finish_reason": finish}
    if finish:
        choice["stop_reason"] = stop
    payload = {"object": "text_completion", "model": MODEL, "choices": [choice]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _usage(seq: _Seq) -> dict[str, int]:
    return {
        "prompt_tokens": seq.prompt_tokens,
        "completion_tokens": seq.tokens,
        "total_tokens": seq.prompt_tokens + seq.tokens,
    }


async def _stream(seq: _Seq) -> AsyncIterator[bytes]:
    while (piece := await seq.chunks.get()) is not None:
        yield _chunk(piece)
    yield _chunk("", seq.finish, seq.stop_reason)
    usage = {"object": "text_completion", "choices": [], "usage": _usage(seq)}
    yield b"data: " + json.dumps(usage).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


def build_app(engine: SimEngine) -> Starlette:
    async def models(_: Request) -> Response:
        entry = {"id": MODEL, "object": "model", "owned_by": "vllm", "max_model_len": CONTEXT}
        return JSONResponse({"object": "list", "data": [entry]})

    async def completions(request: Request) -> Response:
        body = await request.json()
        seq = engine.submit(body)
        if body.get("stream"):
            return StreamingResponse(_stream(seq), media_type="text/event-stream")
        while await seq.chunks.get() is not None:
            pass
        choice = {"index": 0, "text": seq.text, "finish_reason": seq.finish}
        choice["stop_reason"] = seq.stop_reason
        return JSONResponse(
            {"object": "text_completion", "choices": [choice], "usage": _usage(seq)}
        )

    async def stats(_: Request) -> Response:
        return JSONResponse(engine.stats_json())

    async def reset(request: Request) -> Response:
        engine.reset(clear_cache=request.query_params.get("cache") == "clear")
        return JSONResponse({"ok": True})

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/stats", stats),
            Route("/stats/reset", reset, methods=["POST"]),
        ]
    )


async def serve(ports: list[int], params: EngineParams) -> None:
    servers = [
        uvicorn.Server(
            uvicorn.Config(
                build_app(SimEngine(params)),
                host="127.0.0.1",
                port=port,
                log_level="warning",
                lifespan="off",
                access_log=False,
                backlog=4096,
            )
        )
        for port in ports
    ]
    await asyncio.gather(*(s.serve() for s in servers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", default="8101", help="comma-separated; one engine each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-scale", type=float, default=EngineParams.time_scale)
    parser.add_argument("--max-batch", type=int, default=EngineParams.max_batch)
    parser.add_argument("--cache-tokens", type=int, default=EngineParams.cache_tokens)
    parser.add_argument("--length-scale", type=float, default=1.0)
    args = parser.parse_args()
    params = EngineParams(
        max_batch=args.max_batch,
        cache_tokens=args.cache_tokens,
        time_scale=args.time_scale,
        seed=args.seed,
        profile=Profile(length_scale=args.length_scale),
    )
    asyncio.run(serve([int(p) for p in args.ports.split(",")], params))


if __name__ == "__main__":
    main()
