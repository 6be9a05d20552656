"""The `openai` backend against a real HTTP server on 127.0.0.1 (tests/servers/openai_server)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import httpx
import pytest
from tests.servers.openai_server import OVERFLOW_ENGINE, OVERFLOW_SERVING, openai_server
from tests.wire import Wire

from search_o1._http import RetryPolicy
from search_o1.config import Settings
from search_o1.errors import BackendError, ConfigError, ContextOverflowError
from search_o1.llm.base import LLM, CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.llm.templates import ServerTemplateUnavailable, chatml
from search_o1.types import Message, Prompt, Sampling
from search_o1.wiring import llms

END = "<|end_search_query|>"
QUERY = "I should look it up. <|begin_search_query|>capital of France" + END + " ignored tail"
PROMPT = Prompt((Message("system", "Be brief."), Message("user", "Capital of France?")))
SAMPLING = Sampling(seed=7)


def fast(url: str, **kw: Any) -> OpenAILLM:
    """A client with tiny back-off so retry tests run in milliseconds."""
    kw.setdefault("chat_template", "chatml")
    retries = kw.pop("retries", 4)
    kw.setdefault("retry", RetryPolicy(retries=retries, backoff_s=0.01, max_backoff_s=0.05))
    return OpenAILLM(url, connect_timeout_s=2.0, **kw)


def reply(text: str) -> Any:
    return lambda body: text


@pytest.mark.parametrize("return_stop", [True, False], ids=["vllm-like", "llamacpp-like"])
@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
async def test_stop_string_normalised(return_stop: bool, streaming: bool) -> None:
    pieces: list[str] = []
    with openai_server(reply(QUERY), return_stop=return_stop) as server:
        llm = fast(server.url, stream=streaming)
        on_text = pieces.append if streaming else None
        done = await llm.complete(
            CompletionRequest(PROMPT, stop=[END], max_tokens=100, sampling=SAMPLING),
            on_text=on_text,
        )
        await llm.aclose()
    assert done.text == "I should look it up. <|begin_search_query|>capital of France"
    assert done.stop == END and done.finish == "stop"
    assert done.prompt_tokens > 0 and done.completion_tokens > 0
    body = server.completion_requests[0]
    assert body.get("stream", False) is streaming
    if streaming:
        assert len(pieces) > 1  # really streamed in pieces
        assert "".join(pieces).startswith(done.text)
        assert body["stream_options"] == {"include_usage": True}


async def test_length_finish_and_sampling_fields() -> None:
    with openai_server(reply("x" * 400)) as server:
        llm = fast(server.url)
        done = await llm.complete(
            CompletionRequest(PROMPT, stop=[END], max_tokens=10, sampling=SAMPLING)
        )
        await llm.aclose()
    assert done.finish == "length" and done.stop is None and len(done.text) == 40
    body = server.completion_requests[0]
    assert body["model"] == "fake-model"  # learned from GET /v1/models
    assert body["temperature"] == 0.7 and body["top_p"] == 0.8 and body["top_k"] == 20
    assert body["repetition_penalty"] == 1.05 and body["seed"] == 7
    assert body["include_stop_str_in_output"] is True  # vLLM-like server


async def test_llamacpp_like_server_gets_its_own_fields() -> None:
    with openai_server(reply("a\nb"), return_stop=False) as server:
        llm = fast(server.url)
        await llm.complete(
            CompletionRequest(PROMPT, stop=["\n"], max_tokens=5, sampling=SAMPLING, grammar="g")
        )
        await llm.aclose()
    body = server.completion_requests[0]
    assert body["repeat_penalty"] == 1.05 and body["grammar"] == "g" and body["verbose"]
    assert "include_stop_str_in_output" not in body


async def test_continuations_extend_the_prompt_byte_for_byte() -> None:
    """The server's prefix cache only helps if request N+1 starts with request N."""
    with openai_server(reply("more text " + END)) as server:
        llm = fast(server.url)
        first = await llm.complete(
            CompletionRequest(PROMPT, stop=[END], max_tokens=50, sampling=SAMPLING)
        )
        grown = PROMPT.extend(first.text + END + "\n<|begin_search_result|>r<|end_search_result|>")
        await llm.complete(CompletionRequest(grown, stop=[END], max_tokens=50, sampling=SAMPLING))
        await llm.aclose()
    a, b = (body["prompt"] for body in server.completion_requests)
    assert a == chatml(PROMPT.messages)
    assert b.startswith(a) and b == a + grown.continuation


async def test_server_template_used_and_rendered_once() -> None:
    def template(messages: list[dict[str, str]]) -> str:
        return "".join(f"[{m['role']}]{m['content']}" for m in messages) + "[assistant]"

    with openai_server(reply("ok"), apply_template=template) as server:
        llm = fast(server.url, chat_template=None)
        await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.complete(
            CompletionRequest(PROMPT.extend("so far"), stop=[], max_tokens=5, sampling=SAMPLING)
        )
        await llm.aclose()
    first, second = (body["prompt"] for body in server.completion_requests)
    assert first == "[system]Be brief.[user]Capital of France?[assistant]"
    assert second == first + "so far"
    assert [p for p, _ in server.requests].count("/apply-template") == 1


async def test_template_server_without_support_is_a_clear_error() -> None:
    with openai_server(reply("ok")) as server:
        llm = fast(server.url, chat_template="server")
        with pytest.raises(ServerTemplateUnavailable, match="chat_template"):
            await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.aclose()


async def test_auto_template_falls_back_to_chatml() -> None:
    with openai_server(reply("ok")) as server:
        llm = fast(server.url, chat_template=None)
        await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.aclose()
    assert server.completion_requests[0]["prompt"] == chatml(PROMPT.messages)


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
async def test_chat_mode_continues_the_final_assistant_message(streaming: bool) -> None:
    # A prefill (OpenRouter's way, or asked for); llama.cpp chains go raw (next test).
    with openai_server(reply(" Paris." + END), return_stop=False) as server:
        llm = fast(server.url, api_mode="chat", stream=streaming, continuation="prefill")
        done = await llm.complete(
            CompletionRequest(
                PROMPT.extend("The capital is"), stop=[END], max_tokens=20, sampling=SAMPLING
            ),
            on_text=(lambda _: None) if streaming else None,
        )
        await llm.aclose()
    body = server.completion_requests[0]
    assert body["messages"][-1] == {"role": "assistant", "content": "The capital is"}
    assert done.text == " Paris." and done.stop == END


async def test_chat_mode_continues_a_llamacpp_chain_by_raw_completions() -> None:
    """llama.cpp refuses a prefill while thinking, and re-renders a prefilled turn
    without the <think> its prompt opened when it does not take the template for a
    thinking one: its chains go on raw, the chain appended to the rendered prompt."""
    with openai_server(reply(" Paris." + END), return_stop=False) as server:
        llm = fast(server.url, api_mode="chat")
        done = await llm.complete(
            CompletionRequest(
                PROMPT.extend("The capital is"), stop=[END], max_tokens=20, sampling=SAMPLING
            )
        )
        await llm.aclose()
    body = server.completion_requests[0]
    assert body["prompt"] == chatml(PROMPT.messages) + "The capital is"
    assert done.text == " Paris." and done.continuation == "raw"


async def test_chat_mode_asks_vllm_to_continue() -> None:
    with openai_server(reply("x")) as server:
        llm = fast(server.url, api_mode="chat")
        await llm.complete(
            CompletionRequest(PROMPT.extend("so far"), stop=[], max_tokens=5, sampling=SAMPLING)
        )
        await llm.aclose()
    body = server.completion_requests[0]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


async def test_429_then_success_honours_retry_after() -> None:
    """Wire-level (httpx.MockTransport): the waits are recorded, not slept."""
    busy = httpx.Response(429, json={"error": {"message": "busy"}}, headers={"Retry-After": "0.2"})
    fine = httpx.Response(200, json={"choices": [{"text": "fine", "finish_reason": "stop"}]})
    replies = [busy, busy, fine]

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"data": [{"id": "m", "owned_by": "vllm"}]})
        return replies.pop(0)

    wire = Wire([answer])
    llm = OpenAILLM(
        "http://model.test/v1",
        chat_template="chatml",
        stream=False,
        transport=wire.transport,
        retry=wire.policy(retries=3),
    )
    done = await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
    await llm.aclose()
    assert done.text == "fine"
    assert len([r for r in wire.requests if r.method == "POST"]) == 3
    assert wire.sleeps == [0.2, 0.2]  # two waits of Retry-After: 0.2


async def test_persistent_500_raises_after_retries() -> None:
    with openai_server(reply("never"), always_fail_status=500) as server:
        llm = fast(server.url, retries=2)
        with pytest.raises(BackendError) as info:
            await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.aclose()
    assert info.value.status == 500 and info.value.retryable
    assert server.url in str(info.value)
    assert len(server.completion_requests) == 3  # first try + 2 retries


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
async def test_malformed_json_is_a_backend_error(streaming: bool) -> None:
    with openai_server(reply("x"), malformed=True) as server:
        llm = fast(server.url, stream=streaming)
        with pytest.raises(BackendError, match="malformed response"):
            await llm.complete(
                CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING),
                on_text=(lambda _: None) if streaming else None,
            )
        await llm.aclose()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_unreachable_server_names_the_url_quickly() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    llm = fast(url, retries=1)
    started = time.monotonic()
    with pytest.raises(BackendError, match="cannot reach") as info:
        await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
    await llm.aclose()
    assert url in str(info.value) and time.monotonic() - started < 5


async def test_an_error_naming_the_url_never_shows_its_password() -> None:
    port = _closed_port()
    llm = fast(f"http://user:sekret-pass@127.0.0.1:{port}/v1", retries=1)
    with pytest.raises(BackendError, match="cannot reach") as info:
        await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
    await llm.aclose()
    assert "sekret" not in str(info.value) and f"http://127.0.0.1:{port}/v1" in str(info.value)


@pytest.mark.parametrize("words", [OVERFLOW_SERVING, OVERFLOW_ENGINE], ids=["serving", "engine"])
async def test_context_overflow_is_typed(words: str) -> None:
    with openai_server(reply("x"), context_length=50, overflow_text=words) as server:
        llm = fast(server.url)
        assert await llm.context_length() == 50
        with pytest.raises(ContextOverflowError):
            await llm.complete(
                CompletionRequest(
                    PROMPT.extend("y" * 400), stop=[], max_tokens=5, sampling=SAMPLING
                )
            )
        await llm.aclose()


async def test_models_discovery_and_unknown_model() -> None:
    with openai_server(reply("x"), models=["a-model", "b-model"]) as server:
        llm = fast(server.url)
        await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        assert llm.model == "a-model" and await llm.context_length() is None
        wrong = fast(server.url, model="nope")
        with pytest.raises(BackendError, match="unknown model 'nope'"):
            await wrong.complete(
                CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING)
            )
        await llm.aclose()
        await wrong.aclose()


async def test_context_length_falls_back_to_settings() -> None:
    with openai_server(reply("x")) as server:
        llm = fast(server.url, context_length=4096)
        assert await llm.context_length() == 4096
        await llm.aclose()


async def test_api_key_is_sent_as_bearer_and_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-test-do-not-leak-123"
    monkeypatch.setenv("FAKE_KEY_VAR", secret)
    with openai_server(reply("x"), always_fail_status=401) as server:
        settings = Settings(base_url=[server.url], api_key_env="FAKE_KEY_VAR", retries=0)
        llm = llms.openai(settings)
        assert isinstance(llm, LLM)
        with pytest.raises(BackendError) as info:
            await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.aclose()
    assert all(h.get("authorization") == f"Bearer {secret}" for h in server.headers)
    assert secret not in str(info.value) and secret not in repr(info.value)
    assert info.value.status == 401 and not info.value.retryable


async def test_reader_role_uses_reader_settings() -> None:
    with openai_server(reply("x"), models=["main", "small"]) as server:
        settings = Settings(base_url=["http://127.0.0.1:9/v1"], reader_base_url=server.url)
        settings = settings.model_copy(update={"model": "main", "reader_model": "small"})
        reader = llms.openai(settings, role="reader")
        main = llms.openai(settings)
        assert reader.base_urls == [server.url] and reader.model == "small"
        assert main.base_urls == ["http://127.0.0.1:9/v1"] and main.model == "main"
        await reader.aclose()
        await main.aclose()


async def test_strict_server_gets_standard_fields_only() -> None:
    """A server that rejects a non-standard field is asked again with standard ones only."""
    with openai_server(reply("x"), reject_fields=("top_k",)) as server:
        llm = fast(server.url)
        done = await llm.complete(
            CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING)
        )
        await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.aclose()
    first, second, third = server.completion_requests
    assert "top_k" in first and "top_k" not in second and "top_k" not in third
    assert done.text == "x"


async def test_api_openai_com_gets_no_extras() -> None:
    from search_o1.llm.openai.wire import build_body

    request = CompletionRequest(PROMPT, stop=["s"], max_tokens=3, sampling=SAMPLING, grammar="g")
    body = build_body(request, model="m", prompt="p", stream=False, kind="openai")
    assert set(body) == {"model", "prompt", "stop", "max_tokens", "temperature", "top_p", "seed"}


async def test_read_timeout_is_reported_not_retried() -> None:
    def slow(body: dict[str, Any]) -> str:
        time.sleep(5.0)  # far past the client's 0.2 s, so waiting for it would show
        return "late"

    with openai_server(slow) as server:
        llm = fast(server.url, timeout_s=0.2, retries=3)
        started = time.monotonic()
        with pytest.raises(BackendError, match="read timeout"):
            await llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
        await llm.aclose()
    assert time.monotonic() - started < 4.0  # gave up long before the reply came
    assert len(server.completion_requests) == 1


def test_missing_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="base-url"):
        llms.openai(Settings(backend="openai"))


def test_one_server_per_client_several_need_a_pool() -> None:
    """Routing over several servers is PoolLLM's (pipeline.build_llm builds one)."""
    with pytest.raises(ValueError, match="PoolLLM"):
        OpenAILLM(["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"])
    with pytest.raises(ConfigError, match="build_llm"):
        llms.openai(Settings(base_url=["http://a:1/v1", "http://b:1/v1"]))
    llm = OpenAILLM(["http://127.0.0.1:9/v1/"])  # a one-element list, as before
    assert llm.base_url == "http://127.0.0.1:9/v1" and llm.base_urls == [llm.base_url]


async def test_streamed_requests_reuse_their_connection() -> None:
    """The body is read past `[DONE]` to its end, so the connection goes back to the pool."""
    with openai_server(reply("a streamed answer")) as server:
        llm = fast(server.url)
        for _ in range(3):
            await llm.complete(
                CompletionRequest(PROMPT, stop=[], max_tokens=20, sampling=SAMPLING),
                on_text=lambda _: None,
            )
        await llm.aclose()
    assert len(server.completion_requests) == 3
    assert len(set(server.clients)) == 1  # discovery and all three completions


@asynccontextmanager
async def raw_server(
    *, hold_until: int = 0, hold_s: float = 0.0, stream_open_after_done: bool = False
) -> AsyncIterator[dict[str, Any]]:
    """A minimal HTTP/1.1 model server in the test's loop; yields {"url", "peak"}.

    Each completion waits until `hold_until` completions are open at once (at most
    `hold_s`), so "peak" is the most requests the client had in flight. With
    `stream_open_after_done`, completions are streamed and the body never ends after
    `data: [DONE]`.
    """
    state: dict[str, Any] = {"open": 0, "peak": 0}
    everyone = asyncio.Event()

    def answer(payload: dict[str, Any]) -> bytes:
        data = json.dumps(payload).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
        return head.encode() + b"\r\n\r\n" + data

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                await reader.readexactly(int(length.group(1)) if length else 0)
                if not head.startswith(b"POST"):
                    writer.write(answer({"data": [{"id": "m", "owned_by": "vllm"}]}))
                elif stream_open_after_done:
                    chunk = b'data: {"choices": [{"text": "hi", "finish_reason": "stop"}]}\n\n'
                    chunk += b"data: [DONE]\n\n"
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
                    writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                    await asyncio.sleep(30)  # never sends the terminating chunk
                else:
                    state["open"] += 1
                    state["peak"] = max(state["peak"], state["open"])
                    if state["open"] >= hold_until:
                        everyone.set()
                    with suppress(TimeoutError):
                        await asyncio.wait_for(everyone.wait(), hold_s)
                    state["open"] -= 1
                    choice = {"text": "ok", "finish_reason": "stop"}
                    writer.write(answer({"choices": [choice], "usage": {"prompt_tokens": 3}}))
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    state["url"] = f"http://127.0.0.1:{port}/v1"
    try:
        yield state
    finally:
        server.close()


async def test_more_requests_in_flight_than_httpx_allows_by_default() -> None:
    """httpx caps a client at 100 connections; the scheduler sends up to 256 at once."""
    n = 150
    async with raw_server(hold_until=n, hold_s=5.0) as server:
        llm = fast(server["url"])
        done = await asyncio.gather(
            *(
                llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
                for _ in range(n)
            )
        )
        await llm.aclose()
    assert [d.text for d in done] == ["ok"] * n
    assert server["peak"] == n  # all at the server at once (httpx alone would allow 100)


async def test_max_connections_caps_requests_in_flight() -> None:
    """The cap holds across the client's several connection pools."""
    async with raw_server(hold_until=1000, hold_s=0.3) as server:
        llm = fast(server["url"], max_connections=20)
        await asyncio.gather(
            *(
                llm.complete(CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING))
                for _ in range(30)
            )
        )
        await llm.aclose()
    assert server["peak"] == 20


async def test_a_stream_held_open_after_done_does_not_hang() -> None:
    async with raw_server(stream_open_after_done=True) as server:
        llm = fast(server["url"])
        started = time.monotonic()
        done = await llm.complete(
            CompletionRequest(PROMPT, stop=[], max_tokens=5, sampling=SAMPLING),
            on_text=lambda _: None,
        )
        await llm.aclose()
    assert done.text == "hi" and time.monotonic() - started < 10.0  # the body stays open 30 s


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
async def test_lone_surrogates_in_prompt_and_reply_become_replacement_characters(
    streaming: bool,
) -> None:
    """A lone surrogate is legal in a str and in JSON text (`"\\ud800"`), but not in UTF-8:
    in a prompt it would fail the request's encoding, in a reply a later write. Both go
    through as U+FFFD, and the completion counts them."""
    pieces: list[str] = []
    prompt = Prompt((Message("user", "odd \ud800 question"),), "so far \udfff")
    with openai_server(reply("an odd \ud800 answer")) as server:
        llm = fast(server.url, stream=streaming)
        on_text = pieces.append if streaming else None
        done = await llm.complete(CompletionRequest(prompt, max_tokens=100), on_text=on_text)
        await llm.aclose()
    assert done.text == "an odd \ufffd answer" and done.replaced == 3
    assert server.completion_requests[0]["prompt"].endswith("so far \ufffd")
    assert "odd \ufffd question" in server.completion_requests[0]["prompt"]
    assert "".join(pieces).encode() == (done.text.encode() if streaming else b"")
