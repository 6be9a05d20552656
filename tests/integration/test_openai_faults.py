"""The `openai` backend against loopback servers that misbehave on purpose.

A 200 that is not a completion, a stream cut off or reset midway, a stream that stalls,
a request that overruns its deadline, and a server that is not an OpenAI API at all:
each ends as a typed BackendError (retried when that can help), never as the model's
answer and never as a long wait.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.servers.openai_server import openai_server
from tests.servers.static_site import static_web_server

from search_o1._http import RetryPolicy
from search_o1.errors import BackendError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.types import Message, Prompt, Sampling

ANSWER = "Paris is the capital of France, so the answer is \\boxed{Paris}."
PROMPT = Prompt((Message("user", "Capital of France?"),))
REQUEST = CompletionRequest(PROMPT, max_tokens=100, sampling=Sampling(seed=1))


def client(url: str, *, retries: int = 2, **kw: Any) -> OpenAILLM:
    kw.setdefault("chat_template", "chatml")
    policy = RetryPolicy(retries=retries, backoff_s=0.001, max_backoff_s=0.005)
    return OpenAILLM(url, retry=policy, connect_timeout_s=2.0, **kw)


def first(kind: str) -> Any:
    return lambda n: kind if n == 0 else None


def always(kind: str) -> Any:
    return lambda n: kind


@pytest.mark.parametrize("kind", ["html200", "empty_choices", "truncate", "reset"])
async def test_a_200_that_is_not_a_completion_is_retried(kind: str) -> None:
    with openai_server(lambda body: ANSWER, fault=first(kind)) as server:
        llm = client(server.url)
        done = await llm.complete(REQUEST)
        await llm.aclose()
    assert done.text == ANSWER and done.finish == "stop"
    assert len(server.completion_requests) == 2


@pytest.mark.parametrize("kind", ["html200", "empty_choices"])
async def test_a_non_streamed_non_completion_is_retried_too(kind: str) -> None:
    with openai_server(lambda body: ANSWER, fault=first(kind)) as server:
        llm = client(server.url, stream=False)
        done = await llm.complete(REQUEST)
        await llm.aclose()
    assert done.text == ANSWER and len(server.completion_requests) == 2
    assert not any(body.get("stream") for body in server.completion_requests)


@pytest.mark.parametrize("kind", ["html200", "empty_choices", "truncate", "reset"])
async def test_a_persistent_non_completion_fails_after_the_retries(kind: str) -> None:
    with openai_server(lambda body: ANSWER, fault=always(kind)) as server:
        llm = client(server.url, retries=2)
        with pytest.raises(BackendError) as e:
            await llm.complete(REQUEST)
        await llm.aclose()
    assert e.value.retryable and "\n" not in str(e.value)
    assert len(server.completion_requests) == 3  # the first try and two retries
    if kind == "html200":
        assert "HTML page titled 'Bad Gateway'" in str(e.value)
        assert "<body>" not in str(e.value)  # one line about the page, not the page


@pytest.mark.parametrize("kind", ["truncate", "reset"])
async def test_a_cut_raw_prompt_stream_is_continued_from_its_text(kind: str) -> None:
    """What was shown live stays true: the next request extends the prompt by exactly
    the text received, and the pieces shown add up to the answer."""
    shown: list[str] = []
    with openai_server(lambda body: ANSWER, fault=first(kind)) as server:
        llm = client(server.url)
        done = await llm.complete(REQUEST, on_text=shown.append)
        await llm.aclose()
    cut, again = server.completion_requests
    kept = again["prompt"].removeprefix(cut["prompt"])
    assert kept and ANSWER.startswith(kept) and again["max_tokens"] < cut["max_tokens"]
    assert done.text == ANSWER and "".join(shown) == ANSWER


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_generation_the_server_aborted_is_continued_not_taken_as_done(
    stream: bool,
) -> None:
    """vLLM and SGLang end a generation their engine aborted with finish_reason "abort"
    (DeepSeek: "insufficient_system_resource"): the text so far is no finished answer,
    so a raw prompt goes on from it, as after a cut stream."""
    with openai_server(lambda body: ANSWER, fault=first("abort")) as server:
        llm = client(server.url, stream=stream)
        done = await llm.complete(REQUEST)
        await llm.aclose()
    cut, again = server.completion_requests
    kept = again["prompt"].removeprefix(cut["prompt"])
    assert kept and ANSWER.startswith(kept) and again["max_tokens"] < cut["max_tokens"]
    assert done.text == ANSWER and done.finish == "stop"


async def test_an_aborted_chat_generation_is_asked_again() -> None:
    with openai_server(lambda body: ANSWER, fault=first("abort")) as server:
        llm = client(server.url, api_mode="chat")
        done = await llm.complete(REQUEST)
        await llm.aclose()
    assert done.text == ANSWER and len(server.completion_requests) == 2


@pytest.mark.parametrize(
    ("api_mode", "stream"),
    [("completions", True), ("completions", False), ("chat", True), ("chat", False)],
)
async def test_a_filtered_reply_fails_in_one_line_and_is_not_asked_again(
    api_mode: str, stream: bool
) -> None:
    """OpenAI's, DeepSeek's and SGLang's content filters end a reply with finish_reason
    "content_filter": half a chain, and asked again it would be filtered again. The call
    fails saying so (it was taken as the model's own end, with no word of why)."""
    with openai_server(lambda body: ANSWER, fault=always("content_filter")) as server:
        llm = client(server.url, api_mode=api_mode, stream=stream)
        with pytest.raises(BackendError, match="content filter stopped the reply") as info:
            await llm.complete(REQUEST)
        await llm.aclose()
    assert not info.value.retryable and len(server.completion_requests) == 1


async def test_a_request_lost_on_a_dead_kept_alive_connection_is_resent_free() -> None:
    """A server that closed a kept-alive connection just as a request came on it (its
    idle timeout, a restart) never handled that request: it is resent on a new
    connection without spending a retry, so even a client with no retries gets its
    answer."""
    with openai_server(lambda body: ANSWER, drop_reused=1) as server:
        llm = client(server.url, retries=0)
        answers = [await llm.complete(REQUEST) for _ in range(2)]
        await llm.aclose()
    assert [done.text for done in answers] == [ANSWER, ANSWER]
    assert server.dropped == 1 and len(server.completion_requests) == 2
    assert len(set(server.clients)) == 2  # the resend came on a new connection


async def test_a_cut_chat_stream_is_resent_only_when_no_one_saw_it() -> None:
    with openai_server(lambda body: ANSWER, fault=first("reset")) as server:
        unseen = client(server.url, api_mode="chat")
        done = await unseen.complete(REQUEST)
        await unseen.aclose()
    assert done.text == ANSWER and len(server.completion_requests) == 2
    with openai_server(lambda body: ANSWER, fault=first("reset")) as server:
        watched = client(server.url, api_mode="chat")
        with pytest.raises(BackendError, match="connection lost mid-stream") as e:
            await watched.complete(REQUEST, on_text=lambda _: None)
        await watched.aclose()
    assert not e.value.retryable and len(server.completion_requests) == 1


async def test_a_stalled_stream_is_an_error_not_a_wait() -> None:
    with openai_server(lambda body: ANSWER, fault=always("stall"), stall_s=3.0) as server:
        llm = client(server.url, stall_timeout_s=0.2)
        with pytest.raises(BackendError, match=r"stream stalled: nothing for 0\.2 s") as e:
            await llm.complete(REQUEST)
        await llm.aclose()
    assert not e.value.retryable and len(server.completion_requests) == 1


async def test_a_request_past_its_deadline_is_an_error() -> None:
    with openai_server(lambda body: ANSWER, fault=always("stall"), stall_s=3.0) as server:
        llm = client(server.url, deadline_s=0.3, stall_timeout_s=None)
        with pytest.raises(BackendError, match=r"no complete answer within 0\.3 s") as e:
            await llm.complete(REQUEST)
        await llm.aclose()
    assert not e.value.retryable and len(server.completion_requests) == 1


@pytest.mark.parametrize("kind", ["html404", "html501"])
async def test_an_html_error_page_gets_one_line_and_no_retries(kind: str) -> None:
    with openai_server(lambda body: ANSWER, fault=always(kind)) as server:
        llm = client(server.url, retries=3)
        with pytest.raises(BackendError) as e:
            await llm.complete(REQUEST)
        await llm.aclose()
    message = str(e.value)
    assert "\n" not in message and "<html>" not in message
    assert "HTML page titled 'Bad Gateway'" in message and "OpenAI-compatible" in message
    # /completions, then the chat fallback: one request each, neither retried.
    paths = [path for path, _ in server.requests if "completions" in path]
    assert paths == ["/v1/completions", "/v1/chat/completions"]


async def test_a_static_web_server_is_named_as_not_an_openai_api(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html><title>My files</title></html>")
    with static_web_server(tmp_path) as url:
        llm = client(url, retries=3)
        with pytest.raises(BackendError) as e:
            await llm.complete(REQUEST)
        await llm.aclose()
    message = str(e.value)
    assert e.value.status == 501 and not e.value.retryable
    assert "\n" not in message and len(message) < 400
    assert "SimpleHTTP" in message and "expected an OpenAI-compatible JSON API" in message
