"""The engine: one question's chain, run by one loop.

    engine.py        `Engine`: wires model, search, reader; picks a turn driver; runs
    loop.py          THE loop: turn -> answer what it asked for -> next turn, to the end
    marker_turns.py  turns that ask for searches with query markers in the text
    tool_turns.py    turns that ask with function-tool calls (`--api-mode tools`)
    answering.py     one query: refusals, search, reading, Reason-in-Documents
    pages.py         rag-agent's page requests
    finish.py        the token budget of the next call, and how a chain ends
    state.py         `ChainState`: everything one run owns; the scheduler's `PhaseGate`
    options.py       `EngineOptions` and its parts: what the engine reads
    methods.py       the methods as data (`Method`), and their registry

Nothing here reads the user's settings: `pipeline.engine_options` maps them onto
`EngineOptions`.
"""

from search_o1.engine.answering import Mode, QueryAnswerer
from search_o1.engine.engine import Engine
from search_o1.engine.loop import Turn, TurnDriver, run_chain
from search_o1.engine.marker_turns import FORCED_QUERY_TOKENS, MarkerTurns
from search_o1.engine.methods import (
    METHODS,
    PLUGIN_GROUP,
    Method,
    Opening,
    get_method,
    has_tools_mode,
    method_names,
    register_method,
)
from search_o1.engine.options import (
    NO_LIMIT_TOKENS,
    ChainLimits,
    EngineOptions,
    ReaderOptions,
    SearchOptions,
)
from search_o1.engine.state import ChainState, Phase, PhaseGate
from search_o1.engine.tool_turns import ToolTurns, tool_llm

__all__ = [
    "FORCED_QUERY_TOKENS",
    "METHODS",
    "NO_LIMIT_TOKENS",
    "PLUGIN_GROUP",
    "ChainLimits",
    "ChainState",
    "Engine",
    "EngineOptions",
    "MarkerTurns",
    "Method",
    "Mode",
    "Opening",
    "Phase",
    "PhaseGate",
    "QueryAnswerer",
    "ReaderOptions",
    "SearchOptions",
    "ToolTurns",
    "Turn",
    "TurnDriver",
    "get_method",
    "has_tools_mode",
    "method_names",
    "register_method",
    "run_chain",
    "tool_llm",
]
