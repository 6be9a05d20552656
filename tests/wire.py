"""In-process HTTP answers for pure wire-format tests: `httpx.MockTransport` plus a clock.

End-to-end behaviour is tested against real loopback servers (tests/servers/); these
helpers are for what is only about bytes and headers (a Retry-After honoured, a body
capped, a 200 that is not a completion), where a thread and real waiting add nothing.

    wire = Wire([httpx.Response(429, headers={"Retry-After": "1"}), httpx.Response(200, json=...)])
    backend = SerperSearch(..., transport=wire.transport, retry=wire.policy(retries=2))
    ... assert wire.sleeps == [1.0]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from search_o1._http import RetryPolicy

Answer = httpx.Response | Callable[[httpx.Request], httpx.Response]


class Wire:
    """Answers requests from a list (one each, the last repeated) and records what it saw.

    `sleeps` are the waits the client asked for through `policy()`'s injected sleep; no
    real time passes.
    """

    def __init__(self, answers: Iterable[Answer]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.sleeps: list[float] = []
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if callable(answer):
            return answer(request)
        # A fresh copy each time: httpx binds a response to the request it answered.
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def policy(self, **kw: Any) -> RetryPolicy:
        return RetryPolicy(sleep=self.sleep, **kw)

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) if r.content else None for r in self.requests]
