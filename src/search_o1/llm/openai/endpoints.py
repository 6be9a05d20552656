"""Which endpoint a text call goes to on one server, how a chain is continued there, and
the fallbacks between chat and raw completions.

Apart from the client because these are decisions about the server (which endpoint,
which continuation, what to try when one is refused), learned once per client; the client
sends whatever they decide. The rules per server kind are pure functions in
`continuation`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from search_o1.errors import BackendError, ConfigError
from search_o1.llm.base import CompletionRequest
from search_o1.llm.openai import continuation as cont
from search_o1.llm.openai import errors, wire
from search_o1.llm.reasoning import join_prompt
from search_o1.types import Completion, Message, TextSink

log = logging.getLogger(__name__)

WireMode = Literal["completions", "chat"]
# One request as the client sends it, on whichever endpoint the route says now.
Send = Callable[[CompletionRequest, TextSink | None], Awaitable[Completion]]
Render = Callable[[tuple[Message, ...]], Awaitable[str]]


def wire_mode(
    api_mode: Literal["completions", "chat", "tools"], continuation: cont.Continuation | None
) -> WireMode:
    """The endpoint text calls use: tools mode's text calls (the reader) go to chat too."""
    if continuation == "raw":
        return "completions"
    return "chat" if api_mode == "tools" else api_mode


class Route:
    """Where this client's text calls go, moved by what the server refuses.

    `mode`: "completions" (raw prompt) or "chat". A server without `/completions` moves
    the client to chat for good (`chat_forced`); a chat server that will not continue a
    chain moves it to raw completions, when it has them.
    """

    def __init__(
        self,
        base_url: str,
        api_mode: Literal["completions", "chat", "tools"],
        continuation: cont.Continuation | None,
    ) -> None:
        self._base_url = base_url
        self._mode = wire_mode(api_mode, continuation)
        self._chat_forced = False  # chat because the server has no /completions
        self._continuation = continuation  # None: chosen by what the server is
        self._raw_because: str | None = None  # why chains continue raw in chat mode

    @property
    def mode(self) -> WireMode:
        return self._mode

    def continue_raw(self, because: str) -> None:
        """Continue chains by raw completions from now on (`because`: why chat cannot)."""
        if self._continuation is None:
            log.warning("%s; continuing chains with raw /completions", because)
            self._continuation, self._raw_because = "raw", because

    async def complete(
        self, request: CompletionRequest, on_text: TextSink | None, send: Send
    ) -> Completion:
        """One completion by `send`, moving to the endpoint the server has when it
        refuses the one tried."""
        try:
            return await send(request, on_text)
        except errors.NoEndpoint:
            if self._raw_because is not None:
                raise BackendError(
                    errors.BACKEND,
                    f"{self._raw_because}, and it has no raw /completions to continue "
                    "chains with instead: use a server that has them, or --api-mode tools",
                ) from None
            if self._mode != "completions":
                raise
            # Chat-only servers (many hosted APIs and thin wrappers) have no raw
            # completions: continue the chain as a final assistant message instead.
            self._mode, self._chat_forced = "chat", True
            completion = await send(request, on_text)
            # Said once it worked: for a server with neither, the error alone is the line.
            log.warning("%s has no /completions; using /chat/completions", self._base_url)
            return completion
        except BackendError as e:
            if not self._continuation_refused(request, e):
                raise
            return await self._raw_instead(request, on_text, send, e)

    def _continuation_refused(self, request: CompletionRequest, error: BackendError) -> bool:
        return (
            self._mode == "chat"
            and bool(request.prompt.continuation)
            and cont.rejects_continuation(error.status or 0, str(error))
        )

    async def _raw_instead(
        self, request: CompletionRequest, on_text: TextSink | None, send: Send, error: BackendError
    ) -> Completion:
        """The server will not continue a chat message: raw completions, if it has them."""
        cannot = f"{self._base_url} cannot continue a chain after a search over chat ({error})"
        no_raw = f"{cannot}, and has no raw completions: use a server that can, or --api-mode tools"
        if self._chat_forced:
            raise BackendError(errors.BACKEND, no_raw)
        log.warning("%s; continuing with raw /completions", cannot)
        self._mode = "completions"
        try:
            return await send(request, on_text)
        except errors.NoEndpoint:
            self._mode, self._chat_forced = "chat", True
            raise BackendError(errors.BACKEND, no_raw) from None

    def plan(
        self, info: wire.ServerInfo, request: CompletionRequest, opens_think: bool = True
    ) -> cont.ChatPlan | None:
        """How this server continues a chain over chat, from what it is (see
        `continuation`); None: by raw completions (or not in chat mode at all).
        `opens_think`: whether the model's generation prompt opens `<think>`."""
        if self._mode != "chat":
            return None
        prompt = request.prompt
        how = self._continuation or cont.chat_continuation(info.kind, prompt.continuation)
        if how == "raw" and prompt.continuation:
            return None
        if how is None and prompt.continuation:
            raise ConfigError(
                f"{self._base_url} ({info.kind}) cannot continue a partial answer, so a "
                "chain cannot resume after a search; use --api-mode tools"
            )
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        chain = prompt.continuation
        how = how or "prefill"
        return cont.chat_plan(self._base_url, info.kind, how, messages, chain, opens_think)

    async def target(
        self, request: CompletionRequest, plan: cont.ChatPlan | None, render: Render
    ) -> tuple[str, str | list[dict[str, Any]]]:
        """(URL, prompt or messages) of a request: the chat plan's, else raw completions."""
        if plan is not None:
            return plan.url, plan.messages
        prompt = request.prompt
        rendered = await render(prompt.messages)
        # join_prompt: a chain begun over chat opens with its own `<think>`, which a
        # template that opened the thinking already wrote (it is the same text otherwise).
        return self._base_url + "/completions", join_prompt(rendered, prompt.continuation)
