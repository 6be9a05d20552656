"""The Responses API wire as pure functions: bodies, whole responses, streamed events,
the wire `--tools-api` picks, and a refused reasoning summary learned as a field."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

from search_o1.config import Settings
from search_o1.llm.openai import responses as rw
from search_o1.llm.openai.fields import FieldRules
from search_o1.llm.openai.wire import StreamError
from search_o1.llm.tools import ToolRequest
from search_o1.tool_chat import ChatMessage, ToolCall, search_tool
from search_o1.wiring import llms

REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "encrypted_content": "gAAAA-x",
    "summary": [
        {"type": "summary_text", "text": "First."},
        {"type": "summary_text", "text": "Second."},
    ],
}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_9",
    "name": "search",
    "arguments": '{"query": "Tosca composer"}',
    "status": "completed",
}


def test_the_chooser_doctests() -> None:
    assert doctest.testmod(rw).failed == 0


def test_body_is_stateless_flat_and_sends_turns_back_as_they_came() -> None:
    echoed = ChatMessage("assistant", echo={rw.ECHO: [REASONING, CALL]})
    plain = ChatMessage("assistant", "Let me look.", tool_calls=(ToolCall("c2", "search", "{}"),))
    messages = (
        ChatMessage("system", "Be brief."),
        ChatMessage("user", "Who wrote Tosca?"),
        echoed,
        ChatMessage("tool", "Puccini.", tool_call_id="call_9"),
        plain,
    )
    request = ToolRequest(messages, tools=(search_tool(),), tool_choice="required", max_tokens=77)
    body = rw.request_body(request, model="o4-mini", stream=True)
    assert body["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Who wrote Tosca?"},
        REASONING,
        CALL,
        {"type": "function_call_output", "call_id": "call_9", "output": "Puccini."},
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "c2", "name": "search", "arguments": "{}"},
    ]
    assert body["input"][2] is REASONING  # the very item, not a rebuilt one
    assert body["tools"][0]["name"] == "search" and "function" not in body["tools"][0]
    assert body["tools"][0]["strict"] is False
    assert (body["tool_choice"], body["max_output_tokens"], body["model"]) == (
        "required",
        77,
        "o4-mini",
    )
    assert (body["store"], body["include"], body["stream"]) == (False, [rw.INCLUDE], True)
    assert body["reasoning"] == {"summary": "auto"}
    assert not {"messages", "max_tokens", "seed", "top_k"} & set(body)


def _response(status: str = "completed", **extra: Any) -> dict[str, Any]:
    message = {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": "It is "},
            {"type": "refusal", "refusal": "no"},
            {"type": "output_text", "text": "Puccini."},
        ],
    }
    usage = {"input_tokens": 12, "output_tokens": 34}
    return {"status": status, "output": [REASONING, CALL, message], "usage": usage} | extra


def test_a_whole_response_becomes_a_tool_reply() -> None:
    reply = rw.parse_response(_response())
    assert reply.content == "It is Puccini."
    assert reply.reasoning == "First.\n\nSecond."
    assert reply.tool_calls == (ToolCall("call_9", "search", '{"query": "Tosca composer"}'),)
    assert (reply.finish, reply.prompt_tokens, reply.completion_tokens) == ("tool_calls", 12, 34)
    assert reply.echo == {"output": _response()["output"]}
    assert reply.message().echo["output"][0]["encrypted_content"] == "gAAAA-x"


def test_a_response_cut_by_max_output_tokens_finishes_with_length() -> None:
    cut = _response("incomplete", incomplete_details={"reason": "max_output_tokens"})
    assert rw.parse_response(cut).finish == "length"
    filtered = _response("incomplete", incomplete_details={"reason": "content_filter"})
    assert rw.parse_response(filtered).finish == "tool_calls"


@pytest.mark.parametrize("payload", [{"choices": []}, [], {"output": "x"}])
def test_what_is_not_a_response_is_refused(payload: Any) -> None:
    with pytest.raises(ValueError):
        rw.parse_response(payload)


def test_a_failed_response_says_why() -> None:
    failed = {"status": "failed", "output": [], "error": {"code": "server_error", "message": "x"}}
    with pytest.raises(ValueError, match="server_error: x"):
        rw.parse_response(failed)


def _events() -> list[dict[str, Any]]:
    summary = "response.reasoning_summary_text.delta"
    return [
        {"type": "response.created", "response": {"status": "in_progress", "output": []}},
        {"type": summary, "item_id": "rs_1", "summary_index": 0, "delta": "Fir"},
        {"type": summary, "item_id": "rs_1", "summary_index": 0, "delta": "st."},
        {"type": summary, "item_id": "rs_1", "summary_index": 1, "delta": "Second."},
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{"},
        {"type": "response.output_item.done", "output_index": 1, "item": CALL},
        {"type": "response.output_text.delta", "output_index": 2, "delta": "It is "},
        {"type": "response.output_text.delta", "output_index": 2, "delta": "Puccini."},
        {"type": "response.output_item.done", "output_index": 2, "item": _response()["output"][2]},
    ]


@pytest.mark.parametrize("final_output", [True, False], ids=["final", "items-only"])
def test_a_stream_shows_text_and_summary_live_and_ends_as_the_whole_reply(
    final_output: bool,
) -> None:
    shown: list[str] = []
    thought: list[str] = []
    state = rw.ResponsesStreamState(thought.append)
    final = _response() if final_output else {**_response(), "output": []}
    for event in [*_events(), {"type": "response.completed", "response": final}]:
        piece = state.feed(event)
        if piece:
            shown.append(piece)
    assert "".join(shown) == "It is Puccini."
    assert "".join(thought) == "First.\n\nSecond."
    assert state.reply().finish_reason == "completed"
    assert state.tool_reply() == rw.parse_response(_response())


@pytest.mark.parametrize(
    ("event", "words"),
    [
        (
            {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down."},
            "rate_limit_exceeded: Slow down.",
        ),
        (
            {
                "type": "response.failed",
                "response": {
                    "status": "failed",
                    "error": {"code": "server_error", "message": "Oops"},
                },
            },
            "server_error: Oops",
        ),
    ],
)
def test_failure_events_raise_stream_errors(event: dict[str, Any], words: str) -> None:
    with pytest.raises(StreamError, match=words):
        rw.ResponsesStreamState().feed(event)


def test_a_stream_without_its_final_response_is_no_reply() -> None:
    state = rw.ResponsesStreamState()
    state.feed(_events()[4])
    assert state.reply().finish_reason is None
    with pytest.raises(ValueError, match="without its final response"):
        state.tool_reply()


def test_an_unverified_organisation_loses_the_reasoning_field_once() -> None:
    message = "Your organization must be verified to generate reasoning summaries. Please go to..."
    rules = FieldRules().learn(400, message)
    assert rules is not None and rules.learn(400, message) is None
    assert rules.apply({"reasoning": {"summary": "auto"}, "input": []}, kind="openai") == {
        "input": []
    }
    assert FieldRules().learn(500, message) is None


def test_tools_api_setting_reaches_the_client() -> None:
    settings = Settings(base_url=["http://127.0.0.1:1/v1"], api_mode="tools", tools_api="responses")
    assert llms.openai(settings).tools_api == "responses"
    assert Settings().tools_api == "auto"
