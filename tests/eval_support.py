"""A scripted 'model' for evaluation tests: answers each question from a table, in a chosen format.

The same responder drives the in-process ScriptedLLM (given a Prompt) and the fake
OpenAI server (given the request body): it finds which question the prompt is about,
searches once when the instruction offers searching, and then boxes the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from search_o1 import markers as mk
from search_o1.types import Prompt

READER_REPLY = "Reading the pages.\n**Final Information**\n\nThe pages name the answer."


def prompt_text(prompt: Prompt | Mapping[str, Any]) -> str:
    if isinstance(prompt, Prompt):
        return "".join(m.content for m in prompt.messages) + prompt.continuation
    if "prompt" in prompt:
        return str(prompt["prompt"])
    return "".join(str(m.get("content", "")) for m in prompt.get("messages", []))


def responder(
    answers: Mapping[str, str], *, search: bool = True
) -> Callable[[Prompt | Mapping[str, Any]], str]:
    """`answers` maps question text -> the whole final reply (e.g. 'so \\boxed{x}')."""

    def respond(prompt: Prompt | Mapping[str, Any]) -> str:
        text = prompt_text(prompt)
        if "current search query" in text.lower():
            return READER_REPLY  # a Reason-in-Documents call
        found = [q for q in answers if q in text]
        if not found:
            return "I cannot tell. \\boxed{unknown}"
        question = max(found, key=len)
        head, _, tail = text.rpartition(question)
        offers_search = mk.BEGIN_QUERY in head
        if search and offers_search and mk.END_RESULT not in tail:
            return f"Let me look it up. {mk.BEGIN_QUERY}{question[:80]}{mk.END_QUERY}"
        return answers[question]

    return respond
