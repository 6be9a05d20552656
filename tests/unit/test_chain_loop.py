"""The one chain loop with a driver of its own: the loop owns the limits, the steps and
every way a chain ends; the driver only says what a turn wrote and asked for."""

from __future__ import annotations

from search_o1.engine import ChainLimits, ChainState, Turn, get_method, run_chain
from search_o1.llm.scripted import ScriptedLLM
from search_o1.types import Completion, FinishReason, Prompt, SearchRecord, Trace


class Countdown:
    """A driver whose turns each ask one question until `asks` run out, then answer."""

    def __init__(self, asks: int, *, opens: bool = True) -> None:
        self.asks = asks
        self.opens = opens
        self.budgets: list[int] = []

    async def open(self, state: ChainState) -> bool:
        return self.opens

    async def turn(self, state: ChainState, index: int, max_tokens: int) -> Turn:
        self.budgets.append(max_tokens)
        state.count_usage(0, 10)  # ten new tokens a turn
        if self.asks:
            self.asks -= 1
            text = f"turn {index} asks"
            return Turn(text, Completion(text, "stop"), (SearchRecord(f"q{index}", "searched"),))
        text = r"so \boxed{42}"
        return Turn(text, Completion(text, "stop"))


def chain() -> ChainState:
    return ChainState(Trace("q?", "search-o1"), Prompt(()), "qa", get_method("search-o1"))


async def test_turns_until_one_asks_for_nothing() -> None:
    state, driver = chain(), Countdown(2)
    await run_chain(state, driver, limits=ChainLimits(), llm=ScriptedLLM([]))
    assert [s.index for s in state.trace.steps] == [0, 1, 2]
    assert [s.search and s.search.query for s in state.trace.steps] == ["q0", "q1", None]
    assert state.trace.finish_reason is FinishReason.ANSWERED
    assert state.trace.answer == "42"


async def test_the_loop_ends_a_chain_at_the_turn_limit() -> None:
    state = chain()
    await run_chain(state, Countdown(9), limits=ChainLimits(max_turns=3), llm=ScriptedLLM([]))
    assert len(state.trace.steps) == 3
    assert state.trace.finish_reason is FinishReason.MAX_TURNS


async def test_the_loop_gives_each_turn_what_the_budget_leaves() -> None:
    state, driver = chain(), Countdown(9)
    await run_chain(state, driver, limits=ChainLimits(max_total_tokens=25), llm=ScriptedLLM([]))
    assert driver.budgets == [25, 15, 5]
    assert state.trace.finish_reason is FinishReason.MAX_TOKENS


async def test_a_driver_that_finishes_while_opening_runs_no_turn() -> None:
    state, driver = chain(), Countdown(1, opens=False)
    await run_chain(state, driver, limits=ChainLimits(), llm=ScriptedLLM([]))
    assert driver.budgets == []
    assert state.trace.steps == []
