"""The serve layer's pure parts: request parsing, response shapes, the limiter, CLI guards."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from search_o1.cli import cli
from search_o1.serve import chat_completions as wire
from search_o1.serve.retrieve import parse_retrieve
from search_o1.serve.runs import Limiter, QueueFull
from search_o1.types import FinishReason, Trace


def parse(**body: object) -> wire.ChatRequest:
    base: dict[str, object] = {"model": "search-o1", "messages": [{"role": "user", "content": "q"}]}
    return wire.parse_chat_request({**base, **body}, model_name="search-o1")


def test_overrides_and_extension_fields() -> None:
    req = parse(temperature=0, top_p=0.9, max_completion_tokens=64, task="math", stream=True)
    assert req.overrides == {"temperature": 0.0, "top_p": 0.9, "max_tokens": 64}
    assert req.task == "math" and req.stream and req.method == "search-o1"
    assert parse(unknown_field=[1, 2]).overrides == {}  # ignored, as OpenAI does


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"model": "other"}, 404),
        ({"n": 2}, 400),
        ({"top_p": 0}, 400),
        ({"stream": "yes"}, 400),
        ({"max_tokens": True}, 400),
        ({"messages": [{"role": "user", "content": "  "}]}, 400),
        ({"messages": [{"role": "user", "content": 5}]}, 400),
    ],
)
def test_refused_requests(body: dict[str, object], status: int) -> None:
    with pytest.raises(wire.WireError) as e:
        parse(**body)
    assert e.value.status == status and e.value.body()["error"]["message"]


def test_content_parts_are_joined() -> None:
    parts = [
        {"type": "text", "text": "Who wrote"},
        {"type": "image_url"},
        {"type": "text", "text": "Tosca?"},
    ]
    assert wire.question_from_messages([{"role": "user", "content": parts}]) == "Who wrote\nTosca?"


def test_finish_reason_and_fallback_answer() -> None:
    trace = Trace("q", finish_reason=FinishReason.MAX_TOKENS)
    assert wire.finish_reason(trace) == "length"
    trace.finish_reason = FinishReason.NO_ANSWER
    # No answer is said in words (it was "", or the chain's tail when there was one).
    assert wire.finish_reason(trace) == "stop" and wire.answer_text(trace) == (
        "No answer: the model gave no final answer. The reasoning is in reasoning_content."
    )


def test_retrieve_parsing() -> None:
    assert parse_retrieve({"queries": "one"}).queries == ["one"]
    assert parse_retrieve({"queries": ["a"], "topk": 5, "return_scores": True}).topk == 5
    for bad in (
        {"queries": [1]},
        {"queries": ["a"], "topk": 1000},
        {"queries": ["a"], "return_scores": 1},
    ):
        with pytest.raises(wire.WireError):
            parse_retrieve(bad)


async def test_limiter_admits_queues_refuses_and_releases() -> None:
    limiter = Limiter(1, 1)
    first, second = limiter.admit(), limiter.admit()
    with pytest.raises(QueueFull):
        limiter.admit()
    async with first:
        waiting = asyncio.create_task(second.__aenter__())
        await asyncio.sleep(0.01)
        assert not waiting.done() and limiter.stats.queued == 1 and limiter.stats.running == 1
    await waiting
    assert limiter.stats.running == 1 and limiter.stats.queued == 0
    second.release()
    second.release()  # idempotent
    assert limiter.stats.running == 0
    limiter.admit().release()  # a ticket that never ran gives its place back
    assert limiter.stats.queued == 0 and limiter._admitted == 0


def test_serve_refuses_a_public_host_without_a_key() -> None:
    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--auth-key-env" in result.output


def test_serve_refuses_an_empty_key_variable() -> None:
    result = CliRunner().invoke(cli, ["serve", "--auth-key-env", "SEARCH_O1_TEST_NO_SUCH_VAR"])
    assert result.exit_code == 2 and "empty" in result.output


def test_view_refuses_a_folder_without_a_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["view", str(tmp_path)])
    assert result.exit_code == 2 and "not a run directory" in result.output
