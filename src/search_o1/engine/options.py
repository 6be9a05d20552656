"""What an Engine needs to know, as small frozen values (not the whole `Settings`).

`pipeline.engine_options(settings)` maps the user's settings onto these (the one place
that reads `Settings`); a test or a library user builds them directly:

    Engine(ScriptedLLM([...]), MemorySearch({...}), options=EngineOptions(
        limits=ChainLimits(max_searches=1), reader=ReaderOptions(enabled=False)))

Token limits come in two kinds, named for what they count everywhere (options,
settings, flags): `max_total_tokens` is the budget of new tokens for a whole question
(all turns together), `max_call_tokens` caps a single generation call (the paper's
scripts set only a per-call cap). A profile that wants the paper's behaviour sets
`max_call_tokens` and leaves `max_total_tokens` unset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from search_o1.errors import ConfigError
from search_o1.prompts.templates import PromptSet
from search_o1.tasks import TASKS, TaskKind
from search_o1.types import Sampling

__all__ = ["NO_LIMIT_TOKENS", "ChainLimits", "EngineOptions", "ReaderOptions", "SearchOptions"]

# Per call when neither a call limit nor a total budget is set (the paper's longest).
NO_LIMIT_TOKENS = 32768


def _at_least(owner: str, low: int, **values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < low:
            raise ConfigError(f"{owner}.{name} must be at least {low}, not {value}")


@dataclass(frozen=True)
class ChainLimits:
    """How far one question's chain may go.

    - `max_searches`: searches run per question; past it the model is told it may not
      search (0: never search, not even a forced first search).
    - `max_turns`: generation calls per question.
    - `max_total_tokens`: new tokens per question, all turns together (None: no budget
      beyond the context window).
    - `max_call_tokens`: new tokens per generation call (None: what `max_total_tokens`
      leaves).
    - `context_length`: a window to keep the chain within, never wider than the
      model's own (None: the model's own).
    - `max_url_fetches`: pages a rag-agent chain may ask to read in full.
    """

    max_searches: int = 5
    max_turns: int = 15
    max_total_tokens: int | None = 32768
    max_call_tokens: int | None = None
    context_length: int | None = None
    max_url_fetches: int = 5

    def call_budget(self, used: int) -> int:
        """New tokens the next call may ask for when `used` are spent (window aside)."""
        total = None if self.max_total_tokens is None else self.max_total_tokens - used
        if self.max_call_tokens is None:
            return NO_LIMIT_TOKENS if total is None else total
        return self.max_call_tokens if total is None else min(total, self.max_call_tokens)

    def __post_init__(self) -> None:
        _at_least("limits", 0, max_searches=self.max_searches, max_url_fetches=self.max_url_fetches)
        _at_least(
            "limits",
            1,
            max_turns=self.max_turns,
            max_total_tokens=self.max_total_tokens,
            max_call_tokens=self.max_call_tokens,
            context_length=self.context_length,
        )


@dataclass(frozen=True)
class ReaderOptions:
    """Reason-in-Documents: on (refine documents into facts) or off (insert them as is).

    `max_call_tokens`: new tokens per reader call; None gives the reader the main model's
    per-call limit, as the paper does (a long analysis cut before its `**Final
    Information**` would otherwise lose every fact it found). `sampling`: the reader's
    own (None: the main model's; the paper fixes 0.7/0.8/20/1.05). `one_line`: insert
    the facts tight between the markers, line breaks removed (the paper's; with `paper`
    its parse decides, and its "Modified Reasoning Steps" fallback keeps them).
    `cite`: ask the reader to mark which document each fact comes from (ours; the paper
    profile sends the paper's prompt unchanged), see `search_o1.sources`.
    `paper`: the previous steps and the reply's parse exactly as the paper's script.
    """

    enabled: bool = True
    max_call_tokens: int | None = None
    sampling: Sampling | None = None
    one_line: bool = False
    cite: bool = True
    paper: bool = False

    def __post_init__(self) -> None:
        _at_least("reader", 1, max_call_tokens=self.max_call_tokens)


@dataclass(frozen=True)
class SearchOptions:
    """Hits per query, and characters of each document kept for the reader.

    `page_chars`: a page the rag-agent model asks for is the first this many characters
    of its text (the paper: 8,000); None: the context window around its snippet.
    """

    top_k: int = 10
    max_doc_chars: int = 3000
    page_chars: int | None = None

    def __post_init__(self) -> None:
        _at_least(
            "search",
            1,
            top_k=self.top_k,
            max_doc_chars=self.max_doc_chars,
            page_chars=self.page_chars,
        )


@dataclass(frozen=True)
class EngineOptions:
    """Everything an Engine reads while it runs; defaults are the paper's.

    `force_search`: open every chain of a searching method with a search (for models
    too small to write a query themselves); the pipeline turns it on for the embedded
    model unless the user said otherwise. `task`: the task kind when a run names none.
    `prompts`: every prompt text (built-in, or templates from `--prompts DIR`).
    `repeated_query`: "reuse" inserts a repeated query's earlier result again and checks
    the search limit after it (ours); "notice" checks the limit first and answers a
    repeat with a notice (the paper's; rag-agent inserts nothing for a repeat).
    `tools`: the model searches by calling a function tool instead of writing query
    markers (`--api-mode tools`; see engine/tool_turns.py).
    `paper_inserts`: the text put into the chain (notices, raw results, pages) is
    spaced and laid out as the paper's scripts do (`markers.paper_*`), and rag-agent's
    page requests follow its script's rules (engine/pages.py).
    `refuse_placeholders`: a query copied from the instruction's examples, or made of
    filler words only, is not searched (ours); off, every non-blank query is searched,
    as the paper's scripts do (`queries.is_placeholder`).
    """

    limits: ChainLimits = field(default_factory=ChainLimits)
    sampling: Sampling = field(default_factory=Sampling)
    reader: ReaderOptions = field(default_factory=ReaderOptions)
    search: SearchOptions = field(default_factory=SearchOptions)
    force_search: bool = False
    task: TaskKind = "qa"
    prompts: PromptSet = field(default_factory=PromptSet)
    repeated_query: Literal["reuse", "notice"] = "reuse"
    tools: bool = False
    paper_inserts: bool = False
    refuse_placeholders: bool = True

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"unknown task {self.task!r}; known: {', '.join(TASKS)}")
