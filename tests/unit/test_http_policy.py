"""The shared HTTP rules (search_o1._http): one retry policy, one deadline rule, one body
cap, one user agent, as every client uses them. Wire-level, on httpx.MockTransport."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from tests.wire import Wire

from search_o1._http import USER_AGENT, RetryPolicy, deadline, read_capped
from search_o1.errors import BackendError
from search_o1.fetch.fetcher import FetchConfig, PageFetcher
from search_o1.fetch.guard import HostPolicy
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.search.serper import SerperSearch
from search_o1.types import Message, Prompt


def test_backoff_doubles_to_its_cap_and_retry_after_is_capped_too() -> None:
    policy = RetryPolicy(backoff_s=0.5, max_backoff_s=3.0, max_wait_s=60.0, jitter=False)
    assert [policy.delay(n, None) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay(3, 7.0) == 7.0 and policy.delay(0, 3600.0) == 60.0
    jittered = RetryPolicy(backoff_s=1.0)
    assert all(0.5 <= jittered.delay(0, None) <= 1.0 for _ in range(50))


async def test_call_retries_only_what_may_pass_and_only_so_often() -> None:
    wire = Wire([httpx.Response(200)])
    policy = wire.policy(retries=2, jitter=False, backoff_s=1.0)
    tries: list[int] = []

    async def flaky() -> str:
        tries.append(1)
        raise BackendError("x", "busy", status=503, retryable=True)

    with pytest.raises(BackendError, match="busy"):
        await policy.call(flaky, what="x")
    assert len(tries) == 3 and wire.sleeps == [1.0, 2.0]

    async def refused() -> str:
        tries.append(1)
        raise BackendError("x", "no", status=400)

    tries.clear()
    with pytest.raises(BackendError, match="no"):
        await policy.call(refused, what="x")
    assert len(tries) == 1


async def test_deadline_raises_the_given_error() -> None:
    with pytest.raises(BackendError, match="too slow"):
        async with deadline(0.01, lambda: BackendError("x", "too slow")):
            await asyncio.sleep(5)
    async with deadline(None, lambda: BackendError("x", "never")):
        await asyncio.sleep(0)


@pytest.mark.parametrize("declared", [True, False])
async def test_read_capped_stops_at_the_cap(declared: bool) -> None:
    body = b"x" * 100

    async def pieces() -> AsyncIterator[bytes]:  # no Content-Length: the size is unknown
        yield body[:60]
        yield body[60:]

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body if declared else pieces())

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        async with client.stream("GET", "http://t.test/") as response:
            assert await read_capped(response, 99) is None
        async with client.stream("GET", "http://t.test/") as response:
            assert await read_capped(response, 100) == body


async def test_one_user_agent_for_models_searches_and_pages() -> None:
    models = {"data": [{"id": "m", "owned_by": "vllm"}]}
    done = {"choices": [{"text": "ok", "finish_reason": "stop"}]}

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json=models)
        if request.url.path.endswith("/completions"):
            return httpx.Response(200, json=done)
        if request.url.path == "/search":
            return httpx.Response(200, json={"organic": []})
        return httpx.Response(200, text="A page.", headers={"content-type": "text/plain"})

    wire = Wire([answer])
    llm = OpenAILLM("http://model.test/v1", chat_template="chatml", transport=wire.transport)
    await llm.complete(CompletionRequest(Prompt((Message("user", "q"),)), max_tokens=4))
    await llm.aclose()
    search = SerperSearch(
        endpoint="http://search.test/search", api_key="k", transport=wire.transport
    )
    await search.search("q", k=1)
    await search.aclose()
    config = FetchConfig(reader_url="http://pages.test/", respect_robots=True)
    pages = PageFetcher(config, HostPolicy(), transport=wire.transport)
    await pages.fetch("https://example.org/a")
    await pages.aclose()
    agents = {r.headers["user-agent"] for r in wire.requests}
    assert agents == {USER_AGENT} and len(wire.requests) == 4
    service = wire.requests[-1]  # the page service's own wire format
    assert str(service.url) == "http://pages.test/https://example.org/a"
    assert service.headers["accept"] == "text/plain"
    assert service.headers["x-robots-txt"] == USER_AGENT
