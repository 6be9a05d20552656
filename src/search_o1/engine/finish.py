"""How a chain ends: the tokens the next call may generate (or none left), and the
finish reason and answer every exit records.
"""

from __future__ import annotations

from search_o1.answer import extract_answer
from search_o1.engine.options import ChainLimits
from search_o1.engine.state import ChainState
from search_o1.llm.base import LLM
from search_o1.types import Completion, FinishReason

__all__ = ["finish", "finish_generation", "next_call_tokens"]


async def next_call_tokens(state: ChainState, limits: ChainLimits, llm: LLM) -> int | None:
    """Tokens the next call may generate; None (and the chain finished) if none."""
    budget = limits.call_budget(state.trace.usage.completion_tokens)
    if budget <= 0:
        finish(state, FinishReason.MAX_TOKENS)
        return None
    # The model caches its own window; a configured one may only make it smaller.
    context = await llm.context_length()
    if limits.context_length is not None:
        context = min(context or limits.context_length, limits.context_length)
    state.capped_by_context = False
    if context is None:
        return budget
    room = context - state.tokens_estimate()
    if room <= 0:
        finish(state, FinishReason.CONTEXT_OVERFLOW, error=_overflow_before_start(state, context))
        return None
    state.capped_by_context = room < budget
    return min(budget, room)


def _overflow_before_start(state: ChainState, context: int) -> str | None:
    """Before any generation the question itself is too long: say by how much."""
    if state.trace.usage.completion_tokens:
        return None
    used = f"about {state.tokens_estimate()} tokens"
    return f"the prompt is {used}, over the model's context window of {context}"


def finish_generation(state: ChainState, completion: Completion) -> None:
    """End the chain after a generation that asked for nothing more."""
    if completion.finish != "length":
        reason = FinishReason.ANSWERED
    elif state.capped_by_context:
        reason = FinishReason.CONTEXT_OVERFLOW  # cut by the window, not by the budget
    else:
        reason = FinishReason.MAX_TOKENS
    finish(state, reason)


def finish(state: ChainState, reason: FinishReason, *, error: str | None = None) -> None:
    """Record the answer and why the chain ended (an answered chain without one has
    `NO_ANSWER`)."""
    trace = state.trace
    # Only the model's own words count: a retrieved page with a \boxed{} in it must not
    # become the answer.
    trace.answer = extract_answer("".join(st.text for st in trace.steps), state.task)
    if reason is FinishReason.ANSWERED and trace.answer is None:
        reason = FinishReason.NO_ANSWER
    trace.finish_reason = reason
    trace.error = error
