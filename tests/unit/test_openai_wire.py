"""Pure functions of the OpenAI wire format: discovery, replies, errors."""

from __future__ import annotations

import pytest

from search_o1._http import retry_after_s
from search_o1.llm.openai import wire


def test_vllm_models_give_kind_ids_and_context() -> None:
    payload = {"data": [{"id": "Qwen/QwQ-32B", "owned_by": "vllm", "max_model_len": 32768}]}
    assert wire.parse_models(payload) == wire.ServerInfo("vllm", ("Qwen/QwQ-32B",), 32768)


def test_llamacpp_models_prefer_loaded_context_over_training() -> None:
    entry = {"id": "m", "owned_by": "llamacpp", "meta": {"n_ctx": 4096, "n_ctx_train": 8192}}
    assert wire.parse_models({"data": [entry]}) == wire.ServerInfo("llamacpp", ("m",), 4096)
    assert wire.props_context({"default_generation_settings": {"n_ctx": 2048}}) == 2048


@pytest.mark.parametrize("payload", [None, [], {"data": "x"}, {"data": [1, {"id": ""}]}])
def test_odd_models_payloads_are_empty(payload: object) -> None:
    assert wire.parse_models(payload) == wire.ServerInfo()


def test_llamacpp_verbose_names_the_stop_string() -> None:
    payload = {
        "choices": [{"text": "q", "finish_reason": "stop"}],
        "__verbose": {"stop_type": "word", "stopping_word": "<|end_search_query|>"},
    }
    assert wire.parse_reply(payload).server_stop == "<|end_search_query|>"


def test_vllm_stop_reason_token_id_is_not_a_stop_string() -> None:
    reply = wire.parse_reply(
        {"choices": [{"text": "a", "finish_reason": "stop", "stop_reason": 2}]}
    )
    assert reply.server_stop is None and reply.prompt_tokens is None


@pytest.mark.parametrize("payload", [[], {"choices": []}, {"choices": ["x"]}, "text"])
def test_malformed_replies_raise_value_error(payload: object) -> None:
    with pytest.raises(ValueError):
        wire.parse_reply(payload)


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 4096 tokens. However, you requested 5000",
        "request (9001 tokens) exceeds the available context size (8192 tokens)",
        "Input prompt is too long",
    ],
)
def test_overflow_messages(message: str) -> None:
    assert wire.is_overflow(400, message)


def test_other_400s_are_not_overflow() -> None:
    assert not wire.is_overflow(400, "stop sequences exceed the limit of 4")
    assert not wire.is_overflow(500, "maximum context length")


def test_retry_after_forms() -> None:
    assert retry_after_s("2") == 2.0
    assert retry_after_s("-3") == 0.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after_s("soon") is None and retry_after_s(None) is None


def test_error_message_shapes() -> None:
    assert wire.body_message('{"error": {"message": "bad"}}') == "bad"
    assert wire.body_message('{"detail": "nope"}') == "nope"
    assert wire.body_message("<html>oops</html>") == "<html>oops</html>"
    assert wire.body_message("") == "(empty body)"


def _decode(*chunks: bytes) -> list[bytes]:
    sse = wire.SseDecoder()
    return [data for chunk in chunks for data in sse.feed(chunk)] + sse.flush()


def test_sse_data_lines_only() -> None:
    stream = b': ping\n\nevent: x\ndata: {"a": 1}\n\ndata:[DONE]\n\n'
    assert _decode(stream) == [b'{"a": 1}', b"[DONE]"]


def test_sse_lines_split_anywhere_across_chunks() -> None:
    stream = b'data: {"text": "one"}\r\n\r\ndata: {"text": "two"}\n\ndata: [DONE]\n\n'
    whole = _decode(stream)
    assert whole == [b'{"text": "one"}', b'{"text": "two"}', b"[DONE]"]
    for size in (1, 2, 3, 7):
        assert _decode(*(stream[i : i + size] for i in range(0, len(stream), size))) == whole


def test_sse_bare_cr_ends_a_line_and_a_last_unended_line_is_kept() -> None:
    assert _decode(b"data: a\rdata: b\r", b"\ndata: c") == [b"a", b"b", b"c"]


def test_sse_unicode_line_separators_stay_inside_the_json() -> None:
    """JSON leaves U+2028, U+2029 and U+0085 unescaped; they do not end an SSE line."""
    text = "a\u2028b\u2029c\x85d"
    line = b'data: {"text": "' + text.encode() + b'"}\n\n'
    assert _decode(line) == [b'{"text": "' + text.encode() + b'"}']
