"""Profiles and per-dataset values: what a setting nobody gave becomes.

Two layers fill the settings a user did not give (file, environment and flags always
win; `Settings.model_fields_set` says which were given):

1. Per-dataset values, in both profiles: the paper's per-call token limit, its search
   limits per task kind and its RAG-agent limits on the QA sets. They are the
   benchmark's configuration, not a matter of taste, so our default runs compare with
   the paper's tables too.
2. `profile = "paper"`: every value the paper's scripts use where our default differs
   (docs/paper-profile.md has the table and why ours differs).

Which model row the paper's values follow is the setting `paper_model` (`qwq` by
default, `other`), never a guess from the model's name: a served model may be called
anything, and a renamed QwQ must not silently get other limits.
"""

from __future__ import annotations

from typing import Any

from search_o1.config import Settings

__all__ = ["PAPER_VALUES", "dataset_values", "per_call_tokens", "resolve"]

# The paper's scripts give QwQ its longest limit on these (competition maths, code).
LONG_DATASETS = frozenset({"aime24", "amc23", "livecodebench"})
QA_TASKS = frozenset({"qa", "multihop"})
# What the paper profile sets (besides the repetition penalty, which follows the model).
PAPER_VALUES: dict[str, Any] = {
    "repeated_query": "notice",  # limit first, then a notice for a repeat
    "max_page_chars": 8000,  # a fetched page is its first 8,000 characters
    "page_chars": 8000,  # also for rag-agent's full pages
    "force_search": False,  # the paper's model writes every query itself
}
# The paper's baseline scripts send this many tokens for every model and dataset.
BASELINE_TOKENS = 32768
BASELINES = frozenset({"direct", "rag"})


def per_call_tokens(dataset: str | None, paper_model: str) -> int:
    """The paper's per-call token limit: QwQ 32768 on AIME/AMC/LCB, else 20480; others 8192.

    Outside eval (no dataset) QwQ gets its longest limit.

    >>> per_call_tokens("aime24", "qwq"), per_call_tokens("nq", "qwq")
    (32768, 20480)
    >>> per_call_tokens("aime24", "other")
    8192
    """
    if paper_model != "qwq":
        return 8192
    return 32768 if dataset is None or dataset in LONG_DATASETS else 20480


def dataset_values(
    dataset: str | None, task: str | None, method: str | None, paper_model: str
) -> dict[str, Any]:
    """The paper's values for one (dataset, task kind, method) cell.

    >>> dataset_values("hotpotqa", "multihop", "search-o1", "qwq")["max_searches"]
    10
    >>> v = dataset_values("nq", "qa", "rag-agent", "qwq")
    >>> v["top_k"], v["max_searches"], v["max_turns"]
    (5, 5, 10)
    >>> dataset_values("gpqa", "choice", "rag-agent", "qwq")["max_turns"]
    10
    """
    values: dict[str, Any] = {"max_call_tokens": per_call_tokens(dataset, paper_model)}
    if task == "multihop":
        values.update(max_searches=10, max_turns=15)
    elif task is not None:
        values.update(max_searches=5, max_turns=15)
    if method == "rag-agent":
        values.update(max_searches=5, max_turns=10)  # its script's defaults, every set
        if task in QA_TASKS:
            values.update(top_k=5)
    return values


def profile_values(profile: str, paper_model: str, method: str | None = None) -> dict[str, Any]:
    """What the profile itself sets (nothing for ours).

    >>> profile_values("paper", "other", "direct")["max_call_tokens"]
    32768
    >>> "max_call_tokens" in profile_values("paper", "qwq", "search-o1")
    False
    """
    if profile != "paper":
        return {}
    # The paper's scripts: 1.05 for QwQ, 1.0 for every other model.
    values = {**PAPER_VALUES, "repetition_penalty": 1.05 if paper_model == "qwq" else 1.0}
    if method in BASELINES:
        values["max_call_tokens"] = BASELINE_TOKENS
    return values


def resolve(
    settings: Settings,
    *,
    dataset: str | None = None,
    task: str | None = None,
    method: str | None = None,
) -> Settings:
    """`settings` with every value nobody gave filled from the profile and the cell.

    Values filled here count as given afterwards, so resolving twice changes nothing.
    """
    given = settings.model_fields_set
    values = {
        **dataset_values(dataset, task, method, settings.paper_model),
        **profile_values(settings.profile, settings.paper_model, method),
    }
    update = {k: v for k, v in values.items() if k not in given}
    if task is not None:
        update["task"] = task
    return settings.model_copy(update=update)
