"""Chat templates: `tuple[Message, ...]` -> the raw prompt text a completions endpoint continues.

Why render ourselves at all: the chain is one assistant message that only grows, and each
continuation must be byte-for-byte the previous request plus the new text so the server's
prefix cache reuses it. So the instruction messages are rendered once (ending with the
generation prompt) and every later request appends raw text to that fixed string. A chat
endpoint would re-render every turn and may drop or rewrite earlier reasoning (many
reasoning-model templates strip `<think>` blocks from past assistant turns).

Template sources, by the name a user gives (`--chat-template`):
- a built-in: `chatml`, `qwen-think` (alias `qwq`), `deepseek` (alias `deepseek-r1`),
  `qwen3`, `llama3` (pure functions below);
- a path to a `.jinja` file (a Hugging Face style chat template), rendered with jinja2;
- `server`: the server renders with the model's own template (llama.cpp `/apply-template`,
  else vLLM `/tokenize` + `/detokenize`), see `render_on_server`.

Thinking models: QwQ's and DeepSeek-R1's templates open `<think>` in the generation
prompt, so the chain starts inside the thinking; Qwen3's leaves it to the model unless
`enable_thinking` is false, when it writes an empty, closed block. Every render here
passes `enable_thinking: true`, and a generation prompt that still ends in an empty
closed block is reopened (`keep_thinking_open`): our result blocks must land inside
the thinking, never after its `</think>`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx

from search_o1.errors import ConfigError
from search_o1.types import Message

LocalTemplate = Callable[[Sequence[Message]], str]
SERVER = "server"
# What thinking-capable templates read (Qwen3 and others); ignored by the rest.
THINKING_KWARGS: Mapping[str, bool] = {"enable_thinking": True}
_EMPTY_CLOSED_THINK = re.compile(r"<think>\s*</think>\s*$")
log = logging.getLogger(__name__)


def keep_thinking_open(prompt: str) -> str:
    """A generation prompt ending in an empty, closed think block, reopened.

    Such a prompt (Qwen3 with thinking off, or a template that always disables it) puts
    everything the model writes, and every search result, after `</think>`.

    >>> keep_thinking_open("<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n")
    '<|im_start|>assistant\\n<think>\\n'
    >>> keep_thinking_open("<|im_start|>assistant\\n")
    '<|im_start|>assistant\\n'
    """
    found = _EMPTY_CLOSED_THINK.search(prompt)
    if found is None:
        return prompt
    log.warning("the chat template closed the thinking block; reopening it")
    return prompt[: found.start()] + "<think>\n"


class ServerTemplateUnavailable(ConfigError):
    """The server cannot render chat templates (no /apply-template, no vLLM /tokenize)."""


# ---- built-ins ---------------------------------------------------------------------------


def chatml(messages: Sequence[Message]) -> str:
    """ChatML (SmolLM2, Qwen, QwQ without a forced think block).

    >>> chatml([Message("user", "Hi")])
    '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'
    """
    turns = "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def qwen_think(messages: Sequence[Message]) -> str:
    """ChatML with the assistant's `<think>` block already opened.

    QwQ-32B and the DeepSeek-R1 Qwen distills are trained to reason inside `<think>`;
    their own templates open it so the model cannot skip the reasoning.
    """
    return chatml(messages) + "<think>\n"


_DS_BOS = "<｜begin▁of▁sentence｜>"
_DS_EOS = "<｜end▁of▁sentence｜>"


def deepseek(messages: Sequence[Message]) -> str:
    """DeepSeek-R1's native format: system text right after BOS, role tags, open think.

    >>> deepseek([Message("system", "S"), Message("user", "Q")]).endswith(
    ...     "S<｜User｜>Q<｜Assistant｜><think>\\n")
    True
    """
    parts = [_DS_BOS]
    parts += [m.content for m in messages if m.role == "system"]
    for m in messages:
        if m.role == "user":
            parts.append(f"<｜User｜>{m.content}")
        elif m.role == "assistant":
            parts.append(f"<｜Assistant｜>{m.content}{_DS_EOS}")
    return "".join(parts) + "<｜Assistant｜><think>\n"


def llama3(messages: Sequence[Message]) -> str:
    """Llama 3 / 3.1 headers; contents are stripped as Meta's own template does."""
    turns = "".join(
        f"<|start_header_id|>{m.role}<|end_header_id|>\n\n{m.content.strip()}<|eot_id|>"
        for m in messages
    )
    return "<|begin_of_text|>" + turns + "<|start_header_id|>assistant<|end_header_id|>\n\n"


BUILTIN_TEMPLATES: Mapping[str, LocalTemplate] = {
    "chatml": chatml,
    "qwen-think": qwen_think,
    "qwq": qwen_think,  # QwQ-32B's template opens <think> the same way
    "deepseek": deepseek,
    "deepseek-r1": deepseek,
    "qwen3": chatml,  # Qwen3 (thinking on) writes <think> itself after the ChatML header
    "llama3": llama3,
}


# ---- jinja files -------------------------------------------------------------------------


@lru_cache(maxsize=16)
def _compile_jinja(path: str) -> Any:
    # Imported here so `import search_o1` stays cheap; jinja2 is a core dependency.
    from jinja2 import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:  # HF templates call this on bad input
        raise ConfigError(f"chat template {path}: {message}")

    # The same environment options Hugging Face uses, so their templates render alike;
    # sandboxed because a template file is code from somewhere else.
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.globals["raise_exception"] = raise_exception
    try:
        source = Path(path).read_text(encoding="utf-8")
        return env.from_string(source)
    except OSError as e:
        raise ConfigError(f"chat template {path}: cannot read: {e.strerror}") from None
    except (TemplateError, UnicodeDecodeError) as e:
        raise ConfigError(f"chat template {path}: invalid template: {e}") from None


def render_jinja(
    path: str | Path,
    messages: Sequence[Message],
    *,
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    """Render a Hugging Face style `.jinja` chat template with a generation prompt.

    `bos_token` defaults to empty: servers add BOS themselves when they tokenize a raw
    prompt, and a second BOS in the text would double it.
    """
    from jinja2 import TemplateError

    template = _compile_jinja(str(path))
    try:
        return keep_thinking_open(
            str(
                template.render(
                    messages=[{"role": m.role, "content": m.content} for m in messages],
                    add_generation_prompt=True,
                    bos_token=bos_token,
                    eos_token=eos_token,
                    **THINKING_KWARGS,
                )
            )
        )
    except TemplateError as e:
        raise ConfigError(f"chat template {path}: render failed: {e}") from None


def _is_template_path(spec: str) -> bool:
    return spec.endswith((".jinja", ".jinja2", ".j2")) or Path(spec).is_file()


def local_template(spec: str) -> LocalTemplate:
    """The template named by `spec` (a built-in name or a .jinja path), as a function."""
    if spec in BUILTIN_TEMPLATES:
        return BUILTIN_TEMPLATES[spec]
    if _is_template_path(spec):
        _compile_jinja(spec)  # fail now, on the user's setting, not mid-run
        return lambda messages: render_jinja(spec, messages)
    known = ", ".join([*BUILTIN_TEMPLATES, SERVER])
    raise ConfigError(f"unknown chat template {spec!r}; use one of {known} or a .jinja file")


def render(messages: Sequence[Message], spec: str = "chatml") -> str:
    """Render locally; `server` needs a server, see `render_on_server`.

    >>> render([Message("user", "2+2?")], "qwen-think").endswith("assistant\\n<think>\\n")
    True
    """
    if spec == SERVER:
        raise ConfigError("chat template 'server' needs a server: use render_on_server")
    return local_template(spec)(messages)


# ---- the server's own template -----------------------------------------------------------


def _as_wire(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


async def _post_json(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Any:
    """POST and decode; None when the endpoint is missing or answers something unusable.

    Transport errors (server down) propagate: they say nothing about template support.
    """
    response = await client.post(url, json=body)
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


async def _llamacpp_apply_template(
    client: httpx.AsyncClient, root: str, messages: Sequence[Message]
) -> str | None:
    body = {"messages": _as_wire(messages), "chat_template_kwargs": dict(THINKING_KWARGS)}
    data = await _post_json(client, f"{root}/apply-template", body)
    prompt = data.get("prompt") if isinstance(data, dict) else None
    return prompt if isinstance(prompt, str) and prompt else None


async def _vllm_tokenize(
    client: httpx.AsyncClient, root: str, messages: Sequence[Message], model: str | None
) -> str | None:
    # vLLM tokenizes chat messages with the model's template; /detokenize turns the ids
    # back into the exact text (token strings from return_token_strs are byte-level BPE
    # pieces, not text). add_special_tokens=False: the template already holds any BOS.
    body: dict[str, Any] = {
        "model": model,
        "messages": _as_wire(messages),
        "add_generation_prompt": True,
        "add_special_tokens": False,
        "chat_template_kwargs": dict(THINKING_KWARGS),
    }
    data = await _post_json(client, f"{root}/tokenize", body)
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list) or not tokens:  # llama.cpp answers {"tokens": []}
        return None
    data = await _post_json(client, f"{root}/detokenize", {"model": model, "tokens": tokens})
    prompt = data.get("prompt") if isinstance(data, dict) else None
    return prompt if isinstance(prompt, str) and prompt else None


async def render_continuation_on_vllm(
    client: httpx.AsyncClient,
    root: str,
    messages: Sequence[Message],
    *,
    model: str | None = None,
) -> str | None:
    """How vLLM renders `messages` whose last (an assistant message) is continued
    (`continue_final_message`), or None when the server cannot say (no /tokenize)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": _as_wire(messages),
        "add_generation_prompt": False,
        "continue_final_message": True,
        "add_special_tokens": False,
        "chat_template_kwargs": dict(THINKING_KWARGS),
    }
    data = await _post_json(client, f"{root.rstrip('/')}/tokenize", body)
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list) or not tokens:
        return None
    data = await _post_json(
        client, f"{root.rstrip('/')}/detokenize", {"model": model, "tokens": tokens}
    )
    prompt = data.get("prompt") if isinstance(data, dict) else None
    return prompt if isinstance(prompt, str) and prompt else None


async def render_on_server(
    client: httpx.AsyncClient,
    root: str,
    messages: Sequence[Message],
    *,
    model: str | None = None,
) -> str:
    """Ask the server at `root` (no `/v1`) to render `messages` with the model's template.

    Tries llama.cpp's `POST /apply-template`, then vLLM's `POST /tokenize` (+ `/detokenize`).
    Raises ServerTemplateUnavailable with a hint when neither works; httpx.TransportError
    when the server cannot be reached.
    """
    root = root.rstrip("/")
    prompt = await _llamacpp_apply_template(client, root, messages)
    if prompt is None:
        prompt = await _vllm_tokenize(client, root, messages, model)
    if prompt is None:
        raise ServerTemplateUnavailable(
            f"the server at {root} cannot render chat templates (no /apply-template, no "
            "vLLM /tokenize); set chat_template to one of "
            f"{', '.join(BUILTIN_TEMPLATES)} or a .jinja file, or use api_mode=chat"
        )
    return keep_thinking_open(prompt)
