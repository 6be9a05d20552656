"""The tool-call wire format: bodies, whole replies and streamed deltas (pure functions)."""

from __future__ import annotations

import json
from typing import Any

from search_o1.llm.openai.tool_wire import ToolStreamState, parse_tool_reply, tool_body
from search_o1.llm.tools import ToolRequest
from search_o1.tool_chat import ChatMessage, ToolCall, search_tool


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _call_delta(**fields: Any) -> dict[str, Any]:
    return _chunk({"tool_calls": [fields]})


def test_body_offers_the_search_tool_and_echoes_what_the_server_sent() -> None:
    call = ToolCall("c1", "search", '{"query": "q"}', echo={"extra_content": {"g": 1}})
    messages = (
        ChatMessage("user", "question"),
        ChatMessage("assistant", None, (call,), echo={"reasoning_content": "think"}),
        ChatMessage("tool", "facts", tool_call_id="c1"),
    )
    body = tool_body(
        ToolRequest(messages, (search_tool(),), "required", max_tokens=64),
        model="m",
        stream=False,
        kind="unknown",
    )
    assert body["tool_choice"] == "required"
    assert body["tools"][0]["function"]["name"] == "search"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["query"]
    assistant = body["messages"][1]
    assert assistant["reasoning_content"] == "think"
    assert assistant["content"] is None
    assert assistant["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query": "q"}'},
        "extra_content": {"g": 1},
    }
    assert body["messages"][2] == {"role": "tool", "content": "facts", "tool_call_id": "c1"}
    assert body["max_tokens"] == 64 and "stop" not in body


def test_whole_reply_with_calls_reasoning_and_missing_ids() -> None:
    payload = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning": "r",
                    "reasoning_details": [{"type": "reasoning.text", "text": "r"}],
                    "tool_calls": [
                        {"id": "a", "function": {"name": "search", "arguments": '{"query":"x"}'}},
                        {"function": {"name": "search", "arguments": {"query": "y"}}},
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3},
    }
    reply = parse_tool_reply(payload)
    assert reply.finish == "tool_calls" and reply.content == ""
    assert [c.id for c in reply.tool_calls] == ["a", "call_1"]
    assert [c.argument("query") for c in reply.tool_calls] == ["x", "y"]
    assert reply.reasoning == "r"
    assert reply.echo == {
        "reasoning": "r",
        "reasoning_details": [{"type": "reasoning.text", "text": "r"}],
    }
    assert reply.message().tool_calls == reply.tool_calls


def test_stream_assembles_interleaved_parallel_calls_by_index() -> None:
    shown: list[str] = []
    state = ToolStreamState(shown.append)
    chunks = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"reasoning_content": "need "}),
        _chunk({"reasoning_content": "two facts"}),
        _call_delta(
            index=0, id="c0", type="function", function={"name": "search", "arguments": ""}
        ),
        _call_delta(
            index=1, id="c1", type="function", function={"name": "search", "arguments": '{"qu'}
        ),
        _call_delta(index=0, function={"arguments": '{"query": "fi'}),
        _call_delta(index=1, function={"arguments": 'ery": "second"}'}),
        _call_delta(index=0, function={"name": "search", "arguments": 'rst"}'}),
        _chunk({}, "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
    ]
    for c in chunks:
        state.feed(c)
    reply = state.tool_reply()
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("c0", "search", {"query": "first"}),
        ("c1", "search", {"query": "second"}),
    ]
    assert shown == ["need ", "two facts"]
    assert reply.reasoning == "need two facts"
    assert reply.echo == {"reasoning_content": "need two facts"}
    assert (reply.finish, reply.prompt_tokens, reply.completion_tokens) == ("tool_calls", 9, 4)


def test_stream_without_index_starts_a_call_at_each_new_id() -> None:
    state = ToolStreamState()
    state.feed(_call_delta(id="a", function={"name": "search", "arguments": '{"query":'}))
    state.feed(_call_delta(function={"arguments": ' "x"}'}))
    state.feed(_call_delta(id="b", function={"name": "search", "arguments": '{"query": "y"}'}))
    state.feed(_chunk({}, "tool_calls"))
    calls = state.tool_reply().tool_calls
    assert [(c.id, c.argument("query")) for c in calls] == [("a", "x"), ("b", "y")]


def test_stream_merges_reasoning_details_and_keeps_call_extras() -> None:
    state = ToolStreamState()
    for piece in ("thin", "king"):
        detail = {"type": "reasoning.text", "text": piece, "index": 0, "format": "unknown"}
        state.feed(_chunk({"reasoning": piece, "reasoning_details": [detail]}))
    state.feed(
        _chunk({"reasoning_details": [{"type": "reasoning.encrypted", "data": "xyz", "index": 1}]})
    )
    sig = {"google": {"thought_signature": "s"}}
    state.feed(
        _call_delta(
            index=0, id="c", function={"name": "search", "arguments": "{}"}, extra_content=sig
        )
    )
    reply = state.tool_reply()
    assert reply.echo["reasoning"] == "thinking"
    assert reply.echo["reasoning_details"] == [
        {"type": "reasoning.text", "text": "thinking", "index": 0, "format": "unknown"},
        {"type": "reasoning.encrypted", "data": "xyz", "index": 1},
    ]
    assert reply.tool_calls[0].echo == {"extra_content": sig}


def test_a_call_cut_by_max_tokens_is_a_length_finish() -> None:
    state = ToolStreamState()
    state.feed(_call_delta(index=0, id="c", function={"name": "search", "arguments": '{"que'}))
    state.feed(_chunk({}, "length"))
    reply = state.tool_reply()
    assert reply.finish == "length"
    assert reply.tool_calls[0].argument("query") is None
