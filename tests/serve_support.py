"""Shared by the serve tests: a scripted engine with known answers, and a fixture run dir."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from search_o1 import markers as mk
from search_o1.config import Settings, load_settings
from search_o1.engine import Engine
from search_o1.errors import BackendError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.types import Completion, Hit, Prompt, Sampling, TextSink

QUESTION = "Where was the composer of Tosca born?"
QUERY = "composer of Tosca"
FACTS = "Tosca is an opera by Giacomo Puccini, who was born in Lucca."
ANSWER = "Lucca"
HITS = [
    Hit(
        "w1",
        "Tosca",
        "Tosca is an opera by Giacomo Puccini.",
        url="https://en.wikipedia.org/wiki/Tosca",
    ),
    Hit("w2", "Giacomo Puccini", "Giacomo Puccini was born in Lucca in 1858."),
]


def engine_settings(**kw: Any) -> Settings:
    base = {"backend": "openai", "base_url": "http://unused", "force_search": False}
    return load_settings({**base, **kw}, environ={})


def respond_text(prompt_text: str, *, continuation: str) -> str:
    """The model's reply, by what it is asked: reader, after a result, or at the start."""
    if "**Current search query**" in prompt_text:
        return f"The documents say who wrote it.\n**Final Information**\n\n{FACTS}"
    if continuation.rstrip().endswith(mk.END_RESULT):
        return f"Puccini was born in Lucca, Italy. So the answer is \\boxed{{{ANSWER}}}."
    return f"I need the composer of Tosca first. {mk.BEGIN_QUERY}{QUERY}{mk.END_QUERY}"


def scripted_respond(prompt: Prompt) -> str:
    text = "".join(m.content for m in prompt.messages)
    return respond_text(text, continuation=prompt.continuation)


class RecordingLLM(ScriptedLLM):
    """The scripted model, also recording the sampling and token budget of each call, and
    optionally holding each call for `hold_s` (to test disconnects and the limit)."""

    def __init__(self, *, hold_s: float = 0.0, fail: bool = False) -> None:
        super().__init__(scripted_respond)
        self.hold_s = hold_s
        self.fail = fail
        self.calls: list[tuple[Sampling, int]] = []
        self.started = 0
        self.cancelled = 0

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        self.started += 1
        self.calls.append((request.sampling, request.max_tokens))
        if self.fail:
            raise BackendError("openai", "connection refused", status=None)
        try:
            if self.hold_s:
                await asyncio.sleep(self.hold_s)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return await super().complete(request, on_text=on_text)


def scripted_engine(*, hold_s: float = 0.0, fail: bool = False) -> tuple[Engine, RecordingLLM]:
    llm = RecordingLLM(hold_s=hold_s, fail=fail)
    search = MemorySearch(lambda query: HITS)
    return Engine(llm, search), llm


def write_run_dir(path: Path) -> Path:
    """A small evaluation run as the eval harness writes it: results, metrics, config."""
    path.mkdir(parents=True, exist_ok=True)
    trace = {
        "question": QUESTION,
        "method": "search-o1",
        "steps": [
            {
                "index": 0,
                "text": f"I need the composer of Tosca first. {mk.BEGIN_QUERY}{QUERY}",
                "completion": {"text": "", "finish": "stop"},
                "search": {
                    "query": QUERY,
                    "outcome": "searched",
                    "hits": [{"id": h.id, "title": h.title, "url": h.url} for h in HITS],
                    "documents": [],
                    "reader": {"refined": FACTS, "found": True},
                    "inserted": mk.result_block(FACTS),
                    "error": None,
                    "latency_s": 0.12,
                },
            },
            {
                "index": 1,
                "text": "So the answer is \\boxed{Lucca}.",
                "completion": {"text": "", "finish": "stop"},
                "search": None,
            },
        ],
        "answer": ANSWER,
        "finish_reason": "answered",
        "latency_s": 1.5,
        "output": "…",
    }
    records = [
        {
            "id": "q1",
            "question": QUESTION,
            "gold": ["Lucca"],
            "prediction": "Lucca",
            "metrics": {"em": 1.0, "f1": 1.0},
            "finish_reason": "answered",
            "searches": [QUERY],
            "n_searches": 1,
            "tokens": {"prompt": 900, "completion": 120},
            "latency_s": 1.5,
            "trace": trace,
        },
        {
            "id": "q2",
            "question": "Who painted the ceiling of the Sistine Chapel?",
            "gold": ["Michelangelo"],
            "prediction": None,
            "metrics": {"em": 0.0, "f1": 0.0},
            "finish_reason": "max_tokens",
            "searches": [],
            "n_searches": 0,
            "tokens": {"prompt": 300, "completion": 2048},
            "latency_s": 9.0,
            "trace": {**trace, "steps": [], "answer": None, "finish_reason": "max_tokens"},
        },
    ]
    with (path / "results.jsonl").open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    metrics = {"primary": "em", "items": 2, "n": 2, "overall": {"em": 0.5, "f1": 0.5}}
    (path / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    config = {"run": {"dataset": "fixture", "method": "search-o1", "task": "qa"}}
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return path
