"""`--demo`: the embedded SmolLM2-135M over offline Wikipedia summaries, seeded and bounded.

The demo shows the pipeline at work (a query, the hits, Reason-in-Documents, the chain
going on), not reasoning quality, and must answer in well under a minute on a laptop's
CPU: so it is seeded (the same chain every run, and `--cache replay` repeats it) and
reads few, short documents. A value the user gives (flag, environment, file) still wins.
"""

from __future__ import annotations

from typing import Any

from search_o1.config import Settings

DEMO_HINT = "embedded SmolLM2-135M + offline Wikipedia summaries, seeded"
# Its first search (the question itself, as the embedded model is made to open with
# one) finds the passage with the answer: "Eiffel Tower", then "Gustave Eiffel". Tosca's
# composer's birthplace needed a second hop the model never wrote, and its query found
# Soap opera, Opera and Mecca.
DEMO_QUESTION = "Who designed the Eiffel Tower?"
# SmolLM2-135M searches and reads, but rarely writes the reader's "**Final Information**"
# heading or a \boxed{} answer: the method's last steps need a bigger model.
_SEE_IT_WORK = (
    "The demo model is too small to finish the method (facts read, a boxed answer). "
    "To see it work, serve a reasoning model and run: "
    'search-o1 ask --corpus demo --base-url http://localhost:8000/v1 "{question}"'
)


def demo_closing(settings: Settings, question: str, answered: bool) -> str | None:
    """The demo's last line when the embedded model gave no answer: what to run instead.

    >>> from search_o1.config import load_settings
    >>> demo_closing(load_settings({}, environ={}), "Q?", answered=False)[:36]
    'The demo model is too small to finis'
    >>> demo_closing(load_settings({}, environ={}), "Q?", answered=True) is None
    True
    """
    if answered or settings.llm_backend != "embedded":
        return None
    return _SEE_IT_WORK.format(question=question)


# Prompt processing of the documents dominates on a CPU: few and short keep it quick.
DEMO_SETTINGS: dict[str, Any] = {
    "seed": 0,
    "top_k": 3,
    "max_doc_chars": 400,
    "max_searches": 2,
    "max_turns": 4,
    "max_call_tokens": 128,
    "reader_max_call_tokens": 64,
}


def demo_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """The demo corpus and the embedded model, unless given."""
    from search_o1.search.bm25 import demo_corpus_path

    return {
        **flags,
        "corpus": flags.get("corpus") or str(demo_corpus_path()),
        "backend": flags.get("backend") or "embedded",
    }


def demo_settings(settings: Settings) -> Settings:
    """The demo's bounds and seed for every setting nobody gave."""
    given = settings.model_fields_set
    update = {k: v for k, v in DEMO_SETTINGS.items() if k not in given}
    return settings.model_copy(update=update)
