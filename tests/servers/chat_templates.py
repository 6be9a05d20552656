"""The chat templates of three reasoning-model families, as Jinja, for the test servers.

Written for these tests from what the models' `tokenizer_config.json` templates do
(facts file section 9 and 10; read in public copies with the search tool), not copied:
- QWQ (QwQ-32B): ChatML; an assistant turn keeps only its text after the last
  `</think>`; the generation prompt is `<|im_start|>assistant\\n<think>\\n`.
- R1 (DeepSeek-R1 and its distills, after the Feb 2025 update): BOS, the system text,
  then `<｜User｜>` / `<｜Assistant｜>` turns, an assistant turn cut to its text after
  `</think>` and ended by `<｜end▁of▁sentence｜>`; the generation prompt is
  `<｜Assistant｜><think>\\n`.
- QWEN3 (hybrid): ChatML; the generation prompt is `<|im_start|>assistant\\n` (the model
  writes `<think>` itself), with an empty `<think>\\n\\n</think>\\n\\n` when
  `enable_thinking` is false; an assistant turn after the last user query is written
  `<think>\\n{reasoning}\\n</think>\\n\\n{content}` when it is the last message or has
  reasoning (from `reasoning_content`, else split off its content at `</think>`), so
  the last assistant turn always has a closed think block.

`render` runs one through jinja2 as the servers do (`add_generation_prompt`,
`enable_thinking`), and `continue_final` cuts a rendering at the end of the final
message's content, as transformers' `continue_final_message` (used by vLLM) does.
"""

from __future__ import annotations

from typing import Any

import jinja2

QWQ = """\
{%- for message in messages -%}
  {%- if message.role == 'assistant' -%}
    {%- set content = (message.content or '').split('</think>')[-1].lstrip('\\n') -%}
    {{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' -}}
  {%- else -%}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n<think>\\n' -}}{%- endif -%}
"""

R1 = """\
{{- bos_token -}}
{%- for message in messages if message.role == 'system' -%}{{- message.content -}}{%- endfor -%}
{%- for message in messages -%}
  {%- if message.role == 'user' -%}
    {{- '<｜User｜>' + message.content -}}
  {%- elif message.role == 'assistant' -%}
    {%- set content = (message.content or '').split('</think>')[-1] -%}
    {{- '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<｜Assistant｜><think>\\n' -}}{%- endif -%}
"""

QWEN3 = """\
{%- set ns = namespace(last_query=-1) -%}
{%- for message in messages -%}
  {%- if message.role == 'user' -%}{%- set ns.last_query = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{%- for message in messages -%}
  {%- if message.role == 'assistant' -%}
    {%- set content = message.content or '' -%}
    {%- set reasoning = message.reasoning_content if message.reasoning_content is string
        else '' -%}
    {%- if not reasoning and '</think>' in content -%}
      {%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1]
          .lstrip('\\n') -%}
      {%- set content = content.split('</think>')[-1].lstrip('\\n') -%}
    {%- endif -%}
    {%- if loop.index0 > ns.last_query and (loop.last or reasoning) -%}
      {{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n'
          + content.lstrip('\\n') -}}
    {%- else -%}
      {{- '<|im_start|>assistant\\n' + content -}}
    {%- endif -%}
    {{- '<|im_end|>\\n' -}}
  {%- else -%}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\\n' -}}
  {%- if enable_thinking is defined and enable_thinking is false -%}
    {{- '<think>\\n\\n</think>\\n\\n' -}}
  {%- endif -%}
{%- endif -%}
"""

TEMPLATES = {"qwq": QWQ, "r1": R1, "qwen3": QWEN3}
BOS = {"r1": "<｜begin▁of▁sentence｜>"}
# Where an assistant turn starts, per family (the test models read their chain after it).
ASSISTANT_HEADERS = ("<|im_start|>assistant\n", "<｜Assistant｜>")

_ENV = jinja2.Environment(keep_trailing_newline=True)


def render(
    family: str,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool,
    enable_thinking: bool = True,
    bos_token: str | None = None,
) -> str:
    """`bos_token`: the model's (R1's template writes it); by default the family's."""
    template = _ENV.from_string(TEMPLATES[family])
    return template.render(
        messages=messages,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=enable_thinking,
        bos_token=BOS.get(family, "") if bos_token is None else bos_token,
    )


class NotInRendering(ValueError):
    """The final message does not appear in the rendering (transformers raises this)."""


def continue_final(family: str, messages: list[dict[str, Any]]) -> str:
    """The rendering cut at the end of the final message's content (vLLM's
    `continue_final_message`, by way of transformers' `apply_chat_template`)."""
    rendered = render(family, messages, add_generation_prompt=False)
    final = str(messages[-1].get("content") or "")
    if final.strip() not in rendered:
        raise NotInRendering(
            "continue_final_message is set but the final message does not appear in the "
            "chat after applying the chat template"
        )
    if final in rendered:
        return rendered[: rendered.rindex(final) + len(final)]
    return rendered[: rendered.rindex(final.strip()) + len(final.strip())]


def assistant_turn(prompt: str) -> str:
    """The text after the last assistant header of any family."""
    cut = max(prompt.rfind(h) + len(h) if h in prompt else -1 for h in ASSISTANT_HEADERS)
    return prompt[cut:] if cut >= 0 else prompt
