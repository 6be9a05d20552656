"""A scripted model for tests (ours and users'): queued replies or a function of the prompt.

It honours stop strings the way a real server does, so the engine is exercised on the
same shapes: a reply that contains a stop string is cut there.

    ScriptedLLM(chain=[...], reader=[...])  # the chain's turns; Reason-in-Documents' replies
    ScriptedLLM([...])                      # one script for every call, in call order
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from search_o1.errors import ConfigError
from search_o1.llm.base import CompletionRequest, normalise_stop
from search_o1.tokens import CHARS_PER_TOKEN, estimate_tokens
from search_o1.types import Completion, Prompt, TextSink

Responder = Callable[[Prompt], str]
Script = Iterable[str] | Responder


class ScriptedLLM:
    """Replies from scripts: queues of strings, or functions of the prompt.

    `chain` answers the chain's calls and `reader` the Reason-in-Documents calls (a
    request's `role`), so a script says which reply is whose; a reader call with no
    `reader` script is an error, not a silent empty reply. `replies` alone is one
    script for every call, in the order the calls come. A queue that runs out answers
    "" (a model with nothing more to say stops at once).

    `return_stop=True` keeps the stop string in the raw reply (like vLLM with
    include_stop_str_in_output); False drops it (like llama.cpp). Either way the
    Completion comes out normalised. `context` sets a context window; prompt tokens are
    estimated from characters (`search_o1.tokens`). Every request is kept in `requests`
    (its prompt also in `prompts`), so a test can read the limits and sampling it was sent.
    """

    name = "scripted"

    def __init__(
        self,
        replies: Script | None = None,
        *,
        chain: Script | None = None,
        reader: Script | None = None,
        return_stop: bool = True,
        context: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        if replies is not None and (chain is not None or reader is not None):
            raise ConfigError("ScriptedLLM takes replies, or chain= and reader=, not both")
        shared = _Script(replies if replies is not None else chain or ())
        self._scripts: dict[str, _Script | None] = {
            "main": shared,
            "reader": shared if replies is not None else _optional(reader),
        }
        self.return_stop = return_stop
        self._context = context
        self.delay_s = delay_s
        self.prompts: list[Prompt] = []
        self.requests: list[CompletionRequest] = []

    @staticmethod
    def count_tokens(text: str) -> int:
        return estimate_tokens(text)

    def _next_reply(self, request: CompletionRequest) -> str:
        script = self._scripts[request.role]
        if script is None:
            raise ConfigError(
                "ScriptedLLM got a Reason-in-Documents call but has no reader script: "
                "pass reader=[...] (or reader_llm=, or turn the reader off)"
            )
        return script.next(request.prompt)

    async def complete(
        self, request: CompletionRequest, *, on_text: TextSink | None = None
    ) -> Completion:
        prompt, stop, max_tokens = request.prompt, request.stop, request.max_tokens
        self.prompts.append(prompt)
        self.requests.append(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        reply = self._next_reply(request)
        finish = "length"
        cut = len(reply)
        for s in stop:
            i = reply.find(s)
            if 0 <= i < cut:
                cut, finish = i, "stop"
        raw = reply[:cut]
        matched = next((s for s in stop if reply.startswith(s, cut)), None)
        if matched and self.return_stop:
            raw += matched
        elif finish == "length":
            finish = "stop"  # the reply ended by itself: an end-of-sequence
        # max_tokens is counted in estimated tokens, like count_tokens.
        if len(raw) > max_tokens * CHARS_PER_TOKEN:
            raw, finish = raw[: max_tokens * CHARS_PER_TOKEN], "length"
        text, hit = normalise_stop(raw, finish, stop, server_stop=matched)
        if on_text and text:
            on_text(text)
        return Completion(
            text=text,
            finish="stop" if finish == "stop" else "length",
            stop=hit,
            prompt_tokens=self.count_tokens(_flat(prompt)),
            completion_tokens=self.count_tokens(text) if text else 0,
        )

    async def context_length(self) -> int | None:
        return self._context

    async def aclose(self) -> None:
        return None


def _flat(prompt: Prompt) -> str:
    return "".join(m.content for m in prompt.messages) + prompt.continuation


class _Script:
    """One script: a queue of replies, or a function of the prompt."""

    def __init__(self, script: Script) -> None:
        self._respond: Responder | None = script if callable(script) else None
        self._queue: list[str] = [] if callable(script) else list(script)

    def next(self, prompt: Prompt) -> str:
        if self._respond is not None:
            return self._respond(prompt)
        return self._queue.pop(0) if self._queue else ""


def _optional(script: Script | None) -> _Script | None:
    return None if script is None else _Script(script)
