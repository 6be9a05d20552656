"""The methods as data: one declared `Method` per way of answering a question.

The engine, the CLIs (`ask`, `eval`) and `serve` read this table instead of comparing
method names, so a new method (or a mode of an existing one) is one `Method` entry,
added with `register_method`, or declared by a package as an entry point in the group
`search_o1.methods` (`terse = "my_pkg.methods:TERSE"`, a `Method` value whose name is
the entry point's), as backends are; see docs/extending.md.

How a method answers a query the model wrote (`answer`):
- "none": the method has no queries (its stop strings never ask for one);
- "raw": a list of hits (title, URL, snippet), as the rag-agent baseline sees them;
- "documents": the documents themselves (hits turned into text by the DocumentSource);
- "reader": Reason-in-Documents refines the documents into facts (with the reader
  turned off, the engine falls back to "documents").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

from search_o1 import markers as mk
from search_o1.engine.options import ChainLimits
from search_o1.errors import ConfigError
from search_o1.prompts.templates import PromptSet

__all__ = [
    "METHODS",
    "PLUGIN_GROUP",
    "Answer",
    "Method",
    "Opening",
    "get_method",
    "has_tools_mode",
    "method_names",
    "register_method",
]

Answer = Literal["none", "raw", "documents", "reader"]


@dataclass(frozen=True)
class Opening:
    """What a method's opening message may use.

    `documents`: the question's own documents, formatted, for methods that declare
    `retrieve_first` (None otherwise); `pages`: the same as plain records (for prompt
    templates). `prompts`: the prompt set to write with.
    """

    task: str
    question: str
    limits: ChainLimits
    documents: str | None = None
    prompts: PromptSet = field(default_factory=PromptSet)
    pages: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Method:
    """One method: how its chain opens, when generation stops, how queries are answered.

    - `opening`: the first (user) message, instruction and question.
    - `stops`: stop strings of every generation call; a stop on `END_QUERY` asks for a
      search, on `END_URL` for a page.
    - `answer`: how a query is answered (see the module docstring).
    - `retrieve_first`: search for the question once before the chain starts (rag).
    - `needs_search`: a search backend must be configured.
    - `forceable`: a forced first search may open the chain (only for methods whose
      model writes queries).
    - `tool_opening`: the opening in tools mode (`--api-mode tools`), where the model
      searches by calling a function tool; None: the method has no tools mode.
    """

    name: str
    summary: str
    opening: Callable[[Opening], str]
    stops: tuple[str, ...] = ()
    answer: Answer = "none"
    retrieve_first: bool = False
    needs_search: bool = False
    forceable: bool = False
    tool_opening: Callable[[Opening], str] | None = None


def _direct(o: Opening) -> str:
    return o.prompts.task(o.task, o.question)


def _rag(o: Opening) -> str:
    return o.prompts.rag(o.task, o.question, o.documents or "(none found)", o.pages)


def _rag_agent(o: Opening) -> str:
    limits = o.limits
    instruction = o.prompts.rag_agent(o.task, limits.max_searches, limits.max_url_fetches)
    return instruction + o.prompts.task(o.task, o.question)


def _search_o1(o: Opening) -> str:
    instruction = o.prompts.search_o1(o.task, o.limits.max_searches)
    return instruction + o.prompts.task(o.task, o.question)


def _search_o1_tools(o: Opening) -> str:
    instruction = o.prompts.search_o1_tools(o.task, o.limits.max_searches)
    return instruction + o.prompts.task(o.task, o.question)


METHODS: dict[str, Method] = {}
PLUGIN_GROUP = "search_o1.methods"


def register_method(method: Method, *, replace: bool = False) -> Method:
    """Add `method` to the table (by its name); `replace=True` to redefine one."""
    if method.name in METHODS and not replace:
        raise ConfigError(f"method {method.name!r} is already registered")
    if method.answer != "none" and not method.needs_search:
        raise ConfigError(f"method {method.name!r} answers queries, so it needs search")
    if mk.END_QUERY in method.stops and method.answer == "none":
        raise ConfigError(f"method {method.name!r} stops for queries but cannot answer them")
    METHODS[method.name] = method
    return method


def has_tools_mode(method: Method) -> bool:
    """Whether `--api-mode tools` can run `method`.

    A method whose model searches mid-chain needs a `tool_opening`; the others (no
    queries, or documents retrieved before the chain) run as in chat mode.
    """
    searches_mid_chain = method.answer != "none" and not method.retrieve_first
    return method.tool_opening is not None or not searches_mid_chain


def method_names() -> list[str]:
    """Every method name: registered ones, then those plugins declare (not yet loaded)."""
    declared = (ep.name for ep in entry_points(group=PLUGIN_GROUP))
    return [*METHODS, *sorted(set(declared) - METHODS.keys())]


def get_method(name: str) -> Method:
    """The method called `name` (a plugin's is loaded and registered on first use); a
    ConfigError naming the known ones otherwise."""
    if name not in METHODS:
        _load_plugin(name)
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(method_names())
        raise ConfigError(f"unknown method {name!r}; known: {known}") from None


def _load_plugin(name: str) -> None:
    """Register the method a package declares under `name`, if one does."""
    found = [ep for ep in entry_points(group=PLUGIN_GROUP) if ep.name == name]
    if not found:
        return
    method = found[0].load()
    if not isinstance(method, Method) or method.name != name:
        raise ConfigError(
            f"the {PLUGIN_GROUP} entry point {name!r} ({found[0].value}) must name a "
            f"Method called {name!r}"
        )
    register_method(method)


# The table: the paper's four methods. A new one is one more entry (or a
# `register_method` call from outside).
BUILT_IN: tuple[Method, ...] = (
    Method("direct", "the model reasons alone, no retrieval", _direct),
    Method(
        "rag",
        "top documents for the question, pasted before it once",
        _rag,
        retrieve_first=True,
        needs_search=True,
    ),
    Method(
        "rag-agent",
        "searches mid-reasoning, sees raw results, may read pages",
        _rag_agent,
        stops=(mk.END_QUERY, mk.END_URL),
        answer="raw",
        needs_search=True,
        forceable=True,
    ),
    Method(
        "search-o1",
        "searches mid-reasoning; Reason-in-Documents refines the results",
        _search_o1,
        stops=(mk.END_QUERY,),
        answer="reader",
        needs_search=True,
        forceable=True,
        tool_opening=_search_o1_tools,
    ),
)
for _method in BUILT_IN:
    register_method(_method)
