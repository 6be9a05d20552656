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
    from search_o1.corpus.bm25 import demo_corpus_path

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
