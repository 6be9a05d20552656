"""Thinking templates in raw-prompt mode: the chain starts, and stays, inside `<think>`.

The Jinja templates here are written for these tests and behave like the ones thinking
models ship (generation prompt opening `<think>`; Qwen3's `enable_thinking` switch).
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import httpx

from search_o1 import markers as mk
from search_o1.engine import Engine
from search_o1.llm import reasoning, templates
from search_o1.llm.scripted import ScriptedLLM
from search_o1.search.memory import MemorySearch
from search_o1.types import FinishReason, Hit, Message

USER = [Message("user", "Who designed the Glimmer Bridge?")]
CHATML_TURNS = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
)
# Like Qwen3: the model writes <think> itself; thinking off writes an empty closed block.
HYBRID = CHATML_TURNS + (
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% endif %}{% endif %}"
)
# Like QwQ-32B and the R1 distills: the generation prompt opens the thinking.
OPENS = CHATML_TURNS + "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
# A template that always switches thinking off.
NEVER = CHATML_TURNS + (
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n\n</think>\n\n{% endif %}"
)


def write(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / f"{name}.jinja"
    path.write_text(source, encoding="utf-8")
    return str(path)


def test_hybrid_template_renders_with_thinking_on(tmp_path: Path) -> None:
    prompt = templates.render_jinja(write(tmp_path, "hybrid", HYBRID), USER)
    assert prompt.endswith("<|im_start|>assistant\n") and "</think>" not in prompt


def test_template_that_opens_thinking_is_kept_as_it_is(tmp_path: Path) -> None:
    prompt = templates.render_jinja(write(tmp_path, "opens", OPENS), USER)
    assert prompt.endswith("<|im_start|>assistant\n<think>\n")
    assert prompt.count("<think>") == 1


def test_closed_empty_think_block_is_reopened(tmp_path: Path) -> None:
    prompt = templates.render_jinja(write(tmp_path, "never", NEVER), USER)
    assert prompt.endswith("<|im_start|>assistant\n<think>\n")
    assert "</think>" not in prompt and prompt.count("<think>") == 1


def test_builtins_for_thinking_models() -> None:
    assert templates.render(USER, "qwq").endswith("<|im_start|>assistant\n<think>\n")
    assert templates.render(USER, "deepseek-r1").endswith("<｜Assistant｜><think>\n")
    assert templates.render(USER, "qwen3").endswith("<|im_start|>assistant\n")


async def test_server_rendering_asks_for_thinking() -> None:
    seen: list[tuple[str, dict[str, object]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((request.url.path, body))
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"tokens": [1, 2]})
        if request.url.path == "/detokenize":
            return httpx.Response(
                200, json={"prompt": "<|im_start|>assistant\n<think>\n\n</think>\n\n"}
            )
        return httpx.Response(404, json={"error": "no"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        prompt = await templates.render_on_server(client, "http://vllm", USER, model="m")
    assert prompt == "<|im_start|>assistant\n<think>\n"  # reopened
    kwargs = {path: body.get("chat_template_kwargs") for path, body in seen}
    assert kwargs["/apply-template"] == {"enable_thinking": True}
    assert kwargs["/tokenize"] == {"enable_thinking": True}


async def test_query_after_the_thinking_gets_its_result_inside_it() -> None:
    # A model that closed its thinking, then searched in its answer.
    model = ScriptedLLM(
        [
            "<think>\nI know it.\n</think>\n\nLet me check "
            f"{mk.BEGIN_QUERY}Glimmer designer{mk.END_QUERY}",
            "Reading.\n**Final Information**\n\nDesigned by Orla Venn.",
            "It was Orla Venn.\n</think>\n\n\\boxed{Orla Venn}",
        ]
    )
    search = MemorySearch({"Glimmer designer": [Hit("b1", "Glimmer", "Designed by Orla Venn.")]})
    trace = await Engine(model, search).run("Who designed the Glimmer Bridge?")
    assert trace.finish_reason is FinishReason.ANSWERED and trace.answer == "Orla Venn"
    chain = trace.output
    assert chain.count("<think>") == 1 and chain.count("</think>") == 1
    # The result block sits before the only </think>: inside the thinking.
    assert chain.index(mk.END_RESULT) < chain.index("</think>")
    assert "</think>" in trace.steps[0].text  # the trace keeps what the model wrote


def test_doctests() -> None:
    for module in (templates, reasoning, mk):
        assert doctest.testmod(module).failed == 0
