"""Reasoning fields and chat continuation: the pure wire functions."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

from search_o1.llm import reasoning as rsn
from search_o1.llm.openai import continuation as cont
from search_o1.llm.openai import discovery, wire


@pytest.mark.parametrize(
    ("holder", "expected"),
    [
        ({"content": "a", "reasoning_content": "think"}, "think"),  # SGLang, DeepSeek
        ({"content": None, "reasoning": "think"}, "think"),  # vLLM >= 0.11, Ollama
        ({"reasoning": "think", "reasoning_content": "think"}, "think"),  # vLLM 0.11: once
        ({"reasoning": None, "reasoning_details": [{"type": "reasoning.text", "text": "t"}]}, "t"),
        ({"reasoning_details": [{"type": "reasoning.summary", "summary": "s"}]}, "s"),
        ({"reasoning_details": [{"type": "reasoning.encrypted", "data": "xx"}]}, ""),
        ({"content": "only"}, ""),
        (None, ""),
    ],
)
def test_reasoning_text_reads_every_field_once(holder: Any, expected: str) -> None:
    assert wire.reasoning_text(holder) == expected


def test_reply_keeps_thinking_apart_with_its_token_count() -> None:
    payload = {
        "choices": [
            {
                "message": {"content": None, "reasoning_content": "hm <q>x"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 4}},
    }
    reply = wire.parse_reply(payload)
    assert (reply.text, reply.reasoning, reply.reasoning_tokens) == ("", "hm <q>x", 4)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_stream_joins_reasoning_then_content_into_chain_text() -> None:
    state = wire.StreamState(rsn.ChainJoiner(thinking=False))
    pieces = [
        state.feed(_chunk({"role": "assistant", "content": ""})),
        state.feed(_chunk({"reasoning_content": "Let me ", "content": None})),  # DeepSeek
        state.feed(_chunk({"reasoning_content": "see.\n", "content": None})),
        state.feed(_chunk({"content": "\n\nIt is 4."})),
        state.feed(_chunk({}, "stop")),
    ]
    assert pieces == ["", "<think>\nLet me ", "see.\n", "</think>\n\nIt is 4.", ""]
    reply = state.reply()
    assert (reply.reasoning, reply.text) == ("Let me see.\n", "\n\nIt is 4.")
    assert rsn.join_reply(False, reply.reasoning, reply.text) == "".join(pieces)


def test_continuing_thinking_opens_no_second_think() -> None:
    state = wire.StreamState(rsn.ChainJoiner(thinking=True))
    assert state.feed(_chunk({"reasoning": "more"})) == "more"
    assert rsn.join_reply(True, "more", "") == "more"


def test_content_without_reasoning_is_raw_text() -> None:
    # A server with no reasoning parser: whatever the model wrote, tags included.
    assert rsn.join_reply(True, "", "still thinking</think>ok") == "still thinking</think>ok"
    assert rsn.join_reply(False, "", "<think>\nhm") == "<think>\nhm"


def test_models_say_which_server() -> None:
    for owner in ("vllm", "sglang", "llamacpp", "deepseek"):
        assert wire.parse_models({"data": [{"id": "m", "owned_by": owner}]}).kind == owner
    openrouter = {"data": [{"id": "deepseek/deepseek-r1", "canonical_slug": "x"}]}
    assert wire.parse_models(openrouter, host_kind="openrouter").kind == "openrouter"
    assert discovery.host_kind("https://openrouter.ai/api/v1") == "openrouter"
    assert discovery.host_kind("https://api.openai.com/v1") == "openai"


CHAIN = "<think>\nFirst the designer. <q>x</q>\n\n<result>\nfacts\n</result>\n\n"


def test_vllm_continues_the_final_message_verbatim() -> None:
    msgs, fields = cont.continue_request(
        [{"role": "user", "content": "Q"}], CHAIN, "continue_final", "vllm"
    )
    assert msgs[-1] == {"role": "assistant", "content": CHAIN}
    assert fields == {"continue_final_message": True, "add_generation_prompt": False}


def test_sglang_leaves_out_the_opening_its_template_writes() -> None:
    msgs, fields = cont.continue_request([], CHAIN, "continue_final", "sglang")
    assert msgs[-1]["content"] == CHAIN.removeprefix("<think>\n")
    assert fields == {"continue_final_message": True}


def test_deepseek_prefix_carries_the_thinking_back() -> None:
    msgs, fields = cont.continue_request([], CHAIN, "prefix", "deepseek")
    assert msgs[-1] == {
        "role": "assistant",
        "content": "",
        "prefix": True,
        "reasoning_content": CHAIN.removeprefix("<think>\n"),
    }
    assert fields == {}
    closed = "<think>\nhm</think>\n\nSo <q>y"
    assert (
        cont.continue_request([], closed, "prefix", "deepseek")[0][-1]["content"] == "\n\nSo <q>y"
    )
    plan = cont.chat_plan("http://h:1/v1", "deepseek", "prefix", [], CHAIN)
    assert plan.url == "http://h:1/beta/chat/completions" and plan.thinking


def test_nothing_to_continue_is_a_plain_chat_request() -> None:
    plan = cont.chat_plan("http://h:1/v1/", "vllm", "continue_final", [{"role": "user"}], "")
    assert plan.url == "http://h:1/v1/chat/completions"
    assert (plan.messages, plan.fields, plan.how, plan.thinking) == (
        [{"role": "user"}],
        {},
        None,
        False,
    )


@pytest.mark.parametrize(
    "message",
    [
        "Assistant response prefill is incompatible with enable_thinking.",
        "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
        "prefix completion is only available at the beta endpoint",
    ],
)
def test_refusals_to_continue_are_recognised(message: str) -> None:
    assert cont.rejects_continuation(400, message)
    assert not cont.rejects_continuation(500, message)
    assert not cont.rejects_continuation(400, "maximum context length is 4096 tokens")


def test_doctests_of_the_moved_rules() -> None:
    # The continuation rules, host kinds and reasoning fields left `llm.reasoning` for the
    # openai package; their examples still hold there.
    for module in (cont, discovery, wire):
        assert doctest.testmod(module).failed == 0
