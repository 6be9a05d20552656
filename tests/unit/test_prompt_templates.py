"""--prompts DIR: template sets the tests write, rendered slot by slot."""

from __future__ import annotations

from pathlib import Path

import pytest

from search_o1 import prompts as builtin
from search_o1.errors import ConfigError
from search_o1.prompts.templates import SLOTS, PromptSet, load_prompts, page_fields
from search_o1.types import Document, Hit


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_every_slot_renders_its_variables(tmp_path: Path) -> None:
    files = {
        f"{slot}.jinja": f"[{slot}|{{{{ task }}}}]"
        + "".join(f"<{v}={{{{ {v} }}}}>" for v in names if v != "pages")
        for slot, names in SLOTS.items()
    }
    prompts = load_prompts(write(tmp_path / "set", files))
    assert prompts.search_o1("math", 5) == "[search_o1|math]<max_searches=5>"
    assert prompts.rag_agent("qa", 5, 3) == "[rag_agent|qa]<max_searches=5><max_urls=3>"
    assert prompts.task("choice", "Q?") == "[task|choice]<question=Q?>"
    assert prompts.rag("qa", "Q?", "DOCS", []) == "[rag|qa]<question=Q?><documents=DOCS>"
    assert prompts.reader("multihop", "STEPS", "q", "DOCS", []) == (
        "[reader|multihop]<previous_reasoning=STEPS><query=q><documents=DOCS>"
    )
    assert prompts.notice("limit", "qa", query="q", max_searches=5) == (
        "[notice.limit|qa]<query=q><max_searches=5>"
    )
    assert prompts.notice("repeat", "qa", query="q") == "[notice.repeat|qa]<query=q>"
    assert prompts.notice("empty", "qa") == "[notice.empty|qa]"


def test_a_per_task_template_wins_and_missing_slots_stay_ours(tmp_path: Path) -> None:
    folder = write(
        tmp_path / "set",
        {"search_o1.jinja": "general {{ max_searches }}", "search_o1.math.jinja": "math only"},
    )
    prompts = load_prompts(folder)
    assert prompts.search_o1("math", 5) == "math only"
    assert prompts.search_o1("qa", 7) == "general 7"
    assert prompts.task("qa", "Q?") == builtin.task_prompt("qa", "Q?")
    assert PromptSet().reader("qa", "s", "q", "d", []) == builtin.reader_prompt("s", "q", "d")


def test_templates_can_lay_out_pages_themselves(tmp_path: Path) -> None:
    folder = write(
        tmp_path / "set",
        {
            "reader.jinja": "{% for p in pages %}#{{ p.id }} {{ p.title }} <{{ p.url }}>: "
            "{{ p.text }}\n{% endfor %}"
        },
    )
    docs = [Document(Hit("1", "Tosca", url="http://x/t", snippet="s"), "An opera.")]
    out = load_prompts(folder).reader("qa", "", "q", "", page_fields(docs))
    assert out == "#1 Tosca <http://x/t>: An opera.\n"


def test_mistakes_are_reported_not_rendered_as_blanks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown prompt template readr\.jinja"):
        load_prompts(write(tmp_path / "a", {"readr.jinja": "x"}))
    with pytest.raises(ConfigError, match="line 1"):
        load_prompts(write(tmp_path / "b", {"task.jinja": "{% if %}"}))
    with pytest.raises(ConfigError, match=r"no \.jinja templates"):
        load_prompts(write(tmp_path / "c", {}))
    with pytest.raises(ConfigError, match="not a folder"):
        load_prompts(tmp_path / "missing")
    typo = load_prompts(write(tmp_path / "d", {"task.jinja": "{{ questoin }}"}))
    with pytest.raises(ConfigError, match="questoin"):
        typo.task("qa", "Q?")
