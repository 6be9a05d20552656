"""Prompt sets: our built-in prompts, or a folder of Jinja templates (`--prompts DIR`).

A `PromptSet` renders every text the system writes for a model: the instruction of each
method per task kind, the task prompt, Reason-in-Documents, and the notices inserted as
search results. `PromptSet()` is ours; `load_prompts(DIR)` replaces any slot for which
DIR holds a template, so a user who has other prompt texts (the paper's, say) runs them
verbatim. Slots, file names and variables are documented in docs/prompts.md and in
`SLOTS` below. A slot with a per-task variant looks for `<slot>.<task>.jinja` first,
then `<slot>.jinja`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search_o1 import prompts as builtin
from search_o1.errors import ConfigError
from search_o1.markers import neutralise
from search_o1.prompts.tools import search_o1_tools_instruction
from search_o1.tasks import TASKS
from search_o1.types import Document, Hit

__all__ = [
    "NOTICES",
    "SLOTS",
    "PageRecord",
    "PromptSet",
    "hit_fields",
    "load_prompts",
    "page_fields",
]

# slot -> the variables its template receives (besides `task`, given to every slot).
SLOTS: dict[str, tuple[str, ...]] = {
    "search_o1": ("max_searches",),
    "search_o1_tools": ("max_searches",),
    "rag_agent": ("max_searches", "max_urls"),
    "task": ("question",),
    "rag": ("question", "documents", "pages"),
    "reader": ("previous_reasoning", "query", "documents", "pages"),
    "documents": ("pages",),
    "results": ("query", "hits"),
    "notice.limit": ("query", "max_searches"),
    "notice.repeat": ("query",),
    "notice.empty": (),
    "notice.page_limit": ("url", "max_urls"),
    "notice.unshown_page": ("url",),
}
# Notices: text placed inside a search-result block instead of search results.
NOTICES: dict[str, str] = {
    "limit": (
        "The search limit has been reached. You may not search any more; continue with "
        "what you know."
    ),
    "repeat": (
        "This query was searched before; its results are above. Use them, or search for "
        "something else."
    ),
    "empty": (
        "The search query was empty. Write the query between the query markers, or "
        "continue without searching."
    ),
    # rag-agent's page requests (inside a full-page block).
    "page_limit": "Cannot read the page: the page-reading limit has been reached.",
    "unshown_page": "Cannot read the page: that URL was not in any search result.",
}


class PageRecord(dict[str, Any]):
    """One document for templates: its keys are the paper's document fields in the
    paper's order (`id`, `title`, `url`, `site_name`, `date`, `snippet`, `context`), so
    `{{ page | json(indent=2) }}` writes what the paper's scripts write; `text` is
    `context` under our older name."""

    @property
    def text(self) -> str:
        return str(self["context"])


def _record(i: int, hit: Hit, context: str) -> PageRecord:
    # Our search backends report no site name (Bing's `siteName`): it stays empty.
    return PageRecord(
        id=i,
        title=hit.title,
        url=hit.url or "",
        site_name="",
        date=hit.date or "",
        snippet=hit.snippet,
        context=context,
    )


def page_fields(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """The documents as plain values for templates that lay them out themselves."""
    return [_record(i, d.hit, d.text) for i, d in enumerate(documents, 1)]


def hit_fields(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """Raw search results as records (no page read: `context` is empty, as the paper's)."""
    return [_record(i, h, "") for i, h in enumerate(hits, 1)]


def _json(value: Any, indent: int | None = None) -> str:
    """The `json` filter: JSON as Python's json.dumps writes it with non-ASCII kept and
    keys in their order (Jinja's `tojson` sorts keys and escapes HTML characters)."""
    return json.dumps(value, ensure_ascii=False, indent=indent)


@dataclass(frozen=True)
class PromptSet:
    """Every prompt text; templates (slot file name -> compiled) replace built-ins."""

    templates: Mapping[str, Any] = field(default_factory=dict)
    source: str = "built-in"

    def _render(self, slot: str, task: str, values: dict[str, Any]) -> str | None:
        template = self.templates.get(f"{slot}.{task}") or self.templates.get(slot)
        if template is None:
            return None
        from jinja2 import TemplateError

        try:
            return str(template.render(task=task, **values))
        except TemplateError as e:
            raise ConfigError(f"{self.source}: template {slot!r}: {e}") from None

    def search_o1(self, task: str, max_searches: int) -> str:
        out = self._render("search_o1", task, {"max_searches": max_searches})
        return builtin.search_o1_instruction(task, max_searches) if out is None else out

    def search_o1_tools(self, task: str, max_searches: int) -> str:
        """The instruction of tools mode (`--api-mode tools`): search by calling a tool."""
        out = self._render("search_o1_tools", task, {"max_searches": max_searches})
        return search_o1_tools_instruction(max_searches) if out is None else out

    def rag_agent(self, task: str, max_searches: int, max_urls: int) -> str:
        values = {"max_searches": max_searches, "max_urls": max_urls}
        out = self._render("rag_agent", task, values)
        return builtin.rag_agent_instruction(task, max_searches, max_urls) if out is None else out

    def task(self, task: str, question: str) -> str:
        out = self._render("task", task, {"question": question})
        return builtin.task_prompt(task, question) if out is None else out

    def rag(self, task: str, question: str, documents: str, pages: list[dict[str, Any]]) -> str:
        """The whole RAG opening: documents, then the question (its task prompt)."""
        values = {"question": question, "documents": documents, "pages": pages}
        out = self._render("rag", task, values)
        if out is None:
            return builtin.rag_prompt(documents) + self.task(task, question)
        return out

    def reader(
        self,
        task: str,
        previous_reasoning: str,
        query: str,
        documents: str,
        pages: list[dict[str, Any]],
    ) -> str:
        values = {
            "previous_reasoning": previous_reasoning,
            "query": query,
            "documents": documents,
            "pages": pages,
        }
        out = self._render("reader", task, values)
        return builtin.reader_prompt(previous_reasoning, query, documents) if out is None else out

    def documents(self, task: str, pages: list[dict[str, Any]], ours: Callable[[], str]) -> str:
        """The documents' text in a prompt (`documents` of reader and rag): the
        template's, marker strings defused, or ours."""
        out = self._render("documents", task, {"pages": pages})
        return ours() if out is None else neutralise(out)

    def results(
        self,
        task: str,
        query: str,
        hits: list[dict[str, Any]],
        ours: Callable[[list[PageRecord]], str],
    ) -> str:
        """The whole block (markers included) inserted for rag-agent's raw search results:
        the template's, or `ours` of the records; marker strings inside them defused."""
        safe = [
            PageRecord({k: neutralise(v) if isinstance(v, str) else v for k, v in h.items()})
            for h in hits
        ]
        out = self._render("results", task, {"query": query, "hits": safe})
        return ours(safe) if out is None else out

    def notice(self, kind: str, task: str, **values: Any) -> str:
        """The text of a notice (`NOTICES`' names), without the markers around it."""
        slot = f"notice.{kind}"
        out = self._render(slot, task, {k: values.get(k) for k in SLOTS[slot]})
        return NOTICES[kind] if out is None else out


def _slot_of(name: str) -> str:
    """`search_o1.math` -> `search_o1`; `notice.limit` stays; unknown names raise."""
    if name in SLOTS:
        return name
    base, _, task = name.rpartition(".")
    if base in SLOTS and task in TASKS:
        return base
    known = ", ".join(f"{s}.jinja" for s in SLOTS)
    raise ConfigError(
        f"unknown prompt template {name}.jinja; known slots: {known} "
        f"(a slot may also be <slot>.<task>.jinja, task one of {', '.join(TASKS)})"
    )


def load_prompts(folder: str | Path) -> PromptSet:
    """A PromptSet from the `*.jinja` files of `folder` (missing slots stay ours)."""
    from jinja2 import StrictUndefined, TemplateSyntaxError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"--prompts: {path} is not a folder")
    # StrictUndefined: a misspelt variable is an error, not an empty string in a prompt.
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters["json"] = _json
    templates: dict[str, Any] = {}
    for file in sorted(path.glob("*.jinja")):
        _slot_of(file.stem)
        try:
            templates[file.stem] = env.from_string(file.read_text(encoding="utf-8"))
        except TemplateSyntaxError as e:
            raise ConfigError(f"{file}: line {e.lineno}: {e.message}") from None
    if not templates:
        raise ConfigError(f"--prompts: {path} holds no .jinja templates")
    return PromptSet(templates, source=str(path))
