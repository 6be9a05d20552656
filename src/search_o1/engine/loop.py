"""THE loop for one question's chain: generate a turn, answer what it asked for, go on
until a turn asks for nothing or a limit ends the chain.

How a turn is generated and how it asks for a search is the `TurnDriver`'s business:
query markers written in the text (`marker_turns`) or function-tool calls
(`tool_turns`). The loop owns the limits (turns, tokens, the context window), the
trace's steps and every way the chain ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from search_o1.engine.finish import finish, finish_generation, next_call_tokens
from search_o1.engine.options import ChainLimits
from search_o1.engine.state import ChainState
from search_o1.llm.base import LLM
from search_o1.types import Completion, FinishReason, SearchRecord, Step

__all__ = ["Turn", "TurnDriver", "run_chain"]


@dataclass(frozen=True)
class Turn:
    """One generation turn: the model's text as it goes into the chain, the call's
    completion, and the records of what the turn asked for (none: the chain is done)."""

    text: str
    completion: Completion
    records: tuple[SearchRecord, ...] = ()

    def steps(self, index: int) -> list[Step]:
        """The trace's steps for this turn: one per record, the text on the first."""
        if not self.records:
            return [Step(index, self.text, self.completion)]
        return [
            Step(index, self.text if i == 0 else "", self.completion, record)
            for i, record in enumerate(self.records)
        ]


class TurnDriver(Protocol):
    """How a chain's turns are generated and how they ask for searches."""

    async def open(self, state: ChainState) -> bool:
        """Before the first turn (a forced query, the first message); False when that
        already finished the chain."""
        ...

    async def turn(self, state: ChainState, index: int, max_tokens: int) -> Turn:
        """Generate turn `index` (at most `max_tokens` new tokens), append it to the
        chain and answer what it asked for."""
        ...


async def run_chain(
    state: ChainState, driver: TurnDriver, *, limits: ChainLimits, llm: LLM
) -> None:
    """Run `state`'s chain to its end; the trace records how it ended.

    `llm` is asked for its context window, which bounds every call with the chain so far.
    """
    if not await driver.open(state):
        return
    for index in range(len(state.trace.steps), limits.max_turns):
        max_tokens = await next_call_tokens(state, limits, llm)
        if max_tokens is None:
            return
        turn = await driver.turn(state, index, max_tokens)
        state.trace.steps.extend(turn.steps(index))
        if not turn.records:
            finish_generation(state, turn.completion)
            return
    finish(state, FinishReason.MAX_TURNS)
