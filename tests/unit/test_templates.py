"""Chat templates: built-ins, jinja files, and the rules that keep prefixes stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from search_o1.errors import ConfigError
from search_o1.llm.templates import (
    BUILTIN_TEMPLATES,
    chatml,
    deepseek,
    llama3,
    local_template,
    qwen_think,
    render,
    render_jinja,
)
from search_o1.types import Message

MSGS = (Message("system", "Sys."), Message("user", "Question?"))


def test_chatml_matches_the_smollm2_server_rendering() -> None:
    # The exact text llama.cpp's /apply-template gives for SmolLM2 with a system message.
    assert chatml(MSGS) == (
        "<|im_start|>system\nSys.<|im_end|>\n"
        "<|im_start|>user\nQuestion?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_qwen_think_opens_the_think_block() -> None:
    assert qwen_think(MSGS) == chatml(MSGS) + "<think>\n"


def test_deepseek_native_format() -> None:
    assert deepseek(MSGS) == (
        "<｜begin▁of▁sentence｜>Sys.<｜User｜>Question?<｜Assistant｜><think>\n"
    )
    two_turns = (*MSGS, Message("assistant", "A."), Message("user", "More?"))
    assert "<｜Assistant｜>A.<｜end▁of▁sentence｜><｜User｜>More?" in deepseek(two_turns)


def test_llama3_headers() -> None:
    out = llama3((Message("user", " Hi \n"),))
    assert out == (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


@pytest.mark.parametrize("name", sorted(BUILTIN_TEMPLATES))
def test_every_builtin_is_pure_and_ends_with_a_generation_prompt(name: str) -> None:
    first = render(MSGS, name)
    assert first == render(MSGS, name)  # deterministic: the prefix cache depends on it
    assert "Question?" in first and not first.endswith("Question?")


def test_jinja_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(
        "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    assert (
        render_jinja(path, MSGS, bos_token="<s>") == "<s><system>Sys.\n<user>Question?\n<assistant>"
    )
    assert local_template(str(path))(MSGS) == "<system>Sys.\n<user>Question?\n<assistant>"


def test_jinja_raise_exception_becomes_config_error(tmp_path: Path) -> None:
    path = tmp_path / "strict.jinja"
    path.write_text("{{ raise_exception('no system role') }}")
    with pytest.raises(ConfigError, match="no system role"):
        render(MSGS, str(path))


def test_bad_template_names_and_files() -> None:
    with pytest.raises(ConfigError, match="unknown chat template"):
        local_template("nope")
    with pytest.raises(ConfigError, match="cannot read"):
        local_template("/nonexistent/dir/t.jinja")
    with pytest.raises(ConfigError, match="needs a server"):
        render(MSGS, "server")


def test_jinja_sandbox_blocks_attribute_escapes(tmp_path: Path) -> None:
    path = tmp_path / "evil.jinja"
    path.write_text("{{ ''.__class__.__mro__ }}")
    with pytest.raises(ConfigError, match="unsafe"):
        render(MSGS, str(path))
