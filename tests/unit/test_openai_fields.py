"""Fields a server refuses are learned from its 400s: OpenAI's reasoning models want
`max_completion_tokens` and no sampling fields; a strict server no extensions; a refused
stop string means the marker scheme cannot run there."""

from __future__ import annotations

import doctest
import json
from typing import Any

import httpx
import pytest
from tests.wire import Wire

from search_o1.errors import BackendError, ConfigError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.llm.openai import fields as _openai_fields
from search_o1.llm.openai.fields import FieldRules, refused_field
from search_o1.types import Message, Prompt, Sampling

PROMPT = Prompt((Message("user", "q"),))
SAMPLING = Sampling(temperature=0.7, top_p=0.8)


def openai_400(field: str, message: str, code: str) -> httpx.Response:
    error = {"message": message, "type": "invalid_request_error", "param": field, "code": code}
    return httpx.Response(400, json={"error": error})


MAX_TOKENS = openai_400(
    "max_tokens",
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
    "unsupported_parameter",
)
TEMPERATURE = openai_400(
    "temperature",
    "Unsupported value: 'temperature' does not support 0.7 with this model. "
    "Only the default (1) value is supported.",
    "unsupported_value",
)
STOP = openai_400(
    "stop",
    "Unsupported parameter: 'stop' is not supported with this model.",
    "unsupported_parameter",
)
ANSWER = httpx.Response(
    200, json={"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
)


def test_doctests() -> None:
    result = doctest.testmod(_openai_fields)
    assert result.failed == 0 and result.attempted == 4


def test_each_refusal_teaches_once_and_real_errors_teach_nothing() -> None:
    rules = FieldRules()
    assert rules.learn(400, "Unrecognized request argument supplied: top_k") == FieldRules(
        extras=False
    )
    tokens = rules.learn(400, str(MAX_TOKENS.json()["error"]["message"]))
    assert tokens == FieldRules(completion_tokens=True)
    assert tokens.learn(400, "Unsupported parameter: 'max_tokens' is not supported") is None
    hot = rules.learn(400, "Unsupported value: 'temperature' does not support 0.7")
    assert hot == FieldRules(dropped=frozenset({"temperature"}))
    assert hot.learn(400, "Unsupported value: 'temperature' does not support 0.7") is None
    assert rules.learn(500, "Unsupported parameter: 'top_p'") is None  # not a refusal
    assert rules.learn(400, "This model's maximum context length is 4096 tokens") is None
    assert rules.learn(400, "Unsupported parameter: 'stop' is not supported") is None
    assert refused_field("Unsupported parameter: 'stop' is not supported") == "stop"


def test_api_openai_com_is_sent_max_completion_tokens_from_the_start() -> None:
    body = {"model": "o4-mini", "max_tokens": 100, "temperature": 0.7}
    assert FieldRules().apply(body, kind="openai") == {
        "model": "o4-mini",
        "temperature": 0.7,
        "max_completion_tokens": 100,
    }
    assert FieldRules().apply(body, kind="vllm") == body


def _models(request: httpx.Request) -> httpx.Response | None:
    if request.method == "GET":
        return httpx.Response(200, json={"data": [{"id": "o4-mini", "owned_by": "system"}]})
    return None


def _o4_mini(wire: Wire) -> OpenAILLM:
    """A chat client for an OpenAI reasoning model behind an Azure-style endpoint."""
    return OpenAILLM(
        "http://azure.test/v1",
        api_mode="chat",
        stream=False,
        model="o4-mini",
        transport=wire.transport,
        retry=wire.policy(retries=0),
    )


async def test_chat_requests_resend_without_what_the_model_refuses() -> None:
    replies = [MAX_TOKENS, TEMPERATURE, ANSWER, ANSWER]

    def answer(request: httpx.Request) -> httpx.Response:
        return _models(request) or replies.pop(0)

    wire = Wire([answer])
    llm = _o4_mini(wire)
    for _ in range(2):
        done = await llm.complete(CompletionRequest(PROMPT, max_tokens=50, sampling=SAMPLING))
        assert done.text == "ok"
    await llm.aclose()
    posts: list[dict[str, Any]] = [json.loads(r.content) for r in wire.requests if r.content]
    assert [("max_tokens" in b, "temperature" in b) for b in posts] == [
        (True, True),
        (False, True),
        (False, False),
        (False, False),
    ]
    assert posts[-1]["max_completion_tokens"] == 50 and posts[-1]["top_p"] == 0.8


async def test_a_refused_stop_string_points_to_tools_mode() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return _models(request) or STOP

    wire = Wire([answer])
    llm = _o4_mini(wire)
    request = CompletionRequest(PROMPT, stop=["<|end_search_query|>"], max_tokens=50)
    with pytest.raises(ConfigError, match="use --api-mode tools"):
        await llm.complete(request)
    await llm.aclose()


async def test_a_field_the_rules_cannot_drop_is_the_servers_error() -> None:
    refused = openai_400("n", "Unsupported value: 'n' must be 1", "unsupported_value")

    def answer(request: httpx.Request) -> httpx.Response:
        return _models(request) or refused

    wire = Wire([answer])
    llm = _o4_mini(wire)
    with pytest.raises(BackendError, match="'n' must be 1"):
        await llm.complete(CompletionRequest(PROMPT, max_tokens=5))
    await llm.aclose()
    assert len([r for r in wire.requests if r.method == "POST"]) == 1
