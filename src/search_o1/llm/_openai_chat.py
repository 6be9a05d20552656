"""Chat mode on one server: how a chain is continued there, and the fallbacks between chat
and raw completions.

Apart from openai.py because these are decisions about the server (which endpoint, which
continuation, what to try when one is refused); openai.py sends whatever they decide. The
rules per server kind themselves are pure functions in `_reasoning`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from search_o1.errors import BackendError, ConfigError
from search_o1.llm import _openai_errors as errors
from search_o1.llm import _openai_wire as wire
from search_o1.llm import _reasoning as rsn
from search_o1.llm.base import CompletionRequest
from search_o1.types import Completion, TextSink

if TYPE_CHECKING:
    from search_o1.llm.openai import OpenAILLM

log = logging.getLogger(__name__)


def wire_mode(
    api_mode: Literal["completions", "chat", "tools"], continuation: rsn.Continuation | None
) -> Literal["completions", "chat"]:
    """The endpoint text calls use: tools mode's text calls (the reader) go to chat too."""
    if continuation == "raw":
        return "completions"
    return "chat" if api_mode == "tools" else api_mode


async def complete(
    llm: OpenAILLM, request: CompletionRequest, on_text: TextSink | None
) -> Completion:
    """One completion, moving to the endpoint the server has when it refuses the one tried."""
    try:
        return await llm._complete(request, on_text)
    except errors.NoEndpoint:
        if llm.api_mode != "completions":
            raise
        # Chat-only servers (many hosted APIs and thin wrappers) have no raw
        # completions: continue the chain as a final assistant message instead.
        llm.api_mode = "chat"
        llm._chat_forced = True
        completion = await llm._complete(request, on_text)
        # Said once it worked: for a server with neither, the error alone is the line.
        log.warning("%s has no /completions; using /chat/completions", llm.base_url)
        return completion
    except BackendError as e:
        if not _continuation_refused(llm, request, e):
            raise
        return await _complete_raw_instead(llm, request, on_text, e)


def _continuation_refused(llm: OpenAILLM, request: CompletionRequest, error: BackendError) -> bool:
    return (
        llm.api_mode == "chat"
        and bool(request.prompt.continuation)
        and rsn.rejects_continuation(error.status or 0, str(error))
    )


async def _complete_raw_instead(
    llm: OpenAILLM, request: CompletionRequest, on_text: TextSink | None, error: BackendError
) -> Completion:
    """The server will not continue a chat message: raw completions, if it has them."""
    cannot = f"{llm.base_url} cannot continue a chain after a search over chat ({error})"
    if llm._chat_forced:
        raise BackendError(errors.BACKEND, f"{cannot}, and has no raw completions: use a "
                           "server that can, or --api-mode tools")  # fmt: skip
    log.warning("%s; continuing with raw /completions", cannot)
    llm.api_mode = "completions"
    try:
        return await llm._complete(request, on_text)
    except errors.NoEndpoint:
        llm.api_mode, llm._chat_forced = "chat", True
        raise BackendError(errors.BACKEND, f"{cannot}, and has no raw completions: use a "
                           "server that can, or --api-mode tools") from None  # fmt: skip


async def target(
    llm: OpenAILLM, request: CompletionRequest, plan: rsn.ChatPlan | None
) -> tuple[str, str | list[dict[str, Any]]]:
    """(URL, prompt or messages) of a request: the chat plan's, else raw completions."""
    if plan is not None:
        return plan.url, plan.messages
    prompt = request.prompt
    rendered = await llm.render(prompt.messages)
    if llm.api_mode == "chat":  # a chat chain this server continues raw
        return llm.base_url + "/completions", rsn.join_prompt(rendered, prompt.continuation)
    return llm.base_url + "/completions", rendered + prompt.continuation


def chat_plan(
    llm: OpenAILLM, info: wire.ServerInfo, request: CompletionRequest
) -> rsn.ChatPlan | None:
    """How this server continues a chain over chat, from what it is (see _reasoning);
    None: by raw completions."""
    prompt = request.prompt
    how = llm._continuation or rsn.chat_continuation(info.kind, prompt.continuation)
    if how == "raw" and prompt.continuation:
        return None
    if how is None and prompt.continuation:
        raise ConfigError(
            f"{llm.base_url} ({info.kind}) cannot continue a partial answer, so a chain "
            "cannot resume after a search; use --api-mode tools"
        )
    messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
    return rsn.chat_plan(llm.base_url, info.kind, how or "prefill", messages, prompt.continuation)
